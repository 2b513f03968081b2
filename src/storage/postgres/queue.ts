/**
 * The PostgreSQL job queue (`queue.backend: postgres`): one `jobs` table shared by every
 * picklebot process of a cluster, with the same semantics as the SQLite queue.
 *
 * - A claim is one `UPDATE … FROM (SELECT … FOR UPDATE SKIP LOCKED)`: concurrent claims
 *   from many processes skip each other's rows instead of waiting, and a job is a
 *   candidate only when the job before it in its session's line is finished, so a
 *   session runs one job at a time across the whole cluster.
 * - Every change after a claim is fenced by the claim's lock token.
 * - An enqueue calls `pg_notify` in its own statement, so the notification is delivered
 *   only once the job is committed; a dedicated LISTEN connection (reconnecting) and a
 *   backstop poll feed `onRunnable`.
 * - Completions requested in the same tick share one statement.
 * - A lost connection is retried on a new one wherever repeating is safe (see
 *   `retryOnDisconnect`); a claim whose reply was lost finds its rows by its lock token.
 */

import type pg from "pg";
import { systemClock } from "../../base/clock.js";
import { PicklebotError } from "../../base/errors.js";
import { checkNumberOptions } from "../../base/options.js";
import {
  type BatchStep,
  type ClaimedJob,
  type Clock,
  DEFAULT_MAX_ATTEMPTS,
  type FailOptions,
  JOB_LIST_LIMIT,
  type Job,
  type JobAdmin,
  type JobFilter,
  type JobQueue,
  type JobState,
  type NewJob,
  type Parking,
  PRUNE_BATCH,
} from "../../ports/index.js";
import {
  emptyCounts,
  INTERRUPTED_MESSAGE,
  LockTokens,
  newJobId,
  queuedJob,
  validateNewJob,
} from "../job.js";
import { type JobRow, MAX_CLAIM, parseJobRow, splitClaimedRows } from "../job-row.js";
import { listLimit } from "../list-limit.js";
import { RunnableSignal } from "../runnable.js";
import { isConnectionError, newPool, retryOnDisconnect } from "./database.js";
import { PgListener } from "./listener.js";
import { JOBS_CHANNEL, PG } from "./queue-sql.js";

/** Options of {@link PostgresJobQueue}. */
export interface PostgresJobQueueOptions {
  /** The pool from `openPostgres` (migrated); the queue never closes it. */
  pool: pg.Pool;
  /**
   * Settings for the queue's own connections: the LISTEN connection, and two connections
   * for claims and completions, so that a burst of enqueues on `pool` cannot starve the
   * workers. Without them everything uses `pool` and only the backstop poll wakes listeners.
   */
  connection?: pg.ClientConfig;
  /** (Default: the system clock) */
  clock?: Clock;
  /** Id of a new job. (Default: a time-ordered id, see `newJobId`) */
  newId?: () => string;
  /** Attempts of a job whose producer names none. (Default: {@link DEFAULT_MAX_ATTEMPTS}) */
  defaultMaxAttempts?: number;
  /** How often listeners are woken in case a notification was lost. (Default: 2000 ms) */
  backstopPollMs?: number;
  /** Told when the LISTEN connection is lost (it reconnects on its own). */
  onListenError?: (error: Error) => void;
}

/** A completion waiting for the statement it shares with others. */
interface PendingCompletion {
  job: ClaimedJob;
  resolve: (done: boolean) => void;
  reject: (error: unknown) => void;
}

/** The durable job queue on PostgreSQL, for any number of processes. */
export class PostgresJobQueue implements JobQueue, JobAdmin {
  readonly #pool: pg.Pool;
  /** Claims and completions: `pool`, or the queue's own small pool. */
  readonly #workPool: pg.Pool;
  readonly #options: PostgresJobQueueOptions;
  readonly #clock: Clock;
  readonly #newId: () => string;
  readonly #defaultMaxAttempts: number;
  readonly #signal: RunnableSignal;
  readonly #lockTokens = new LockTokens();
  #pendingCompletions: PendingCompletion[] = [];
  readonly #flushing = new Set<Promise<void>>();
  #listener: PgListener | null = null;
  #poll: NodeJS.Timeout | null = null;

