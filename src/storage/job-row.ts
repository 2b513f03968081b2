/**
 * The one mapping from a stored `jobs` row to a {@link Job}, shared by the SQLite and
 * PostgreSQL queues (their `jobs` tables have the same columns).
 */
import type {
  BatchStep,
  ChatAttachment,
  ClaimedJob,
  Job,
  JobAttemptError,
  JobSender,
  JobState,
  ReplyTarget,
  ToolResultBlock,
} from "../ports/index.js";
import { isBatchStep, isJobSender, isJobWait, readReplyTarget } from "./job.js";

/** Largest number of jobs one claim takes. */
export const MAX_CLAIM = 1000;

/** A row of the `jobs` table, as the database driver returns it. */
export interface JobRow {
  seq: number;
  id: string;
  agent_id: string;
  session_key: string;
  session_id: string | null;
  message: string;
  /** 0/1 in SQLite, a boolean in PostgreSQL. */
  checkpointed: number | boolean;
  task: string;
  mode: string;
  reply_to: string;
  state: string;
  attempts: number;
  max_attempts: number;
  run_at: number;
  locked_by: string | null;
  locked_at: number | null;
  lock_token: string | null;
  last_error: string | null;
  errors: string;
  dedupe_key: string | null;
  created_at: number;
  updated_at: number;
  /** JSON of the JobWait of a parked job (state stays 'queued'), else null. */
  waiting_for: string | null;
  parent_id: string | null;
  /** 0/1 in SQLite, a boolean in PostgreSQL. */
  stop_requested: number | boolean;
  /** JSON array of the tool results kept while parked. */
  tool_results: string;
  /** 0/1 in SQLite, a boolean in PostgreSQL. */
  batch: number | boolean;
  /** Null in rows written before the column existed. */
  model?: string | null;
  /** JSON of the job's BatchStep, or null. */
  batch_step: string | null;
  /** JSON of the job's JobSender, or null. */
  sender: string | null;
  /** JSON array of the ChatAttachments sent with the message. */
  attachments: string;
}

/** A row read back: the job, and what is wrong with the row if it was edited badly. */
export interface ParsedRow {
  job: Job;
  /** Why the job cannot run (a malformed column), or null when the row is sound. */
  problem: string | null;
}

/** The states a row stores (see {@link VISIBLE_STATE} for the others). */
const STORED_STATES = new Set<string>(["queued", "running", "done", "failed"]);

/**
 * A job's state as shown (SQL of both backends). Two states are stored as others, so the
 * claim, the line rule (a finished job frees its session's next one), retention and the
 * row policies need no rule of their own: a parked job is stored as `queued`, due at its
 * deadline, with `waiting_for` set, and shows as `waiting`; a job the person stopped is
 * stored as `failed` with `stop_requested` set, and shows as `stopped`
 * (docs/decisions/stopped-jobs.md).
 */
export const VISIBLE_STATE = `(CASE WHEN state = 'queued' AND waiting_for IS NOT NULL THEN 'waiting'
    WHEN state = 'failed' AND stop_requested = TRUE THEN 'stopped' ELSE state END)`;
const SILENT: ReplyTarget = { kind: "silent" };

/**
 * Maps a row to a job. Never throws: a row edited into nonsense still lists (with safe
 * stand-ins) and `problem` says what is wrong, so a claim can fail that job on the spot.
 */
