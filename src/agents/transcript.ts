/**
 * A session as a person reads it: a pure function from its stored messages and its model
 * calls (the usage ledger) to a {@link Transcript}, shared by `picklebot sessions show`
 * and the dashboard's session page.
 *
 *   user text, images and PDFs ─► a `user` entry (a job's resume marker `.` is left out)
 *   assistant text + tool_use ─► an `assistant` entry, its tool calls answered by the next
 *     message's tool_results (shortened), and its model call (model, tokens)
 *   compaction / prune / job_end / memory_save blocks ─► entries of their own, marked
 */

import { assertNever } from "../base/assert-never.js";
import { isConversationBlock, mediaBlockText } from "../base/content.js";
import { addUsage, zeroUsage } from "../base/usage.js";
import {
  type DocumentBlock,
  type HistoryStore,
  type ImageBlock,
  RESUME_MARKER,
  type Session,
  type StoredMessage,
  type TokenUsage,
  type ToolResultBlock,
  type UsageLedger,
  type UsageRecord,
} from "../ports/index.js";

/** Characters of a tool result a transcript keeps (the rest is counted, not shown). */
export const TRANSCRIPT_RESULT_CHARS = 500;

/** One model call, from the usage ledger. */
export interface TranscriptCall {
  model: string;
  usage: TokenUsage;
  batch: boolean;
}

/** A tool call of an assistant message, with its result when one is stored. */
export interface TranscriptToolCall {
  id: string;
  name: string;
  input: unknown;
  /** The result, shortened to {@link TRANSCRIPT_RESULT_CHARS}; null while none is stored. */
  result: string | null;
  /** Characters of the full result. */
  resultChars: number;
  isError: boolean;
}

/** What every entry has. Times are epoch milliseconds. */
interface EntryBase {
  at: number;
  /** The job that wrote it (null: a terminal chat). */
  jobId: string | null;
}

/** A file of a message: an image or a PDF, by its stored reference (never its bytes). */
export type TranscriptFile = ImageBlock | DocumentBlock;

/** One thing that happened in the conversation, oldest first. */
export type TranscriptEntry =
  | (EntryBase & { kind: "user"; text: string; files: TranscriptFile[] })
  | (EntryBase & {
      kind: "assistant";
      text: string;
      files: TranscriptFile[];
      toolCalls: TranscriptToolCall[];
      /** The model call that wrote it (null: none recorded). */
      call: TranscriptCall | null;
    })
  | (EntryBase & {
      kind: "compaction";
      summary: string;
      /** Messages the summary stands in for. */
      replaces: number;
      call: TranscriptCall | null;
    })
  | (EntryBase & { kind: "prune"; keepTurns: number })
  | (EntryBase & {
      kind: "memory_save";
      /** The inputs of the `memory` calls made before a summary (each writes at most once). */
      inputs: unknown[];
      call: TranscriptCall | null;
    })
  | (EntryBase & { kind: "job_end"; outcome: "cancel" | "discard"; message: string })
  /** A model call whose message was not found (a failed compaction's summary call). */
  | (EntryBase & { kind: "call"; call: TranscriptCall });

/** A whole session, readable. */
export interface Transcript {
  session: Session;
  entries: TranscriptEntry[];
  /** Tokens of every model call of the session, and how many calls. */
  totals: { calls: number; usage: TokenUsage };
}

/** Builds the transcript of `session` from all its messages and its ledger calls. */
export function buildTranscript(
  session: Session,
  messages: readonly StoredMessage[],
  calls: readonly UsageRecord[],
): Transcript {
  // A model call is recorded with the message it wrote, in one transaction: same time.
  const unmatched = [...calls];
  const takeCall = (message: StoredMessage): TranscriptCall | null => {
    const index = unmatched.findIndex((call) => call.at === message.at);
    if (index === -1) return null;
    const [record] = unmatched.splice(index, 1) as [UsageRecord];
    return callOf(record);
  };
  const entries: TranscriptEntry[] = [];
  const open = new Map<string, TranscriptToolCall>();
  // Only a turn's first message carries its job id: the rest of the turn inherits it.
  let turnJob: string | null = null;
  for (const message of messages) {
    if (message.role === "user" && message.jobId !== null) turnJob = message.jobId;
    else if (message.role === "user" && startsTurn(message)) turnJob = null;
    const base = { at: message.at, jobId: message.jobId ?? turnJob };
    const { texts, files, toolCalls, markers } = readBlocks(message, base, open, takeCall);
    entries.push(...markers);
    const text = texts.join("\n").trim();
    if (message.role === "user") {
      const said = text === RESUME_MARKER ? "" : text;
      if (said !== "" || files.length > 0)
        entries.push({ ...base, kind: "user", text: said, files });
      continue;
    }
    for (const call of toolCalls) open.set(call.id, call);
    if (text !== "" || files.length > 0 || toolCalls.length > 0) {
      const call = takeCall(message);
      entries.push({ ...base, kind: "assistant", text, files, toolCalls, call });
    }
  }
  for (const record of unmatched) {
    entries.push({ at: record.at, jobId: record.jobId, kind: "call", call: callOf(record) });
  }
  entries.sort((a, b) => a.at - b.at);
  return { session, entries, totals: totalsOf(calls) };
}

