/**
 * The context builder: the one place that turns stored history into the `messages` of a
 * model request the Messages API accepts, and the messages that close a turn that ends
 * unfinished. Stored history is what happened (a turn stopped mid-tool, a reply that never
 * came, data written by an older version); a request must be valid whatever it holds:
 *
 *   - every `tool_use` is answered by a `tool_result` in the very next message (a call
 *     that never finished gets an `is_error` result saying so);
 *   - every `tool_result` answers a `tool_use` of the message just before (others dropped);
 *   - roles alternate, starting with the user (consecutive messages of one role merge);
 *   - no empty text block, no message without content.
 *
 * A compaction point is sent first, as its summary, followed by the turns it keeps verbatim
 * (stored before it) and what came after it.
 *
 * It also applies the session's last prune point (see {@link PrunePointBlock}): the tool
 * outputs of older turns are sent as a note, so the request stays small while every
 * turn's words are still there. Old images and PDFs leave the same way, as a note naming
 * them; and beyond the newest {@link MAX_MEDIA_PER_REQUEST} images and PDF pages, or
 * {@link MAX_MEDIA_BYTES_PER_REQUEST}, which is all the API takes in one request, older
 * ones are sent as that note too.
 */
import { assertNever } from "../base/assert-never.js";
import { isCompaction, isWordsTurnStart } from "../base/turns.js";
import type {
  ChatMessage,
  ContentBlock,
  DocumentBlock,
  ImageBlock,
  PrunePointBlock,
  RequestContentBlock,
  RequestMessage,
  ToolResultBlock,
  ToolUseBlock,
} from "../ports/index.js";

/** Why a turn ended before the agent's reply, as the model is told in its tool results. */
export type TurnEnding = "stopped by the user" | "timed out" | "interrupted";

/** The tool result of a call that never finished. */
export function unfinishedToolResult(id: string, ending: TurnEnding): ToolResultBlock {
  return {
    type: "tool_result",
    tool_use_id: id,
    content: `This tool call did not finish: ${ending}.`,
    is_error: true,
  };
}

/** What ends the agent's side of a turn the person stopped, as the model reads it next time. */
export const STOPPED_NOTE = "[stopped by the user]";

/**
 * What closes a turn that ends unfinished, given its last stored message:
 *
 *   - when the agent was waiting on tool calls, one user message with an `is_error`
 *     result for each, so the history stays a valid request;
 *   - when the person stopped it, then an assistant message: the text the model call in
 *     progress had streamed (`unsavedText`, what the person saw; only when the turn's last
 *     stored message is the user's) followed by {@link STOPPED_NOTE}. The next message then
 *     starts a turn of its own, instead of joining the stopped request as one the model
 *     has still to answer (consecutive user messages are sent as one).
 *
 * Nothing when the turn holds no open call and was not stopped (a user message without
 * an answer is valid history: the next message is sent with it), or its reply is stored.
 */
export function closingMessages(
  last: ChatMessage | undefined,
  ending: TurnEnding,
  unsavedText = "",
): ChatMessage[] {
  if (last === undefined) return [];
  const calls = last.role === "assistant" ? toolUsesOf(last) : [];
  if (last.role === "assistant" && calls.length === 0) return [];
  const results: ChatMessage[] =
    calls.length === 0
      ? []
      : [{ role: "user", content: calls.map((call) => unfinishedToolResult(call.id, ending)) }];
  if (ending !== "stopped by the user") return results;
  const seen = calls.length === 0 ? unsavedText.trimEnd() : "";
  const text = seen === "" ? STOPPED_NOTE : `${seen}\n\n${STOPPED_NOTE}`;
  return [...results, { role: "assistant", content: [{ type: "text", text }] }];
}

/**
 * The request `messages` for a history (oldest first) that the API will accept. A history
 * that ends in the agent's open tool calls is the loop's to run, not to send: its calls
 * stay open here.
 */
export function buildRequestMessages(history: readonly ChatMessage[]): RequestMessage[] {
  const ordered = summaryFirst(history);
  const pruned = withinMediaLimit(pruneOldToolOutputs(ordered));
  return mergeSameRole(pairToolCalls(pruned.map(withValidBlocks)));
}

/**
 * The history with its last compaction point moved first: in a context (see
 * `cutContext`), what comes before the point is the turns it keeps verbatim, which the
 * model reads after the summary of what came before them.
 */
function summaryFirst(history: readonly ChatMessage[]): readonly ChatMessage[] {
  const point = history.findLastIndex(isCompaction);
  if (point <= 0) return history;
  return [history[point] as ChatMessage, ...history.slice(0, point), ...history.slice(point + 1)];
}