export function parseJobRow(row: JobRow): ParsedRow {
  const replyTo = readReplyTarget(parseJson(row.reply_to));
  const wait = row.waiting_for === null ? null : parseJson(row.waiting_for);
  const waitingFor = isJobWait(wait) ? wait : null;
  const errors = parseJson(row.errors);
  let problem: string | null = null;
  if (replyTo === null) problem = `reply_to ${JSON.stringify(row.reply_to)} is not a reply target`;
  if (row.mode !== "chat" && row.mode !== "job")
    problem = `mode ${JSON.stringify(row.mode)} is not chat or job`;
  const job: Job = {
    id: row.id,
    agentId: row.agent_id,
    sessionKey: row.session_key,
    sessionId: row.session_id,
    message: row.message,
    checkpointed: Boolean(row.checkpointed),
    attachments: parseAttachments(row.attachments),
    task: row.task === "compact" ? "compact" : "turn",
    mode: row.mode === "job" ? "job" : "chat",
    replyTo: replyTo ?? SILENT,
    state: visibleState(row),
    attempts: row.attempts,
    maxAttempts: row.max_attempts,
    runAt: row.run_at,
    lockedBy: row.locked_by,
    lockedAt: row.locked_at,
    lastError: row.last_error,
    errors: Array.isArray(errors) ? (errors as JobAttemptError[]) : [],
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    waitingFor,
    parentId: row.parent_id,
    stopRequested: Boolean(row.stop_requested),
    toolResults: parseToolResults(row.tool_results),
    batch: Boolean(row.batch),
    batchStep: parseBatchStep(row.batch_step),
    sender: parseSender(row.sender),
    model: row.model ?? null,
  };
  return { job, problem };
}

/** A row's state as shown: {@link VISIBLE_STATE}; `failed` for a state no job has. */
function visibleState(row: JobRow): JobState {
  if (!STORED_STATES.has(row.state)) return "failed";
  if (row.state === "queued" && row.waiting_for !== null) return "waiting";
  if (row.state === "failed" && row.stop_requested) return "stopped";
  return row.state as JobState;
}

/** The batch step of a row; null when there is none or the column holds something else. */
function parseBatchStep(text: string | null): BatchStep | null {
  const parsed = text === null ? null : parseJson(text);
  return isBatchStep(parsed) ? parsed : null;
}

/** The sender of a row; null when there is none or the column holds something else. */
function parseSender(text: string | null): JobSender | null {
  const parsed = text === null ? null : parseJson(text);
  return isJobSender(parsed) ? parsed : null;
}

/** The kept tool results of a row; nothing when the column holds something else. */
/** The attachments of a row: those with a kind and a source; none when the column holds something else. */
function parseAttachments(text: string | undefined): ChatAttachment[] {
  const parsed = text === undefined ? [] : parseJson(text);
  if (!Array.isArray(parsed)) return [];
  return parsed.filter(
    (item): item is ChatAttachment =>
      typeof item === "object" &&
      item !== null &&
      typeof (item as ChatAttachment).kind === "string" &&
      typeof (item as ChatAttachment).source === "string",
  );
}

function parseToolResults(text: string): ToolResultBlock[] {
  const parsed = parseJson(text);
  if (!Array.isArray(parsed)) return [];
  return parsed.filter(
    (block): block is ToolResultBlock =>
      typeof block === "object" &&
      block !== null &&
      (block as ToolResultBlock).type === "tool_result" &&
      typeof (block as ToolResultBlock).tool_use_id === "string" &&
      typeof (block as ToolResultBlock).content === "string",
  );
}

/** Parses stored JSON; undefined when it is not JSON (a row edited by hand). */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The rows a claim took, split into sound jobs (oldest first) and rows to fail. */
export interface ClaimedRows {
  claimed: ClaimedJob[];
  /** Rows that cannot run, with the error to fail them with. */
  malformed: { seq: number; error: string }[];
}

/** Orders a claim's rows (a statement may return them in any order) and checks each. */
export function splitClaimedRows(rows: JobRow[]): ClaimedRows {
  rows.sort((a, b) => a.run_at - b.run_at || a.seq - b.seq);
  const result: ClaimedRows = { claimed: [], malformed: [] };
  for (const row of rows) {
    const { job, problem } = parseJobRow(row);
    if (problem === null) result.claimed.push({ ...job, lockToken: row.lock_token ?? "" });
    else result.malformed.push({ seq: row.seq, error: `malformed job: ${problem}` });
  }
  return result;
}
