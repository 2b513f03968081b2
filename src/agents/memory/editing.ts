/**
 * What the `memory` tool does to a memory's text, decided once here as pure functions
 * (a {@link MemoryEditor} runs inside the store's transaction): add an entry, replace or
 * remove the one a piece of its text picks. Every refusal is a sentence the model can act
 * on: what is wrong, and what to do instead.
 */
import {
  holdsSeparatorLine,
  memoryChars,
  memoryEntries,
  memoryText,
} from "../../base/memory-text.js";
import { controlCharacterIn } from "../../base/printable.js";
import { secretShapeIn } from "../../base/redact.js";
import type { MemoryEdit, MemoryEditor } from "../../ports/index.js";

/** The memory a change is made to, as the model is told of it. */
export interface EditTarget {
  /** `your notes`, `the memory about this person`. */
  label: string;
  /** Its budget, in characters. */
  budget: number;
  /**
   * Whether a refusal may quote its entries: false where the conversation is not the
   * memory's person's alone (a group chat), whose other members must not read them.
   */
  quote: boolean;
  /** Values never stored (the configuration's secrets). */
  secrets: readonly string[];
}

/** Characters of an entry a refusal quotes. */
const QUOTE_CHARS = 80;

/** Entries a refusal lists at most. */
const QUOTE_ENTRIES = 12;

/** An editor adding `text` as a new entry at the end. */
export function addEntry(text: string, target: EditTarget): MemoryEditor {
  return (current) => {
    const entries = memoryEntries(current);
    const entry = text.trim();
    const problem = entryProblem(entry, target) ?? duplicateProblem(entry, entries, target);
    if (problem) return { refused: problem };
    return fitting([...entries, entry], current, target, {
      action: "add",
      entry,
      previous: null,
    });
  };
}

/** An editor writing `text` in place of the one entry that holds `oldText`. */
export function replaceEntry(oldText: string, text: string, target: EditTarget): MemoryEditor {
  return (current) => {
    const entries = memoryEntries(current);
    const picked = pickEntry(oldText, entries, target);
    if (typeof picked === "string") return { refused: picked };
    const entry = text.trim();
    const previous = entries[picked] as string;
    if (entry === previous)
      return { refused: `nothing to change: the entry already reads "${entry}".` };
    const others = entries.filter((_, index) => index !== picked);
    const problem = entryProblem(entry, target) ?? duplicateProblem(entry, others, target);
    if (problem) return { refused: problem };
    const next = entries.map((old, index) => (index === picked ? entry : old));
    return fitting(next, current, target, { action: "replace", entry, previous });
  };
}

/** An editor removing the one entry that holds `oldText`. */
export function removeEntry(oldText: string, target: EditTarget): MemoryEditor {
  return (current) => {
    const entries = memoryEntries(current);
    const picked = pickEntry(oldText, entries, target);
    if (typeof picked === "string") return { refused: picked };
    const previous = entries[picked] as string;
    return {
      text: memoryText(entries.filter((_, index) => index !== picked)),
      change: { action: "remove", entry: null, previous },
    };
  };
}

/** The new text when it fits the budget (or shrinks); else a refusal saying how full it is. */
function fitting(
  entries: string[],
  current: string,
  target: EditTarget,
  change: Extract<MemoryEdit, { text: string }>["change"],
): MemoryEdit {
  const text = memoryText(entries);
  const size = memoryChars(text);
  const used = memoryChars(current);
  // A memory over its budget (a link merged two) may still shrink toward it.
  if (size <= target.budget || size < used) return { text, change };
  const listed = target.quote ? ` Its entries: ${quoteEntries(memoryEntries(current))}.` : "";
  return {
    refused:
      `${target.label} is full: ${used} of ${target.budget} characters used, and this change ` +
      `would make it ${size}. Make room first: merge related entries into one shorter entry ` +
      `(action "replace") or remove ones that no longer matter (action "remove"), then try ` +
      `again.${listed}`,
  };
}

/** Why `entry` cannot be stored at all, or null. */
function entryProblem(entry: string, target: EditTarget): string | null {
  if (entry === "") return `"text" is empty; write the fact to save.`;
  if (holdsSeparatorLine(entry)) {
    return `"text" holds a line with only "§", which separates entries; write one fact without it.`;
  }
  const control = controlCharacterIn(entry, { multiline: true });
  if (control) return `"text" holds a control character (${control}); write plain text.`;
  const secret = secretShapeIn(entry, target.secrets);
  if (secret) {
    return (
      `not saved: the text looks like a secret (${secret}). Memory is shown at the start of ` +
      `later conversations, so it never keeps passwords, keys or tokens; save where to find ` +
      `it instead (such as "the router password is in the blue notebook").`
    );
  }
  const size = memoryChars(entry);
  if (size > target.budget) {
    return (
      `not saved: the entry is ${size} characters and ${target.label} holds ${target.budget} ` +
      `in all; write a shorter, self-contained fact.`
    );
  }
  return null;
}