/**
 * The most images plus PDF pages the Messages API takes in one request (a 200k-token
 * model's; it refuses more with "Too much media"). Images too small to fill the context
 * window can pass it long before the budget prunes them.
 */
export const MAX_MEDIA_PER_REQUEST = 100;

/**
 * The most bytes of images and PDFs sent in one request: base64 makes them a third larger,
 * and the API refuses a request over 32 MB (413), so 22 MiB (29.3 MiB encoded) leaves
 * room for the rest of the request.
 */
export const MAX_MEDIA_BYTES_PER_REQUEST = 22 * 1024 * 1024;

/**
 * The history with only its newest images and PDFs within {@link MAX_MEDIA_PER_REQUEST}
 * (an image counts 1, a PDF its pages) and {@link MAX_MEDIA_BYTES_PER_REQUEST}; older ones
 * become the note of a pruned one. The history is returned as it is while within both,
 * so the prompt cache's prefix changes only when a limit is passed.
 */
function withinMediaLimit(history: readonly ChatMessage[]): readonly ChatMessage[] {
  const leftOut = new Set<string>();
  let room = MAX_MEDIA_PER_REQUEST;
  let bytesRoom = MAX_MEDIA_BYTES_PER_REQUEST;
  for (let index = history.length - 1; index >= 0; index--) {
    const content = (history[index] as ChatMessage).content;
    for (let position = content.length - 1; position >= 0; position--) {
      const block = content[position] as ContentBlock;
      if (!isMedia(block)) continue;
      // Once one does not fit, no older one is sent either.
      if (room >= 0 && bytesRoom >= 0) {
        room -= mediaWeight(block);
        bytesRoom -= block.media.bytes;
      }
      if (room < 0 || bytesRoom < 0) leftOut.add(`${index}:${position}`);
    }
  }
  if (leftOut.size === 0) return history;
  return history.map((message, index) => ({
    ...message,
    content: message.content.map((block, position) =>
      isMedia(block) && leftOut.has(`${index}:${position}`)
        ? { type: "text", text: prunedMediaNote(block) }
        : block,
    ),
  }));
}

function isMedia(block: ContentBlock): block is ImageBlock | DocumentBlock {
  return block.type === "image" || block.type === "document";
}

/** What a block counts against {@link MAX_MEDIA_PER_REQUEST}: an image 1, a PDF its pages. */
function mediaWeight(block: ImageBlock | DocumentBlock): number {
  return block.type === "image" ? 1 : block.pages;
}

/** The message that stores a prune point keeping the last `keepTurns` turns' outputs. */
export function prunePoint(keepTurns: number): ChatMessage {
  return { role: "user", content: [{ type: "prune", keepTurns }] };
}

/** What a pruned tool output is sent as. */
export function prunedOutputNote(length: number): string {
  return `[output left out to save context: ${length} characters; run the tool again if you need it]`;
}

/**
 * The history with the last prune point applied: each tool result before the
 * `keepTurns` turns ahead of it, when longer than its note, becomes the note. Only
 * messages before the point change, so every later request starts with the same prefix
 * (and the API's prompt cache keeps working) until the next point.
 */
function pruneOldToolOutputs(history: readonly ChatMessage[]): readonly ChatMessage[] {
  const point = history.findLastIndex((message) => pruneBlockOf(message) !== undefined);
  if (point === -1) return history;
  const { keepTurns } = pruneBlockOf(history[point] as ChatMessage) as PrunePointBlock;
  let cutoff = point;
  for (let kept = 0; cutoff > 0 && kept < keepTurns; ) {
    cutoff -= 1;
    if (isWordsTurnStart(history[cutoff] as ChatMessage)) kept += 1;
  }
  return history.map((message, index) => (index < cutoff ? withPrunedOutputs(message) : message));
}

function withPrunedOutputs(message: ChatMessage): ChatMessage {
  return { ...message, content: message.content.map(prunedBlock) };
}

/** What a block before the cutoff of a prune point is sent as: tool outputs as a note. */
function prunedBlock(block: ContentBlock): ContentBlock {
  switch (block.type) {
    case "tool_result": {
      const note = prunedOutputNote(block.content.length);
      return block.content.length > note.length ? { ...block, content: note } : block;
    }
    case "image":
    case "document":
      return { type: "text", text: prunedMediaNote(block) };
    case "text":
    case "tool_use":
    case "compaction":
    case "prune":
    case "job_end":
    case "memory_save":
    // The API's own result goes back as it came, or not at all: it is never shortened.
    case "server_tool_use":
    case "server_tool_result":
      return block;
    default:
      return assertNever(block, "content block");
  }
}

