/**
 * Splitting a reply into messages a platform accepts (Telegram 4096, Discord 2000).
 *
 * A cut goes, in order of preference, at a paragraph break, at a line break, then at a
 * space, never in the first half of a message when a later boundary exists. A cut that
 * cannot avoid a code block closes the block and reopens it (with its language) in the
 * next message, so both halves still render as code. The cut of a text longer than the
 * limit depends only on its first `limit` characters, so a reply that grows while it
 * streams keeps its earlier messages unchanged.
 *
 * Lengths are UTF-16 code units (JavaScript's `length`): what Telegram counts, and never
 * less than the characters Discord counts. A hard cut (no separator in reach) goes between
 * grapheme clusters, so an emoji family, a flag or a letter with its accent stays whole
 * when it fits in a message; a cluster longer than a message is cut between code points,
 * never inside a surrogate pair (Telegram refuses a lone surrogate as not UTF-8).
 */

const CLOSING_FENCE = "\n```";

/** Splits `text` into parts of at most `maxLength` UTF-16 code units. */
export function splitMessage(text: string, maxLength: number): string[] {
  const parts: string[] = [];
  let rest = text;
  while (rest.length > maxLength) {
    const cut = chooseCut(rest, maxLength - CLOSING_FENCE.length);
    const fence = openFenceAt(rest, cut);
    const head = rest.slice(0, cut).trimEnd();
    parts.push(fence === null ? head : `${head}${CLOSING_FENCE}`);
    // Drop the separator (a line break or a space), keep any indentation after it.
    const tail = rest.slice(cut).replace(/^[ \t]*\n+|^ /, "");
    rest = fence === null ? tail : `${fence}\n${tail}`;
  }
  if (rest.trim().length > 0 || parts.length === 0) parts.push(rest);
  return parts;
}

/** Where to cut `text` so that the first part has at most `limit` characters. */
function chooseCut(text: string, limit: number): number {
  const window = text.slice(0, limit + 1);
  const half = Math.floor(limit / 2);
  const outsideCode = (at: number) => openFenceAt(text, at) === null;
  const candidates: Array<() => number> = [
    () => lastBoundary(window, "\n\n", half, outsideCode),
    () => lastBoundary(window, "\n", half, outsideCode),
    () => lastBoundary(window, "\n", half, () => true),
    () => lastBoundary(window, " ", half, () => true),
  ];
  for (const candidate of candidates) {
    const at = candidate();
    if (at > 0) return at;
  }
  return hardCut(text, limit);
}

/** Built on the first cut inside a word: it loads ICU's break rules (idle memory). */
let graphemes: Intl.Segmenter | undefined;

/**
 * The last grapheme boundary of `text` in (0, `limit`], else the last code point boundary.
 * Whether `limit` is a boundary depends on the code point after it (two units at most).
 */
function hardCut(text: string, limit: number): number {
  const window = text.slice(0, limit + 2);
  let cut = 0;
  graphemes ??= new Intl.Segmenter(undefined, { granularity: "grapheme" });
  for (const { index } of graphemes.segment(window)) {
    if (index > limit) break;
    cut = index;
  }
  if (cut > 0) return cut;
  const splitsPair = isHighSurrogate(window.charCodeAt(limit - 1)) && limit > 1;
  return splitsPair ? limit - 1 : limit;
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

/** The last index ≥ `from` where `separator` starts and `accept` holds, or -1. */
function lastBoundary(
  window: string,
  separator: string,
  from: number,
  accept: (at: number) => boolean,
): number {
  for (
    let at = window.lastIndexOf(separator);
    at >= from;
    at = window.lastIndexOf(separator, at - 1)
  ) {
    if (at > 0 && at + separator.length <= window.length && accept(at)) return at;
    if (at === 0) break;
  }
  return -1;
}

/** The opening fence line (```lang) of the code block `at` is inside, or null. */
function openFenceAt(text: string, at: number): string | null {
  let open: string | null = null;
  for (const match of text.slice(0, at).matchAll(/^```[^\n]*$/gm)) {
    open = open === null ? match[0].trimEnd() : null;
  }
  return open;
}
