/**
 * Text for Slack: Markdown (as the models write it) to Slack's mrkdwn, and the escaping
 * every Slack text needs. Slack never refuses a message for its formatting (a stray `*`
 * shows as is), so there is no rejection to fall back from: `plain` text is sent escaped
 * with `mrkdwn: false`, `markdown` converted and sent with `mrkdwn: true`.
 *
 *   **bold** / __bold__ ─► *bold*      *italic* ─► _italic_      ~~struck~~ ─► ~struck~
 *   [label](https://x)  ─► <https://x|label>       # Heading ─► *Heading*
 *   - item / * item     ─► • item       `code` and ``` fences are kept, unconverted
 */

/** `&`, `<` and `>` as Slack's text needs them (it reads `<…>` as a link or mention). */
export function escapeSlackText(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

/** Slack's escaping undone, for text that arrives from Slack. */
export function unescapeSlackText(text: string): string {
  return text.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");
}

/** Markdown as Slack mrkdwn, escaped. */
export function toSlackMrkdwn(markdown: string): string {
  const parts = escapeSlackText(markdown).split(/(```[\s\S]*?```)/);
  return parts.map((part, index) => (index % 2 === 1 ? part : convertProse(part))).join("");
}

/** Converts text outside code fences, line by line, leaving inline code alone. */
function convertProse(text: string): string {
  return text
    .split("\n")
    .map((line) => {
      const heading = /^#{1,6}\s+(.*)$/.exec(line);
      if (heading) return `*${convertInline(heading[1] ?? "").replace(/\*/g, "")}*`;
      const bullet = /^(\s*)[-*+]\s+(.*)$/.exec(line);
      if (bullet) return `${bullet[1]}• ${convertInline(bullet[2] ?? "")}`;
      return convertInline(line);
    })
    .join("\n");
}

/** Stands for a bold mark while single `*` become italics. */
const BOLD = "\u0000";

/** Bold, italics, strikes and links of one line, outside its `code` spans. */
function convertInline(line: string): string {
  const parts = line.split(/(`[^`]*`)/);
  return parts
    .map((part, index) => {
      if (index % 2 === 1) return part;
      return part
        .replace(/\*\*(.+?)\*\*|__(.+?)__/g, (_, a, b) => `${BOLD}${a ?? b}${BOLD}`)
        .replace(/(^|[^\w*])\*(?!\s)([^*]+?)(?<!\s)\*(?![\w*])/g, "$1_$2_")
        .replace(/~~(.+?)~~/g, "~$1~")
        .replace(/\[([^\]]+)\]\((https?:\/\/[^\s)]+)\)/g, "<$2|$1>")
        .replaceAll(BOLD, "*");
    })
    .join("");
}
