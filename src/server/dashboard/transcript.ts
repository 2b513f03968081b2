/**
 * A session's conversation as the dashboard shows it: text turns, tool calls paired with
 * their results, compaction summaries and job endings, in order. Read straight from the
 * history store; the one place to switch to a shared transcript model.
 */
import type { ChatMessage, HistoryStore, ToolResultBlock } from "../../ports/index.js";

/** One thing that happened in a session, in the order it happened. */
export type TranscriptEntry =
  | { kind: "text"; role: "user" | "assistant"; text: string }
  | {
      kind: "tool";
      name: string;
      input: unknown;
      /** Null while the call has no result stored (the job is still running). */
      result: string | null;
      isError: boolean;
    }
  | { kind: "compaction"; summary: string; replaces: number }
  | { kind: "job_end"; outcome: "cancel" | "discard"; message: string };

/** Every stored message of the session, as entries. */
export async function readTranscript(
  history: HistoryStore,
  sessionId: string,
  messageCount: number,
): Promise<TranscriptEntry[]> {
  if (messageCount === 0) return [];
  return transcriptOf(await history.loadContext(sessionId, messageCount));
}

/** Entries of `messages`: a tool result joins the call it answers (matched by id). */
export function transcriptOf(messages: ChatMessage[]): TranscriptEntry[] {
  const results = new Map<string, ToolResultBlock>();
  for (const message of messages) {
    for (const block of message.content) {
      if (block.type === "tool_result") results.set(block.tool_use_id, block);
    }
  }
  const entries: TranscriptEntry[] = [];
  for (const message of messages) {
    for (const block of message.content) {
      if (block.type === "text" && block.text.trim() !== "") {
        entries.push({ kind: "text", role: message.role, text: block.text });
      } else if (block.type === "tool_use") {
        const result = results.get(block.id);
        entries.push({
          kind: "tool",
          name: block.name,
          input: block.input,
          result: result?.content ?? null,
          isError: result?.is_error === true,
        });
      } else if (block.type === "compaction") {
        entries.push({ kind: "compaction", summary: block.summary, replaces: block.replaces });
      } else if (block.type === "job_end") {
        entries.push({ kind: "job_end", outcome: block.outcome, message: block.message });
      }
    }
  }
  return entries;
}
