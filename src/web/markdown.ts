/**
 * A small, safe Markdown renderer for transcripts: every character of the input is
 * HTML-escaped first, then a few constructs become tags (fenced code, inline code,
 * headings, lists, bold, italics, links with http(s) targets only). No raw HTML passes,
 * so a model's or a user's text can never inject markup or script into the dashboard.
 */

/** The HTML of `markdown`, safe to insert as it is. */
export function renderMarkdown(markdown: string): string {
  const html: string[] = [];
  const lines = markdown.replace(/\r\n?/g, "\n").split("\n");
  let index = 0;
  while (index < lines.length) {
    const line = lines[index] ?? "";
    const fence = line.match(/^\s*```/);
    if (fence) {
      const code: string[] = [];
      index += 1;
      while (index < lines.length && !/^\s*```/.test(lines[index] ?? "")) {
        code.push(lines[index] ?? "");
        index += 1;
      }
      index += 1;
      html.push(`<pre><code>${escapeHtml(code.join("\n"))}</code></pre>`);
    } else if (/^\s*([-*+]|\d+[.)])\s+/.test(line)) {
      const ordered = /^\s*\d/.test(line);
      const items: string[] = [];
      while (index < lines.length && /^\s*([-*+]|\d+[.)])\s+/.test(lines[index] ?? "")) {
        items.push(
          `<li>${inline((lines[index] ?? "").replace(/^\s*([-*+]|\d+[.)])\s+/, ""))}</li>`,
        );
        index += 1;
      }
      const tag = ordered ? "ol" : "ul";
      html.push(`<${tag}>${items.join("")}</${tag}>`);
    } else if (/^#{1,6}\s/.test(line)) {
      const level = Math.min((line.match(/^#+/)?.[0].length ?? 1) + 2, 6);
      html.push(`<h${level}>${inline(line.replace(/^#+\s*/, ""))}</h${level}>`);
      index += 1;
    } else if (line.trim() === "") {
      index += 1;
    } else {
      const paragraph: string[] = [];
      while (index < lines.length && isParagraphLine(lines[index] ?? "")) {
        paragraph.push(inline(lines[index] ?? ""));
        index += 1;
      }
      html.push(`<p>${paragraph.join("<br>")}</p>`);
    }
  }
  return html.join("\n");
}

function isParagraphLine(line: string): boolean {
  return (
    line.trim() !== "" &&
    !/^\s*```/.test(line) &&
    !/^#{1,6}\s/.test(line) &&
    !/^\s*([-*+]|\d+[.)])\s+/.test(line)
  );
}

/** Inline code, links, bold and italics of one escaped line. */
function inline(text: string): string {
  const parts = text.split(/(`[^`]+`)/);
  return parts
    .map((part) =>
      part.startsWith("`") && part.endsWith("`") && part.length > 1
        ? `<code>${escapeHtml(part.slice(1, -1))}</code>`
        : emphasis(escapeHtml(part)),
    )
    .join("");
}

function emphasis(escaped: string): string {
  return escaped
    .replace(
      /\[([^\]]+)\]\((https?:\/\/[^\s)]+)\)/g,
      (_, label: string, url: string) => `<a href="${url}" rel="noopener noreferrer">${label}</a>`,
    )
    .replace(/\*\*([^*]+)\*\*/g, "<strong>$1</strong>")
    .replace(/(^|[^*\w])\*([^*\s][^*]*)\*(?!\w)/g, "$1<em>$2</em>")
    .replace(/(^|[^_\w])_([^_\s][^_]*)_(?!\w)/g, "$1<em>$2</em>");
}

/** `text` with `& < > " '` as entities. */
export function escapeHtml(text: string): string {
  return text
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&#39;");
}
