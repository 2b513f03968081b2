/** The SQL of the SQLite queue (schema: migrations/sqlite/002_queue.sql). */
import { RESUME_MARKER } from "../../ports/index.js";
import { VISIBLE_STATE } from "../job-row.js";

/** Appends `{ attempt: attempts, at: @now, message: @error }` to the errors column. */
const APPEND_ERROR = `json_insert(errors, '$[#]', json_object('attempt', attempts, 'at', @now, 'message', @error))`;

/** Where a fenced change applies: the job, still running under the caller's lock token. */
const FENCE = "id = @id AND lock_token = @token AND state = 'running'";

/** A parked job (see job-row.ts). */
const WAITING = "state = 'queued' AND waiting_for IS NOT NULL";

/** Clears the lock of a job leaving the running state. */
const UNLOCK = "locked_by = NULL, locked_at = NULL, lock_token = NULL";

/** Stands for the limit in {@link SQL.claim}; see {@link claimSql}. */
const CLAIM_LIMIT = "CLAIM_LIMIT";

/** The claim statement for `limit` jobs (a whole number from 1 to `MAX_CLAIM`). */
export function claimSql(limit: number): string {
  return SQL.claim.replace(CLAIM_LIMIT, String(limit));
}

/** Every statement of the queue but the claim, prepared once per adapter. */
/** Requeues, due at once, the running jobs `where` picks, recording the interrupted attempt. */
function requeueRunning(where: string): string {
  return `UPDATE jobs SET state = 'queued', last_error = @error, errors = ${APPEND_ERROR},
      ${UNLOCK}, updated_at = @now
    WHERE state = 'running' AND ${where}`;
}

export const SQL = {
  insert: `INSERT INTO jobs (id, agent_id, session_key, session_id, message, mode, reply_to,
      state, max_attempts, run_at, dedupe_key, task, parent_id, batch, sender, model, attachments,
      created_at, updated_at)
    VALUES (@id, @agentId, @sessionKey, @sessionId, @message, @mode, @replyTo,
      'queued', @maxAttempts, @runAt, @dedupeKey, @task, @parentId, @batch, @sender, @model,
      @attachments, @now,
      @now)
    ON CONFLICT (dedupe_key) WHERE dedupe_key IS NOT NULL DO NOTHING`,
  byDedupeKey: "SELECT * FROM jobs WHERE dedupe_key = ?",
  byId: "SELECT * FROM jobs WHERE id = ?",
  // The job before a candidate in its line must be finished: see 002_queue.sql.
  // (CASE rather than IN: an IN list costs a temporary table per evaluation.)
  // LIMIT is a literal, one statement per limit: SQLite re-prepares a statement on every
  // call when a bound LIMIT shapes the plan, which cost more than the claim itself.
  claim: `UPDATE jobs SET state = 'running', attempts = attempts + 1, locked_by = @worker,
      locked_at = @now, lock_token = @token || '.' || seq, waiting_for = NULL, updated_at = @now
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
  checkpoint: `UPDATE jobs SET session_id = @sessionId, message = '${RESUME_MARKER}', checkpointed = 1, updated_at = @now
    WHERE ${FENCE}`,
  complete: `UPDATE jobs SET state = 'done', ${UNLOCK}, updated_at = @now WHERE ${FENCE}`,
  retry: `UPDATE jobs SET state = 'queued', run_at = @retryAt, last_error = @error,
      errors = ${APPEND_ERROR}, attempts = attempts - @refund, ${UNLOCK}, updated_at = @now
    WHERE ${FENCE}`,
  // A stopped job is stored as failed with stop_requested set (see job-row.ts).
  fail: `UPDATE jobs SET state = 'failed', last_error = @error, errors = ${APPEND_ERROR},
      stop_requested = @stopped, ${UNLOCK}, updated_at = @now
    WHERE ${FENCE}`,
  // The attempt is given back: parking is no failure.
  park: `UPDATE jobs SET state = 'queued', run_at = @until, waiting_for = @wait, tool_results = @results,
      attempts = attempts - 1, ${UNLOCK}, updated_at = @now
    WHERE ${FENCE}`,
  recordBatchStep: `UPDATE jobs SET batch_step = @step, updated_at = @now WHERE ${FENCE}`,
  wake: `UPDATE jobs SET run_at = min(run_at, @now), waiting_for = NULL, updated_at = @now
    WHERE id = @id AND ${WAITING}`,
  // After a job ended: its parent, if it waits, looks again.
  wakeParent: `UPDATE jobs SET run_at = min(run_at, @now), waiting_for = NULL, updated_at = @now
    WHERE id = (SELECT parent_id FROM jobs WHERE id = @id) AND ${WAITING}`,
  requestStop: `UPDATE jobs SET stop_requested = 1, run_at = min(run_at, @now), waiting_for = NULL,
      updated_at = @now
    WHERE id = @id AND state = 'queued'`,
  failMalformed: `UPDATE jobs SET state = 'failed', last_error = @error, errors = ${APPEND_ERROR},
      ${UNLOCK}, updated_at = @now
    WHERE seq = @seq`,
  recover: requeueRunning("locked_by = @worker"),
  requeueRunning: requeueRunning("(@id IS NULL OR id = @id)"),
  // A retried job goes to the back of its session's line, keeping the line's shape.
  retryFailed: `UPDATE jobs SET state = 'queued', attempts = 0, run_at = @now, updated_at = @now,
      seq = (SELECT max(seq) + 1 FROM jobs)
    WHERE id = @id AND state = 'failed' AND stop_requested = 0`,
  nextDueAt: "SELECT min(run_at) FROM jobs WHERE state = 'queued' AND run_at > ?",
  list: `SELECT * FROM jobs
    WHERE (@state IS NULL OR ${VISIBLE_STATE} = @state) AND (@parentId IS NULL OR parent_id = @parentId)
      AND (@sessionKey IS NULL OR session_key = @sessionKey)
      AND (@sessionKeyPrefix IS NULL OR substr(session_key, 1, length(@sessionKeyPrefix)) = @sessionKeyPrefix)
    ORDER BY seq DESC LIMIT @limit`,
  counts: `SELECT ${VISIBLE_STATE} AS state, count(*) AS count FROM jobs GROUP BY 1`,
  // Finished jobs last changed before the cutoff. No index: old rows come first in seq
  // order, so each batch finds its rows at the start of the table.
  prune: `DELETE FROM jobs WHERE seq IN (
    SELECT seq FROM jobs WHERE (state = 'done' OR state = 'failed') AND updated_at < @cutoff
    LIMIT @batch)`,
} as const;
