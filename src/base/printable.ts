/**
 * Text from outside (a chat platform, a model, a web page) made safe for a terminal: a
 * Telegram display name must not clear the owner's screen, retitle the window or forge
 * extra lines in `picklebot pairing list`.
 */

/** Options of {@link printable}. */
export interface PrintableOptions {
  /**
   * Keep line feeds and tabs (a reply's body, a stack trace); otherwise they are escaped
   * too, so the text stays on its one line (a table cell, a field). (Default: false)
   */
  multiline?: boolean;
}

/**
 * C0 controls, DEL, C1 controls, and the Unicode bidirectional overrides and isolates
 * (which reorder what the terminal shows).
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const CONTROLS = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

const SHORT: Record<string, string> = { "\n": "\\n", "\r": "\\r", "\t": "\\t" };

/**
 * `text` with every control character shown as an escape (`\x1b`, `\n`, `\u{202e}`)
 * instead of acted on by the terminal. Printable text, emoji and accents stay as they are.
 */
export function printable(text: string, options: PrintableOptions = {}): string {
  return text.replace(CONTROLS, (char) => {
    if (options.multiline && (char === "\n" || char === "\t")) return char;
    const short = SHORT[char];
    if (short) return short;
    const code = char.charCodeAt(0);
    return code < 0x100 ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u{${code.toString(16)}}`;
  });
}

/**
 * The first character of `text` that {@link printable} would escape, shown as its escape
 * (`\x1b`), or null when there is none.
 */
export function controlCharacterIn(text: string, options: PrintableOptions = {}): string | null {
  for (const [char] of text.matchAll(CONTROLS)) {
    const shown = printable(char, options);
    if (shown !== char) return shown;
  }
  return null;
}

/**
 * Every string inside `value` (a log record) made {@link printable}; the keys named in
 * `multilineKeys` (e.g. `stack`) keep their line feeds.
 */
export function printableDeep(
  value: unknown,
  multilineKeys: ReadonlySet<string>,
  key = "",
): unknown {
  if (typeof value === "string") return printable(value, { multiline: multilineKeys.has(key) });
  if (Array.isArray(value)) return value.map((item) => printableDeep(item, multilineKeys, key));
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(
    Object.entries(value).map(([name, inner]) => [
      printable(name),
      printableDeep(inner, multilineKeys, name),
    ]),
  );
}

/** `text` cut to `max` characters, the last one an ellipsis when cut. */
export function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}
