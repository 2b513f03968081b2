/**
 * The SQL of the PostgreSQL queue (schema: migrations/postgres/001_queue.sql). Positional
 * parameters are named in the comment above each statement.
 */
import { RESUME_MARKER } from "../../ports/index.js";
import { VISIBLE_STATE } from "../job-row.js";

/** The channel `pg_notify` wakes idle processes on; the payload is the job's run time. */
export const JOBS_CHANNEL = "picklebot_jobs";

/** Appends `{ attempt, at, message }` to the errors column; `$at` and `$message` given. */
function appendError(at: string, message: string): string {
  return `(errors::jsonb || jsonb_build_array(jsonb_build_object(
      'attempt', attempts, 'at', ${at}::bigint, 'message', ${message}::text)))::text`;
}

/** Where a fenced change applies: the job, still running under the caller's lock token. */
const FENCE = "id = $1 AND lock_token = $2 AND state = 'running'";

/** Clears the lock of a job leaving the running state. */
const UNLOCK = "locked_by = NULL, locked_at = NULL, lock_token = NULL";

/**
 * Wakes the other processes when a finished job (`finished` with `session_key` and `seq`)
 * frees a queued job of its session: one notification per statement at most.
 */
const NOTIFY_FREED = (finished: string) => `(SELECT count(*) FROM (
    SELECT pg_notify('${JOBS_CHANNEL}', '') FROM ${finished} f
    WHERE EXISTS (SELECT 1 FROM jobs n WHERE n.session_key = f.session_key
      AND n.seq > f.seq AND n.state = 'queued')
    LIMIT 1) woken)`;

/**
 * Makes the statement's commit asynchronous (`synchronous_commit = off` for its own
 * transaction only). Used for claims and completions, the hot path: a PostgreSQL crash
 * may forget the last few hundred milliseconds of them, which only runs those jobs again
 * (as after a process crash), the same trade SQLite mode makes with `history.synchronous:
 * normal` (its default is `full`).
 * Enqueues, failures and checkpoints keep the default: durable before they resolve.
 */
const ASYNC_COMMIT = "(SELECT set_config('synchronous_commit', 'off', true)) async_commit";

/** The job before `job` in its session's line is finished (or there is none). */
const LINE_FREE = (job: string) => `coalesce((SELECT p.state FROM jobs p
      WHERE p.session_key = ${job}.session_key AND p.seq < ${job}.seq
      ORDER BY p.seq DESC LIMIT 1), 'done') IN ('done', 'failed')`;

/**
 * Another job of `job`'s agent could be claimed right now ($11: now). Then no process that
 * can run the agent is idle (it would be claiming that job), so a new job need not wake
 * anyone: it is claimed when a worker comes back for more. Skipping those notifications
 * matters under load: PostgreSQL serializes the commits of notifying transactions.
 */
const CLAIMABLE_OF_AGENT = (job: string) => `EXISTS (SELECT 1 FROM jobs c
    WHERE c.state = 'queued' AND c.run_at <= $11 AND c.agent_id = ${job}.agent_id
      AND ${LINE_FREE("c")})`;

/** A parked job (see job-row.ts), as `p`. */
const WAITING = "state = 'queued' AND waiting_for IS NOT NULL";

/**
 * A CTE named `woke`: the waiting parents of the jobs in `ended` (with `parent_id`) made
 * due at `now`, so they look again at their children.
 */
const WAKE_PARENTS = (ended: string, now: string) => `woke AS (
      UPDATE jobs p SET run_at = LEAST(p.run_at, ${now}), waiting_for = NULL, updated_at = ${now}
      FROM ${ended} e WHERE p.id = e.parent_id AND p.state = 'queued' AND p.waiting_for IS NOT NULL
      RETURNING p.id)`;

/** Wakes the other processes when `woke` (see {@link WAKE_PARENTS}) made a parent due. */
const NOTIFY_WOKE = `(SELECT count(*) FROM (SELECT pg_notify('${JOBS_CHANNEL}', '')
      WHERE EXISTS (SELECT 1 FROM woke)) parents)`;

/**
 * Requeues, due at once, the running jobs `where` picks ($1), recording the interrupted
 * attempt ($2 error, $3 now); counts them and wakes the workers when there were any.
 */
