/**
 * Markdown as models write it (CommonMark-ish) → Telegram MarkdownV2.
 *
 * Recognised: fenced code blocks, `inline code`, **bold**, __bold__, *italic*, _italic_,
 * ~~strike~~, [links](url) and `#` headings (shown bold). Everything else, including a
 * marker without its closing partner (a reply still streaming), is escaped and shown as
 * typed, so the output always parses; the lengths Telegram counts are never longer than
 * the input's.
 */

/** Characters MarkdownV2 reserves outside code. */
const RESERVED = /[_*[\]()~`>#+\-=|{}.!\\]/g;

/** Escapes text so Telegram shows it literally. */
export function escapeMarkdownV2(text: string): string {
  return text.replace(RESERVED, (char) => `\\${char}`);
}

/** Inside `code` and ```pre```, only ` and \ are escaped. */
function escapeCode(text: string): string {
  return text.replace(/[`\\]/g, (char) => `\\${char}`);
}

/** Inside the (url) of a link, only ) and \ are escaped. */
function escapeUrl(url: string): string {
  return url.replace(/[)\\]/g, (char) => `\\${char}`);
}

/** Converts a Markdown text to MarkdownV2 that Telegram accepts. */
export function toTelegramMarkdownV2(markdown: string): string {
  const parts: string[] = [];
  const fence = /^```([\w+#-]*)[^\n]*\n([\s\S]*?)^```[ \t]*$/gm;
  let last = 0;
  for (const match of markdown.matchAll(fence)) {
    parts.push(convertProse(markdown.slice(last, match.index)));
    const language = match[1] ? match[1] : "";
    const body = (match[2] ?? "").replace(/\n$/, "");
    parts.push(`\`\`\`${language}\n${escapeCode(body)}\n\`\`\``);
    last = match.index + match[0].length;
  }
  parts.push(convertProse(markdown.slice(last)));
  return parts.join("");
}

/** Prose between code blocks, line by line (headings are per line). */
function convertProse(text: string): string {
  return text
    .split("\n")
    .map((line) => {
      const heading = /^#{1,6}\s+(.+)$/.exec(line);
      return heading ? `*${convertInline(heading[1] ?? "", false)}*` : convertInline(line, true);
    })
    .join("\n");
}

/** One inline span: the Markdown pattern and how to write it in MarkdownV2. */
interface InlineRule {
  pattern: RegExp;
  render(match: RegExpExecArray, allowBold: boolean): string;
}

const INLINE_RULES: InlineRule[] = [
  { pattern: /^`([^`\n]+)`/, render: (m) => `\`${escapeCode(m[1] ?? "")}\`` },
  {
    pattern: /^\[([^\]\n]+)\]\((https?:\/\/[^)\s]+)\)/,
    render: (m) => `[${escapeMarkdownV2(m[1] ?? "")}](${escapeUrl(m[2] ?? "")})`,
  },
  {
    pattern: /^(\*\*|__)(?=\S)([^\n]*?\S)\1/,
    render: (m, allowBold) =>
      allowBold ? `*${convertInline(m[2] ?? "", false)}*` : convertInline(m[2] ?? "", false),
  },
  { pattern: /^~~(?=\S)([^\n]*?\S)~~/, render: (m) => `~${escapeMarkdownV2(m[1] ?? "")}~` },
  {
    pattern: /^([*_])(?=\S)([^*_\n]*?\S)\1(?![\w*])/,
    render: (m) => `_${escapeMarkdownV2(m[2] ?? "")}_`,
  },
];

/** Converts inline Markdown; `allowBold` is false inside bold (entities cannot nest here). */
function convertInline(text: string, allowBold: boolean): string {
  let out = "";
  let i = 0;
  while (i < text.length) {
    const rest = text.slice(i);
    const previous = text[i - 1] ?? " ";
    let converted = false;
    for (const rule of INLINE_RULES) {
      // `_` inside a word (snake_case) is not emphasis.
      if (rest.startsWith("_") && /\w/.test(previous)) break;
      const match = rule.pattern.exec(rest);
      if (!match) continue;
      out += rule.render(match, allowBold);
      i += match[0].length;
      converted = true;
      break;
    }
    if (!converted) {
      out += escapeMarkdownV2(text[i] ?? "");
      i += 1;
    }
  }
  return out;
}
