/**
 * A memory's text and its entries (`src/ports/memory.ts`): the entries one after the
 * other, separated by a line holding only `§`, so a person reads and edits it as plain
 * text:
 *
 * ```
 * Ana's cat is called Miso.
 * §
 * Ana prefers answers in German.
 * ```
 */
import { ENTRY_SEPARATOR } from "../ports/index.js";

/** A line holding only the separator (spaces around it allowed, as a hand edit may leave). */
const SEPARATOR_LINE = new RegExp(`^[ \\t]*${ENTRY_SEPARATOR}[ \\t]*$`, "m");

/** The entries of a memory's text, each trimmed; blank ones left out. */
export function memoryEntries(text: string): string[] {
  return text
    .replace(/\r\n?/g, "\n")
    .split(new RegExp(SEPARATOR_LINE.source, "gm"))
    .map((entry) => entry.trim())
    .filter((entry) => entry !== "");
}

/** The text of a memory made of `entries`. */
export function memoryText(entries: readonly string[]): string {
  return entries.join(`\n${ENTRY_SEPARATOR}\n`);
}

/** Characters of a text as a person counts them (code points, not UTF-16 units). */
export function memoryChars(text: string): number {
  let count = 0;
  for (const _ of text) count += 1;
  return count;
}

/** True when `entry` holds a line that would split it into two entries. */
export function holdsSeparatorLine(entry: string): boolean {
  return SEPARATOR_LINE.test(entry.replace(/\r\n?/g, "\n"));
}

/**
 * The text of `into` with every entry of `from` it lacks added at the end, and the
 * entries added (for a link of two person keys).
 */
export function mergeMemoryText(into: string, from: string): { text: string; added: string[] } {
  const entries = memoryEntries(into);
  const added = memoryEntries(from).filter((entry) => !entries.includes(entry));
  return { text: memoryText([...entries, ...added]), added };
}