function requeueRunning(where: string): string {
  return countRequeued(`UPDATE jobs SET state = 'queued', run_at = LEAST(run_at, $3), last_error = $2,
        errors = ${appendError("$3", "$2")}, ${UNLOCK}, updated_at = $3
      WHERE state = 'running' AND ${where}
      RETURNING id`);
}

/** Counts the ids `requeue` returns and wakes the workers when there were any. */
function countRequeued(requeue: string): string {
  return `WITH requeued AS (${requeue})
    SELECT count(*)::integer AS count,
      (SELECT count(*) FROM (SELECT pg_notify('${JOBS_CHANNEL}', '')
        WHERE EXISTS (SELECT 1 FROM requeued)) woken) AS woken
    FROM requeued`;
}

export const PG = {
  // $1 id, $2 agent, $3 session key, $4 session id, $5 message, $6 mode, $7 reply_to,
  // $8 max attempts, $9 run_at, $10 dedupe key, $11 now, $12 task, $13 parent id, $14 batch,
  // $15 sender, $16 model, $17 attachments.
  // The advisory lock on the session key is taken before the seq is drawn (OFFSET 0 keeps
  // the subquery, and so the lock, ahead of the insert); ON CONFLICT without a target also
  // covers the id, so a repeated enqueue after a lost connection stores nothing twice.
  enqueue: `WITH inserted AS (
      INSERT INTO jobs (id, agent_id, session_key, session_id, message, mode, reply_to, state,
        max_attempts, run_at, dedupe_key, created_at, updated_at, task, parent_id, batch, sender,
        model, attachments)
      SELECT $1, $2, $3, $4, $5, $6, $7, 'queued', $8, $9, $10, $11, $11, $12, $13, $14, $15,
        $16, $17
      FROM (SELECT pg_advisory_xact_lock(hashtext($3)) OFFSET 0) session_lock
      ON CONFLICT DO NOTHING
      RETURNING *)
    SELECT inserted.*, (SELECT pg_notify('${JOBS_CHANNEL}', inserted.run_at::text)
      WHERE inserted.run_at > $11 OR (${LINE_FREE("inserted")} AND NOT ${CLAIMABLE_OF_AGENT("inserted")})
    ) AS notified
    FROM inserted`,
  byId: "SELECT * FROM jobs WHERE id = $1",
  byDedupeKey: "SELECT * FROM jobs WHERE dedupe_key = $1",
  // $1 worker, $2 now, $3 token prefix, $4 agent ids (null: any), $5 limit.
  claim: `UPDATE jobs j SET state = 'running', attempts = j.attempts + 1, locked_by = $1,
      locked_at = $2, lock_token = $3 || '.' || j.seq, waiting_for = NULL, updated_at = $2
    FROM (
      SELECT c.seq FROM jobs c
      WHERE c.state = 'queued' AND c.run_at <= $2
        AND ($4::text[] IS NULL OR c.agent_id = ANY ($4::text[]))
        AND ${LINE_FREE("c")}
      ORDER BY c.run_at, c.seq
      LIMIT $5
      FOR UPDATE OF c SKIP LOCKED) picked, ${ASYNC_COMMIT}
    WHERE j.seq = picked.seq
    RETURNING j.*`,
  // $1 token prefix: the rows a claim took, when its reply was lost with the connection.
  claimedBy: `SELECT * FROM jobs WHERE state = 'running' AND lock_token LIKE $1 || '.%'`,
  // $1 seq, $2 error, $3 now.
  failMalformed: `UPDATE jobs SET state = 'failed', last_error = $2, errors = ${appendError("$3", "$2")},
      ${UNLOCK}, updated_at = $3
    WHERE seq = $1`,
  // $1 id, $2 token, $3 session id, $4 now.
  checkpoint: `UPDATE jobs SET session_id = $3, message = '${RESUME_MARKER}', checkpointed = TRUE,
    updated_at = $4 WHERE ${FENCE}`,
  // $1 ids, $2 tokens, $3 now: a group of completions in one statement.
  complete: `WITH done AS (
      UPDATE jobs j SET state = 'done', ${UNLOCK}, updated_at = $3
      FROM unnest($1::text[], $2::text[]) AS c(id, token), ${ASYNC_COMMIT}
      WHERE j.id = c.id AND j.lock_token = c.token AND j.state = 'running'
      RETURNING j.id, j.session_key, j.seq, j.parent_id),
    ${WAKE_PARENTS("done", "$3")}
    SELECT done.id, ${NOTIFY_FREED("done")} AS woken, ${NOTIFY_WOKE} AS parents FROM done`,
  // $1 id, $2 token, $3 error, $4 now, $5 retry at.
  retry: `UPDATE jobs SET state = 'queued', run_at = $5, last_error = $3,
      errors = ${appendError("$4", "$3")}, attempts = attempts - $6, ${UNLOCK}, updated_at = $4
    WHERE ${FENCE}`,
  // $1 id, $2 token, $3 error, $4 now, $5 stopped (a stopped job is stored as failed with
  // stop_requested set: see job-row.ts).
  fail: `WITH failed AS (
      UPDATE jobs SET state = 'failed', last_error = $3, errors = ${appendError("$4", "$3")},
        stop_requested = $5, ${UNLOCK}, updated_at = $4
      WHERE ${FENCE}
      RETURNING session_key, seq, parent_id),
    ${WAKE_PARENTS("failed", "$4")}
    SELECT ${NOTIFY_FREED("failed")} AS woken, ${NOTIFY_WOKE} AS parents FROM failed`,
  // $1 id, $2 token, $3 wait (JSON), $4 until, $5 now, $6 tool results (JSON). The attempt
  // is given back: parking is no failure. The notification tells idle processes when it is
  // due at the latest.
  park: `UPDATE jobs SET state = 'queued', run_at = $4::bigint, waiting_for = $3,
      tool_results = $6, attempts = attempts - 1,
      ${UNLOCK}, updated_at = $5
    WHERE ${FENCE}
    RETURNING pg_notify('${JOBS_CHANNEL}', $4::bigint::text) AS notified`,
  // $1 id, $2 token, $3 step (JSON), $4 now.
  recordBatchStep: `UPDATE jobs SET batch_step = $3, updated_at = $4 WHERE ${FENCE}`,
  // $1 id, $2 now.
  wake: `UPDATE jobs SET run_at = LEAST(run_at, $2), waiting_for = NULL, updated_at = $2
    WHERE id = $1 AND ${WAITING}
    RETURNING pg_notify('${JOBS_CHANNEL}', '') AS notified`,
  // $1 id, $2 now.
  requestStop: `UPDATE jobs SET stop_requested = TRUE, run_at = LEAST(run_at, $2), waiting_for = NULL,
      updated_at = $2
    WHERE id = $1 AND state = 'queued'
    RETURNING pg_notify('${JOBS_CHANNEL}', '') AS notified`,
  // $1 worker ids, $2 error, $3 now: requeues, due at once, what those workers left running.
  // Through the function of migration 009, which lets an instance role requeue only its
  // own jobs and those of dead instances (the row-level policies let it change neither).
  recover: countRequeued(
    "SELECT picklebot_recover_jobs AS id FROM picklebot_recover_jobs($1::text[], $2, $3)",
  ),
  // $1 id or null, $2 error, $3 now.
  requeueRunning: requeueRunning("($1::text IS NULL OR id = $1)"),
  // $1 id, $2 now. A retried job goes to the back of its session's line.
  retryFailed: `UPDATE jobs SET state = 'queued', attempts = 0, run_at = $2, updated_at = $2,
      seq = nextval(pg_get_serial_sequence('jobs', 'seq'))
    WHERE id = $1 AND state = 'failed' AND NOT stop_requested
    RETURNING pg_notify('${JOBS_CHANNEL}', '') AS notified`,
  // $1 now.
  nextDueAt: "SELECT min(run_at) AS at FROM jobs WHERE state = 'queued' AND run_at > $1",
  // $1 state or null, $2 limit, $3 parent id or null, $4 session key or null, $5 its prefix or null.
  list: `SELECT * FROM jobs
    WHERE ($1::text IS NULL OR ${VISIBLE_STATE} = $1) AND ($3::text IS NULL OR parent_id = $3)
      AND ($4::text IS NULL OR session_key = $4)
      AND ($5::text IS NULL OR starts_with(session_key, $5))
    ORDER BY seq DESC LIMIT $2`,
  counts: `SELECT ${VISIBLE_STATE} AS state, count(*)::integer AS count FROM jobs GROUP BY 1`,
  // $1 cutoff (epoch ms), $2 batch size: finished jobs last changed before the cutoff.
  prune: `DELETE FROM jobs WHERE seq IN (
      SELECT seq FROM jobs WHERE state IN ('done', 'failed') AND updated_at < $1 LIMIT $2)`,
} as const;