/** A refusal when `entry` is already one of `entries` (spaces and case aside), else null. */
function duplicateProblem(entry: string, entries: string[], target: EditTarget): string | null {
  const same = entries.find((other) => normalized(other) === normalized(entry));
  if (same === undefined) return null;
  const quoted = target.quote ? `: "${quote(same)}"` : "";
  return `already saved in ${target.label}${quoted}; nothing to add.`;
}

/** The index of the one entry holding `oldText`, or a refusal naming the candidates. */
function pickEntry(oldText: string, entries: string[], target: EditTarget): number | string {
  const wanted = normalized(oldText);
  if (wanted === "") return `"old_text" is empty; give a piece of the entry to change.`;
  if (entries.length === 0) return `${target.label} is empty; there is no entry to change.`;
  const matches = entries.flatMap((entry, index) =>
    normalized(entry).includes(wanted) ? [index] : [],
  );
  if (matches.length === 1) return matches[0] as number;
  if (matches.length === 0) {
    const listed = target.quote ? ` Its entries: ${quoteEntries(entries)}.` : "";
    return `no entry of ${target.label} holds "${quote(oldText)}"; give a piece of one entry's text as "old_text".${listed}`;
  }
  const listed = target.quote
    ? `: ${quoteEntries(matches.map((index) => entries[index] as string))}`
    : "";
  return `"${quote(oldText)}" is in ${matches.length} entries of ${target.label}${listed}; give a longer piece of the one you mean.`;
}

/** Lower case, spaces collapsed: how entries are compared. */
function normalized(text: string): string {
  return text.trim().replace(/\s+/g, " ").toLowerCase();
}

function quote(text: string): string {
  const line = text.replace(/\s+/g, " ").trim();
  return line.length > QUOTE_CHARS ? `${line.slice(0, QUOTE_CHARS - 1)}…` : line;
}

function quoteEntries(entries: readonly string[]): string {
  const shown = entries.slice(0, QUOTE_ENTRIES).map((entry, i) => `${i + 1}. "${quote(entry)}"`);
  const more = entries.length > QUOTE_ENTRIES ? `, and ${entries.length - QUOTE_ENTRIES} more` : "";
  return shown.join("; ") + more;
}

/** A line that begins with the separator but holds more: a separator mistyped in a hand edit. */
const BROKEN_SEPARATOR = /^[ \t]*§[ \t]*\S.*$/m;

/**
 * An editor writing `text`, edited by hand from `expected`, in place of the whole memory
 * (`picklebot memory edit`, the dashboard): refused, naming the entry and the fix, when an
 * entry looks like a secret, a line mistakes the separator, two entries are the same, the
 * text passes the budget, or the memory changed since `expected` was read. An unchanged
 * text is refused too, so no empty change is recorded.
 */
export function replaceText(expected: string, text: string, target: EditTarget): MemoryEditor {
  return (current) => {
    if (current !== expected) {
      return {
        refused: `${target.label} changed while you were editing it (the agent or someone else wrote to it); start again from what it holds now.`,
      };
    }
    const problem = handEditProblem(text, target);
    if (problem) return { refused: problem };
    const next = memoryText(memoryEntries(text));
    if (next === current) return { refused: "nothing to change: the text is the same as before." };
    if (next === "") return clearText()(current);
    return { text: next, change: { action: "edit", entry: next, previous: current } };
  };
}

/** An editor emptying the memory; refused when it is empty already. */
export function clearText(): MemoryEditor {
  return (current) =>
    current === ""
      ? { refused: "nothing to clear: it is empty." }
      : { text: "", change: { action: "clear", entry: null, previous: current } };
}

/** What is wrong with a hand-edited memory text, as a sentence naming the entry, or null. */
function handEditProblem(text: string, target: EditTarget): string | null {
  const broken = BROKEN_SEPARATOR.exec(text.replace(/\r\n?/g, "\n"));
  if (broken) {
    return `the line "${quote(broken[0])}" starts with "§" but holds more: a line holding only "§" separates two entries, so put the text on the next line.`;
  }
  const entries = memoryEntries(text);
  for (const [index, entry] of entries.entries()) {
    const control = controlCharacterIn(entry, { multiline: true });
    if (control) {
      return `entry ${index + 1} holds a control character (${control}), which is not text; remove it.`;
    }
    const secret = secretShapeIn(entry, target.secrets);
    if (secret) {
      return `entry ${index + 1} ("${quote(entry)}") looks like a secret (${secret}); memory is sent at the start of every conversation, so write where to find the secret instead.`;
    }
    const twin = entries.findIndex((other) => normalized(other) === normalized(entry));
    if (twin !== index) {
      return `entries ${twin + 1} and ${index + 1} say the same ("${quote(entry)}"); keep one.`;
    }
  }
  const size = memoryChars(memoryText(entries));
  if (size > target.budget) {
    return `${target.label} would be ${size} characters and its budget is ${target.budget}; shorten or remove entries (or raise the budget in the agent's AGENT.md, memory.agent_chars or memory.person_chars).`;
  }
  return null;
}