/** What one stored message holds, read block by block. */
interface MessageBlocks {
  texts: string[];
  /** Its images and PDFs. */
  files: TranscriptFile[];
  /** Its tool calls, not yet answered. */
  toolCalls: TranscriptToolCall[];
  /** An entry for each marker it holds (compaction, prune point, job end, memory save), in order. */
  markers: TranscriptEntry[];
}

/**
 * Reads the blocks of `message`: text and tool calls are gathered, each tool result
 * answers its call in `open`, each marker becomes an entry at `base`.
 */
function readBlocks(
  message: StoredMessage,
  base: Pick<TranscriptEntry, "at" | "jobId">,
  open: ReadonlyMap<string, TranscriptToolCall>,
  takeCall: (message: StoredMessage) => TranscriptCall | null,
): MessageBlocks {
  const read: MessageBlocks = { texts: [], files: [], toolCalls: [], markers: [] };
  for (const block of message.content) {
    switch (block.type) {
      case "text":
        read.texts.push(block.text);
        break;
      case "image":
      case "document":
        read.files.push(block);
        break;
      case "tool_use":
        read.toolCalls.push(openCall(block.id, block.name, block.input));
        break;
      case "tool_result":
        answer(open.get(block.tool_use_id), block);
        break;
      case "server_tool_use":
        read.toolCalls.push(openCall(block.id, block.name, block.input));
        break;
      case "server_tool_result":
        answer(
          read.toolCalls.find((call) => call.id === block.tool_use_id),
          block,
        );
        break;
      case "compaction": {
        const { summary, replaces } = block;
        const call = takeCall(message);
        read.markers.push({ ...base, kind: "compaction", summary, replaces, call });
        break;
      }
      case "prune":
        read.markers.push({ ...base, kind: "prune", keepTurns: block.keepTurns });
        break;
      case "job_end": {
        const { outcome, message: said } = block;
        read.markers.push({ ...base, kind: "job_end", outcome, message: said });
        break;
      }
      case "memory_save": {
        const inputs = block.calls.map((call) => call.input);
        read.markers.push({ ...base, kind: "memory_save", inputs, call: takeCall(message) });
        break;
      }
      default:
        assertNever(block, "content block");
    }
  }
  return read;
}

/** A job's turn in a transcript: its user message and its reply. */
export interface JobTurn {
  /** What the job asked (its user message as stored), or null. */
  message: string | null;
  /** The final assistant text of the job's turn: what it replied; null before it replies. */
  reply: string | null;
}

/** The turn job `jobId` wrote into the transcript. */
export function turnOfJob(transcript: Transcript, jobId: string): JobTurn {
  let message: string | null = null;
  let reply: string | null = null;
  for (const entry of transcript.entries) {
    if (entry.jobId !== jobId) continue;
    if (entry.kind === "user") message ??= entryText(entry);
    if (entry.kind === "assistant" && entry.text !== "") reply = entry.text;
  }
  return { message, reply };
}

/** What an entry says, its files as a line each (`[image photo.jpg, image/jpeg, …]`). */
export function entryText(entry: { text: string; files: readonly TranscriptFile[] }): string {
  return [...entry.files.map(mediaBlockText), entry.text].filter((line) => line !== "").join("\n");
}

/** A user message that is not only tool results: a new turn (a terminal chat's, when no job). */
function startsTurn(message: StoredMessage): boolean {
  return message.content.some(isConversationBlock);
}

function openCall(id: string, name: string, input: unknown): TranscriptToolCall {
  return { id, name, input, result: null, resultChars: 0, isError: false };
}

function answer(
  call: TranscriptToolCall | undefined,
  block: Pick<ToolResultBlock, "content" | "is_error">,
) {
  if (!call) return;
  call.resultChars = block.content.length;
  call.result =
    block.content.length > TRANSCRIPT_RESULT_CHARS
      ? `${block.content.slice(0, TRANSCRIPT_RESULT_CHARS)}…`
      : block.content;
  call.isError = block.is_error === true;
}

function callOf(record: UsageRecord): TranscriptCall {
  const { input, output, cacheRead, cacheWrite } = record;
  return {
    model: record.model,
    usage: { input, output, cacheRead, cacheWrite },
    batch: record.batch,
  };
}

function totalsOf(calls: readonly UsageRecord[]): Transcript["totals"] {
  return { calls: calls.length, usage: calls.reduce<TokenUsage>(addUsage, zeroUsage()) };
}

/** The stores a transcript is read from. */
export interface TranscriptSource {
  history: Pick<HistoryStore, "getSession" | "messages">;
  usage: UsageLedger;
}

/** Reads and builds the transcript of session `id`; null when there is no such session. */
export async function readTranscript(
  source: TranscriptSource,
  id: string,
): Promise<Transcript | null> {
  const session = await source.history.getSession(id);
  if (!session) return null;
  const [messages, calls] = await Promise.all([
    source.history.messages(id),
    source.usage.calls({ since: 0, sessionId: id }),
  ]);
  return buildTranscript(session, messages, calls);
}
