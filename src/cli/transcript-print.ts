/** Prints a {@link Transcript} for a terminal (`picklebot sessions show`). */
import {
  entryText,
  type Transcript,
  type TranscriptCall,
  type TranscriptEntry,
} from "../agents/transcript.js";
import { assertNever } from "../base/assert-never.js";
import { printable } from "../base/printable.js";
import type { TokenUsage } from "../ports/index.js";
import { formatTime, printLine } from "./output.js";

/** Characters of a tool call's input shown on its line. */
const INPUT_CHARS = 200;

/** Prints the header, then each entry with its time. */
export function printTranscript(transcript: Transcript): void {
  const { session, totals } = transcript;
  printLine(`session ${session.id} · agent ${session.agentId} · ${session.key}`);
  printLine(
    `started ${formatTime(session.createdAt)} · ${session.messageCount} messages · ` +
      `${totals.calls} model calls · ${formatTokens(totals.usage)}`,
  );
  for (const entry of transcript.entries) {
    printLine("");
    printEntry(entry);
  }
}

function printEntry(entry: TranscriptEntry): void {
  const when = `[${formatTime(entry.at)}]`;
  const job = entry.jobId ? ` · job ${entry.jobId}` : "";
  switch (entry.kind) {
    case "user":
      printLine(`${when} user${job}`);
      printIndented(entryText(entry));
      return;
    case "assistant":
      printLine(`${when} assistant${job}${callNote(entry.call)}`);
      if (entry.text || entry.files.length > 0) printIndented(entryText(entry));
      for (const call of entry.toolCalls) {
        printLine(`  → tool ${call.name} ${clip(JSON.stringify(call.input), INPUT_CHARS)}`);
        if (call.result === null) printLine("    ← (no result stored yet)");
        else {
          const note = call.result.length < call.resultChars ? ` (${call.resultChars} chars)` : "";
          printLine(`    ← ${call.isError ? "error: " : ""}${call.result}${note}`);
        }
      }
      return;
    case "compaction":
      printLine(
        `${when} ── compaction: summary of ${entry.replaces} messages${callNote(entry.call)}`,
      );
      printIndented(entry.summary);
      return;
    case "prune":
      printLine(
        `${when} ── older tool outputs pruned (last ${entry.keepTurns} turns kept in full)`,
      );
      return;
    case "job_end":
      printLine(`${when} ── job ended by a tool (${entry.outcome}): ${entry.message}`);
      return;
    case "memory_save":
      printLine(
        `${when} ── before the summary, ${entry.inputs.length} memory calls${callNote(entry.call)}`,
      );
      for (const input of entry.inputs) {
        printLine(`  → tool memory ${clip(JSON.stringify(input), INPUT_CHARS)}`);
      }
      return;
    case "call":
      printLine(`${when} model call${job}${callNote(entry.call)}`);
      return;
    default:
      assertNever(entry, "transcript entry");
  }
}

/** Prints text indented under its heading, line feeds kept, controls escaped. */
export function printIndented(text: string): void {
  console.log(
    printable(text, { multiline: true })
      .split("\n")
      .map((line) => `  ${line}`)
      .join("\n"),
  );
}

function callNote(call: TranscriptCall | null): string {
  if (!call) return "";
  return ` · ${call.model}${call.batch ? " (batch)" : ""} · ${formatTokens(call.usage)}`;
}

/** `1,200 in / 80 out tokens`, with the cache when used. */
export function formatTokens(usage: TokenUsage): string {
  const n = (value: number) => value.toLocaleString("en-US");
  const cache =
    usage.cacheRead + usage.cacheWrite > 0
      ? ` (cache ${n(usage.cacheRead)} read, ${n(usage.cacheWrite)} written)`
      : "";
  return `${n(usage.input)} in / ${n(usage.output)} out tokens${cache}`;
}

function clip(text: string, chars: number): string {
  return text.length > chars ? `${text.slice(0, chars)}…` : text;
}