/** What an image or a PDF before the cutoff of a prune point is sent as. */
export function prunedMediaNote(block: ImageBlock | DocumentBlock): string {
  const what = block.type === "image" ? "image" : "PDF";
  return `[${what} ${block.media.name} left out to save context; ask the user to send it again if you need it]`;
}

function pruneBlockOf(message: ChatMessage): PrunePointBlock | undefined {
  return message.content.find((block): block is PrunePointBlock => block.type === "prune");
}

/**
 * A message of blocks the API takes (see `requestBlock`);
 * without the blocks its role cannot hold (tool calls are the assistant's, tool results
 * the user's) and without empty or whitespace-only text.
 */
function withValidBlocks(message: ChatMessage): RequestMessage {
  const content = message.content
    .flatMap(requestBlock)
    .filter((block) => isValidIn(message.role, block));
  return { role: message.role, content };
}

/** Whether the API takes `block` in a message of `role`. */
function isValidIn(role: RequestMessage["role"], block: RequestContentBlock): boolean {
  switch (block.type) {
    case "text":
      return block.text.trim() !== "";
    case "tool_use":
      return role === "assistant";
    case "tool_result":
    case "image":
    case "document":
      return role === "user";
    case "server_tool_use":
    case "server_tool_result":
      return role === "assistant";
    default:
      return assertNever(block, "request block");
  }
}

/** The note a compaction point is sent as. */
export function summaryNote(summary: string): string {
  return `(Summary of the earlier conversation, which is no longer shown in full:)\n${summary}`;
}

/**
 * What a stored block is sent as: a compaction point as its summary, a prune point, a
 * job's end and a memory save as nothing.
 */
function requestBlock(block: ContentBlock): RequestContentBlock[] {
  switch (block.type) {
    case "text":
    case "image":
    case "document":
    case "tool_use":
    case "tool_result":
    case "server_tool_use":
    case "server_tool_result":
      return [block];
    case "compaction":
      return [{ type: "text", text: summaryNote(block.summary) }];
    case "prune":
    case "job_end":
    case "memory_save":
      return [];
    default:
      return assertNever(block, "content block");
  }
}

/**
 * Every tool call answered right after it: results that answer a call of the message
 * before are kept, others dropped, and calls left without an answer get an "interrupted"
 * result (found in data written before turns were closed). Messages left empty are
 * dropped, and so is anything before the first user message.
 */
function pairToolCalls(history: readonly RequestMessage[]): RequestMessage[] {
  const result: RequestMessage[] = [];
  for (const message of history) {
    const previous = result.at(-1);
    const asked = previous?.role === "assistant" ? toolUsesOf(previous).map((call) => call.id) : [];
    const answered = new Set<string>();
    const content = message.content.filter((block) => {
      if (block.type !== "tool_result") return true;
      if (!asked.includes(block.tool_use_id) || answered.has(block.tool_use_id)) return false;
      answered.add(block.tool_use_id);
      return true;
    });
    const repairs = asked
      .filter((id) => !answered.has(id))
      .map((id) => unfinishedToolResult(id, "interrupted"));
    if (repairs.length > 0 && message.role === "assistant")
      result.push({ role: "user", content: repairs });
    const kept = message.role === "user" ? [...repairs, ...content] : content;
    if (kept.length === 0 || (result.length === 0 && message.role !== "user")) continue;
    result.push({ ...message, content: kept });
  }
  return result;
}

/** Consecutive messages of one role as one message; tool results stay first in a user message. */
function mergeSameRole(history: readonly RequestMessage[]): RequestMessage[] {
  const result: RequestMessage[] = [];
  for (const message of history) {
    const previous = result.at(-1);
    if (previous?.role === message.role) {
      result[result.length - 1] = {
        role: message.role,
        content: ordered([...previous.content, ...message.content]),
      };
    } else {
      result.push(message);
    }
  }
  return result;
}

/** Tool results before any other block, as the API wants them in a user message. */
function ordered(content: RequestContentBlock[]): RequestContentBlock[] {
  const results = content.filter((block) => block.type === "tool_result");
  return results.length === 0
    ? content
    : [...results, ...content.filter((b) => b.type !== "tool_result")];
}

function toolUsesOf(message: ChatMessage): ToolUseBlock[] {
  return message.content.filter((block): block is ToolUseBlock => block.type === "tool_use");
}
