/**
 * The SQL of the SQLite queue and the one mapping from a `jobs` row to a {@link Job}
 * (schema: migrations/sqlite/002_queue.sql).
 */
import type { Job, JobAttemptError, JobState, ReplyTarget } from "../ports.js";
import { isReplyTarget } from "./job.js";

/** A row of the `jobs` table, as better-sqlite3 returns it. */
export interface JobRow {
  seq: number;
  id: string;
  agent_id: string;
  session_key: string;
  session_id: string | null;
  message: string;
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
}

/** A row read back: the job, and what is wrong with the row if it was edited badly. */
export interface ParsedRow {
  job: Job;
  /** Why the job cannot run (a malformed column), or null when the row is sound. */
  problem: string | null;
}

const STATES = new Set<string>(["queued", "running", "done", "failed"]);
const SILENT: ReplyTarget = { kind: "silent" };

/**
 * Maps a row to a job. Never throws: a row edited into nonsense still lists (with safe
 * stand-ins) and `problem` says what is wrong, so a claim can fail that job on the spot.
 */
export function parseJobRow(row: JobRow): ParsedRow {
  const replyTo = parseJson(row.reply_to);
  const errors = parseJson(row.errors);
  let problem: string | null = null;
  if (!isReplyTarget(replyTo))
    problem = `reply_to ${JSON.stringify(row.reply_to)} is not a reply target`;
  if (row.mode !== "chat" && row.mode !== "job")
    problem = `mode ${JSON.stringify(row.mode)} is not chat or job`;
  const job: Job = {
    id: row.id,
    agentId: row.agent_id,
    sessionKey: row.session_key,
    sessionId: row.session_id,
    message: row.message,
    mode: row.mode === "job" ? "job" : "chat",
    replyTo: isReplyTarget(replyTo) ? replyTo : SILENT,
    state: (STATES.has(row.state) ? row.state : "failed") as JobState,
    attempts: row.attempts,
    maxAttempts: row.max_attempts,
    runAt: row.run_at,
    lockedBy: row.locked_by,
    lockedAt: row.locked_at,
    lastError: row.last_error,
    errors: Array.isArray(errors) ? (errors as JobAttemptError[]) : [],
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
  return { job, problem };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Appends `{ attempt: attempts, at: @now, message: @error }` to the errors column. */
const APPEND_ERROR = `json_insert(errors, '$[#]', json_object('attempt', attempts, 'at', @now, 'message', @error))`;

/** Where a fenced change applies: the job, still running under the caller's lock token. */
const FENCE = "id = @id AND lock_token = @token AND state = 'running'";

/** Clears the lock of a job leaving the running state. */
const UNLOCK = "locked_by = NULL, locked_at = NULL, lock_token = NULL";

/** Stands for the limit in {@link SQL.claim}; see {@link claimSql}. */
const CLAIM_LIMIT = "CLAIM_LIMIT";

/** Largest number of jobs one claim takes. */
export const MAX_CLAIM = 1000;

/** The claim statement for `limit` jobs (a whole number from 1 to {@link MAX_CLAIM}). */
export function claimSql(limit: number): string {
  return SQL.claim.replace(CLAIM_LIMIT, String(limit));
}

/** Every statement of the queue but the claim, prepared once per adapter. */
export const SQL = {
  insert: `INSERT INTO jobs (id, agent_id, session_key, session_id, message, mode, reply_to,
      state, max_attempts, run_at, dedupe_key, created_at, updated_at)
    VALUES (@id, @agentId, @sessionKey, @sessionId, @message, @mode, @replyTo,
      'queued', @maxAttempts, @runAt, @dedupeKey, @now, @now)
    ON CONFLICT (dedupe_key) WHERE dedupe_key IS NOT NULL DO NOTHING`,
  byDedupeKey: "SELECT * FROM jobs WHERE dedupe_key = ?",
  byId: "SELECT * FROM jobs WHERE id = ?",
  // The job before a candidate in its line must be finished: see 002_queue.sql.
  // (CASE rather than IN: an IN list costs a temporary table per evaluation.)
  // LIMIT is a literal, one statement per limit: SQLite re-prepares a statement on every
  // call when a bound LIMIT shapes the plan, which cost more than the claim itself.
  claim: `UPDATE jobs SET state = 'running', attempts = attempts + 1, locked_by = @worker,
      locked_at = @now, lock_token = @token || '.' || seq, updated_at = @now
    WHERE seq IN (
      SELECT j.seq FROM jobs j
      WHERE j.state = 'queued' AND j.run_at <= @now
        AND (@agents IS NULL
          OR EXISTS (SELECT 1 FROM json_each(@agents) WHERE json_each.value = j.agent_id))
        AND CASE (SELECT p.state FROM jobs p
            WHERE p.session_key = j.session_key AND p.seq < j.seq
            ORDER BY p.seq DESC LIMIT 1)
          WHEN 'queued' THEN 0 WHEN 'running' THEN 0 ELSE 1 END
      ORDER BY j.run_at, j.seq
      LIMIT ${CLAIM_LIMIT})
    RETURNING *`,
  checkpoint: `UPDATE jobs SET session_id = @sessionId, message = '.', updated_at = @now
    WHERE ${FENCE}`,
  complete: `UPDATE jobs SET state = 'done', ${UNLOCK}, updated_at = @now WHERE ${FENCE}`,
  retry: `UPDATE jobs SET state = 'queued', run_at = @retryAt, last_error = @error,
      errors = ${APPEND_ERROR}, ${UNLOCK}, updated_at = @now
    WHERE ${FENCE}`,
  fail: `UPDATE jobs SET state = 'failed', last_error = @error, errors = ${APPEND_ERROR},
      ${UNLOCK}, updated_at = @now
    WHERE ${FENCE}`,
  failMalformed: `UPDATE jobs SET state = 'failed', last_error = @error, errors = ${APPEND_ERROR},
      ${UNLOCK}, updated_at = @now
    WHERE seq = @seq`,
  recover: `UPDATE jobs SET state = 'queued', last_error = @error, errors = ${APPEND_ERROR},
      ${UNLOCK}, updated_at = @now
    WHERE state = 'running' AND locked_by = @worker`,
  // A retried job goes to the back of its session's line, keeping the line's shape.
  retryFailed: `UPDATE jobs SET state = 'queued', attempts = 0, run_at = @now, updated_at = @now,
      seq = (SELECT max(seq) + 1 FROM jobs)
    WHERE id = @id AND state = 'failed'`,
  nextDueAt: "SELECT min(run_at) FROM jobs WHERE state = 'queued' AND run_at > ?",
  list: `SELECT * FROM jobs WHERE @state IS NULL OR state = @state ORDER BY seq DESC LIMIT @limit`,
  counts: "SELECT state, count(*) AS count FROM jobs GROUP BY state",
} as const;