  constructor(options: PostgresJobQueueOptions) {
    checkNumberOptions("PostgresJobQueue", options, { defaultMaxAttempts: "count" });
    this.#pool = options.pool;
    this.#workPool = options.connection ? openWorkPool(options.connection) : options.pool;
    this.#options = options;
    this.#clock = options.clock ?? systemClock;
    this.#newId = options.newId ?? newJobId;
    this.#defaultMaxAttempts = options.defaultMaxAttempts ?? DEFAULT_MAX_ATTEMPTS;
    this.#signal = new RunnableSignal({
      clock: this.#clock,
      // Scheduled jobs are found asynchronously: see #wakeForScheduled.
      nextDueAt: () => null,
      onActiveChange: (active) => this.#watchOtherProcesses(active),
    });
  }

  async enqueue(newJob: NewJob): Promise<Job> {
    validateNewJob(newJob);
    const now = this.#clock.now();
    const job = queuedJob(newJob, this.#newId(), now, this.#defaultMaxAttempts);
    const params = [
      job.id,
      job.agentId,
      job.sessionKey,
      job.sessionId,
      job.message,
      job.mode,
      JSON.stringify(job.replyTo),
      job.maxAttempts,
      job.runAt,
      newJob.dedupeKey ?? null,
      now,
      job.task,
      job.parentId,
      job.batch,
      job.sender && JSON.stringify(job.sender),
      job.model,
      JSON.stringify(job.attachments),
    ];
    const row = await retryOnDisconnect(async () => {
      const inserted = await this.#pool.query<JobRow>(prepared("enqueue", params));
      if (inserted.rows[0]) return inserted.rows[0];
      // A conflict: the dedupe key's first job, or this very job from a lost reply.
      const existing = newJob.dedupeKey
        ? await this.#pool.query<JobRow>(PG.byDedupeKey, [newJob.dedupeKey])
        : await this.#pool.query<JobRow>(PG.byId, [job.id]);
      if (!existing.rows[0]) {
        throw new PicklebotError(`job ${job.id} vanished during enqueue`, { retryable: true });
      }
      return existing.rows[0];
    });
    const stored = parseJobRow(row).job;
    if (stored.id === job.id) this.#signal.wakeAt(stored.runAt);
    return stored;
  }

  async claim(
    workerId: string,
    limit: number,
    options: { agentIds?: string[] } = {},
  ): Promise<ClaimedJob[]> {
    if (!(limit >= 1)) return [];
    const now = this.#clock.now();
    const token = this.#lockTokens.nextClaim();
    const params = [
      workerId,
      now,
      token,
      options.agentIds ?? null,
      Math.min(MAX_CLAIM, Math.floor(limit)),
    ];
    const { claimed, malformed } = splitClaimedRows(await this.#claimRows(params, token));
    for (const { seq, error } of malformed) {
      await retryOnDisconnect(() => this.#pool.query(PG.failMalformed, [seq, error, now]));
    }
    return claimed;
  }

  /** {@link checkpoint} on a connection inside the caller's transaction. */
  async checkpointOn(
    client: pg.ClientBase | pg.Pool,
    job: ClaimedJob,
    sessionId: string,
  ): Promise<boolean> {
    const params = [job.id, job.lockToken, sessionId, this.#clock.now()];
    return ((await client.query(PG.checkpoint, params)).rowCount ?? 0) > 0;
  }

  async checkpoint(job: ClaimedJob, sessionId: string): Promise<boolean> {
    return retryOnDisconnect(() => this.checkpointOn(this.#pool, job, sessionId));
  }

  /** Marks the job done; completions requested in the same tick share one statement. */
  complete(job: ClaimedJob): Promise<boolean> {
    return new Promise((resolve, reject) => {
      this.#pendingCompletions.push({ job, resolve, reject });
      if (this.#pendingCompletions.length === 1) {
        queueMicrotask(() => {
          const flush = this.#flushCompletions();
          this.#flushing.add(flush);
          void flush.finally(() => this.#flushing.delete(flush));
        });
      }
    });
  }

  /** Records the failed attempt: requeued at `retryAt`, or failed for good when null. */
  async fail(
    job: ClaimedJob,
    error: string,
    retryAt: number | null,
    options: FailOptions = {},
  ): Promise<boolean> {
    return retryOnDisconnect(() => this.failOn(this.#pool, job, error, retryAt, options));
  }

  /** {@link fail} on a connection inside the caller's transaction. */
  async failOn(
    client: pg.ClientBase | pg.Pool,
    job: ClaimedJob,
    error: string,
    retryAt: number | null,
    options: FailOptions = {},
  ): Promise<boolean> {
    const fence = [job.id, job.lockToken, error, this.#clock.now()];
    const result =
      retryAt === null
        ? await client.query(PG.fail, [...fence, options.stopped === true])
        : await client.query(PG.retry, [...fence, retryAt, options.transient ? 1 : 0]);
    if ((result.rowCount ?? 0) === 0) return false;
    if (retryAt === null) this.#signal.notify();
    else this.#signal.wakeAt(retryAt);
    return true;
  }

  async recordBatchStep(job: ClaimedJob, step: BatchStep): Promise<boolean> {
    const params = [job.id, job.lockToken, JSON.stringify(step), this.#clock.now()];
    const result = await retryOnDisconnect(() => this.#pool.query(PG.recordBatchStep, params));
    return (result.rowCount ?? 0) > 0;
  }

  async park(job: ClaimedJob, { wait, until, toolResults }: Parking): Promise<boolean> {
    const params = [
      job.id,
      job.lockToken,
      JSON.stringify(wait),
      until,
      this.#clock.now(),
      JSON.stringify(toolResults),
    ];
    const result = await retryOnDisconnect(() => this.#pool.query(PG.park, params));
    const parked = (result.rowCount ?? 0) > 0;
    if (parked) this.#signal.wakeAt(until);
    return parked;
  }

  async wake(id: string): Promise<boolean> {
    return this.#makeDue(PG.wake, id);
  }

  async requestStop(id: string): Promise<boolean> {
    return this.#makeDue(PG.requestStop, id);
  }

  /** Runs `statement` ($1 id, $2 now), which makes a job due at once, and says whether it did. */
  async #makeDue(statement: string, id: string): Promise<boolean> {
    const params = [id, this.#clock.now()];
    const result = await retryOnDisconnect(() => this.#pool.query(statement, params));
    const changed = (result.rowCount ?? 0) > 0;
    if (changed) this.#signal.notify();
    return changed;
  }

  async recover(workerId: string): Promise<number> {
    const recovered = await retryOnDisconnect(() => this.recoverOn(this.#pool, [workerId]));
    return recovered;
  }

  /**
   * Requeues, due at once, every job the named workers left running, recording the
   * interrupted attempt (the claim already counted it); on `client`, so that the leader
   * can do it in the transaction that removes dead instances.
   */
  async recoverOn(client: pg.ClientBase | pg.Pool, workerIds: string[]): Promise<number> {
    if (workerIds.length === 0) return 0;
    const params = [workerIds, INTERRUPTED_MESSAGE, this.#clock.now()];
    const result = await client.query<{ count: number }>(PG.recover, params);
    const recovered = result.rows[0]?.count ?? 0;
    if (recovered > 0) this.#signal.notify();
    return recovered;
  }

  onRunnable(listener: () => void): () => void {
    return this.#signal.subscribe(listener);
  }

  /** Writes pending completions, stops listening; the pool's owner closes the pool. */
  async close(): Promise<void> {
    if (this.#pendingCompletions.length > 0) await this.#flushCompletions();
    await Promise.allSettled([...this.#flushing]);
    this.#signal.close();
    await this.#listener?.close();
    if (this.#workPool !== this.#pool) await this.#workPool.end();
  }

  async get(id: string): Promise<Job | null> {
    const result = await retryOnDisconnect(() => this.#pool.query<JobRow>(PG.byId, [id]));
    return result.rows[0] ? parseJobRow(result.rows[0]).job : null;
  }

  async list(options: JobFilter = {}): Promise<Job[]> {
    const params = [
      options.state ?? null,
      listLimit(options.limit, JOB_LIST_LIMIT),
      options.parentId ?? null,
      options.sessionKey ?? null,
      options.sessionKeyPrefix ?? null,
    ];
    const result = await retryOnDisconnect(() => this.#pool.query<JobRow>(PG.list, params));
    return result.rows.map((row) => parseJobRow(row).job);
  }

  async counts(): Promise<Record<JobState, number>> {
    const counts = emptyCounts();
    const result = await retryOnDisconnect(() =>
      this.#pool.query<{ state: JobState; count: number }>(PG.counts),
    );
    for (const { state, count } of result.rows) if (state in counts) counts[state] = count;
    return counts;
  }

  /** Requeues a failed job at the back of its session's line, due now, with fresh attempts. */
  async requeueRunning(options: { id?: string } = {}): Promise<number> {
    const params = [options.id ?? null, INTERRUPTED_MESSAGE, this.#clock.now()];
    const result = await retryOnDisconnect(() =>
      this.#pool.query<{ count: number }>(PG.requeueRunning, params),
    );
    const requeued = result.rows[0]?.count ?? 0;
    if (requeued > 0) this.#signal.notify();
    return requeued;
  }

  async retryFailed(id: string): Promise<boolean> {
    return this.#makeDue(PG.retryFailed, id);
  }

  /** Deletes up to `batch` done and failed jobs last changed before `cutoff` (epoch ms). */
  async prune(cutoff: number, batch = PRUNE_BATCH): Promise<number> {
    const result = await retryOnDisconnect(() => this.#pool.query(PG.prune, [cutoff, batch]));
    return result.rowCount ?? 0;
  }

  /** The claim; when the connection dropped mid-way, the rows it took (found by token). */
  async #claimRows(params: unknown[], token: string): Promise<JobRow[]> {
    try {
      return (await this.#workPool.query<JobRow>(prepared("claim", params))).rows;
    } catch (error) {
      if (!isConnectionError(error)) throw error;
      return retryOnDisconnect(async () => {
        const taken = await this.#workPool.query<JobRow>(PG.claimedBy, [token]);
        if (taken.rows.length > 0) return taken.rows;
        return (await this.#workPool.query<JobRow>(prepared("claim", params))).rows;
      });
    }
  }

  async #flushCompletions(): Promise<void> {
    const waiting = this.#pendingCompletions;
    this.#pendingCompletions = [];
    if (waiting.length === 0) return;
    const ids = waiting.map((completion) => completion.job.id);
    const tokens = waiting.map((completion) => completion.job.lockToken);
    try {
      const params = [ids, tokens, this.#clock.now()];
      const result = await retryOnDisconnect(() =>
        this.#workPool.query<{ id: string }>(prepared("complete", params)),
      );
      const done = new Set(result.rows.map((row) => row.id));
      for (const completion of waiting) completion.resolve(done.has(completion.job.id));
      if (done.size > 0) this.#signal.notify();
    } catch (error) {
      for (const completion of waiting) completion.reject(error);
    }
  }

  #watchOtherProcesses(active: boolean): void {
    if (this.#poll) clearInterval(this.#poll);
    this.#poll = null;
    void this.#listener?.close();
    this.#listener = null;
    if (!active) return;
    const { connection, backstopPollMs = 2000, onListenError } = this.#options;
    if (connection) {
      this.#listener = new PgListener({
        config: connection,
        channel: JOBS_CHANNEL,
        onNotify: (payload) => this.#onNotification(payload),
        // Notifications sent while the connection was down are lost: look again.
        onListening: () => this.#wakeForScheduled(),
        onError: onListenError,
      });
      this.#listener.start();
    }
    this.#poll = setInterval(() => this.#wakeForScheduled(), backstopPollMs);
    this.#poll.unref();
    this.#wakeForScheduled();
  }

  #onNotification(payload: string): void {
    const runAt = Number(payload);
    if (payload !== "" && Number.isFinite(runAt)) this.#signal.wakeAt(runAt);
    else this.#signal.notify();
  }

  /** Wakes the listeners now, and arms the timer for the earliest scheduled job. */
  #wakeForScheduled(): void {
    this.#signal.notify();
    const now = this.#clock.now();
    this.#pool
      .query<{ at: number | null }>(PG.nextDueAt, [now])
      .then((result) => {
        const at = result.rows[0]?.at;
        if (at !== null && at !== undefined) this.#signal.wakeAt(at);
      })
      .catch(() => undefined);
  }
}

/** Connections of the queue's own pool for claims and completions. */
const WORK_POOL_SIZE = 2;

/**
 * A claim must walk `jobs_runnable` in (run_at, seq) order and stop at its limit. With a
 * bitmap scan instead (the planner's pick whenever its statistics say the queue is small,
 * as after a burst) every claim reads and sorts every due job: O(queue) per claim.
 */
const CLAIM_SETTINGS = "-c enable_bitmapscan=off";

function openWorkPool(connection: pg.ClientConfig): pg.Pool {
  return newPool({ ...connection, options: CLAIM_SETTINGS, max: WORK_POOL_SIZE });
}

/**
 * The hot statements as named prepared statements: each connection parses and plans them
 * once instead of on every call.
 */
function prepared(name: "enqueue" | "claim" | "complete", values: unknown[]): pg.QueryConfig {
  return { name: `picklebot_${name}`, text: PG[name], values };
}
