/**
 * The SQLite job queue (the default): the `jobs` table of the workspace database, shared
 * with the history so that a checkpoint is one transaction.
 *
 * Every method but `complete` runs its statement synchronously before it returns, so the
 * change is committed (WAL) by the time its promise exists. Completions are committed in
 * groups: the ones requested in the same tick share one transaction, and each promise
 * resolves only after that commit, so a resolved completion is as durable as a lone one. Any other call first commits the completions requested
 * before it, so changes still apply in call order.
 *
 * Claims are one UPDATE … RETURNING in an IMMEDIATE transaction; every change after a
 * claim is fenced by the claim's lock token. Other processes (the CLI) write to the same
 * file; `onRunnable` notices their commits by polling `PRAGMA data_version`, which reads
 * no page, only a counter in shared memory.
 */

import type Database from "better-sqlite3";
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
import { claimSql, SQL } from "./queue-rows.js";

/** Options of {@link SqliteJobQueue}. */
export interface SqliteJobQueueOptions {
  /** The database from `openDatabase` (migrated); the queue never closes it. */
  db: Database.Database;
  /** (Default: the system clock) */
  clock?: Clock;
  /** Id of a new job. (Default: a time-ordered id, see `newJobId`) */
  newId?: () => string;
  /** How often other processes' commits are looked for while someone listens. (Default: 50 ms) */
  pollMs?: number;
  /** Attempts of a job whose producer names none. (Default: {@link DEFAULT_MAX_ATTEMPTS}) */
  defaultMaxAttempts?: number;
}

type Statements = { [name in Exclude<keyof typeof SQL, "claim">]: Database.Statement };

/** The durable job queue on SQLite, for one process per database file. */
export class SqliteJobQueue implements JobQueue, JobAdmin {
  readonly #db: Database.Database;
  readonly #clock: Clock;
  readonly #newId: () => string;
  readonly #pollMs: number;
  readonly #defaultMaxAttempts: number;
  readonly #sql: Statements;
  readonly #dataVersion: Database.Statement;
  readonly #claimStatements = new Map<number, Database.Statement>();
  readonly #claimTransaction: (args: ClaimArgs) => ClaimedJob[];
  readonly #completeTransaction: (completions: PendingCompletion[]) => CompletionResult[];
  #pendingCompletions: PendingCompletion[] = [];
  readonly #signal: RunnableSignal;
  readonly #lockTokens = new LockTokens();
  #poll: NodeJS.Timeout | null = null;
  #lastDataVersion = 0;

  constructor(options: SqliteJobQueueOptions) {
    checkNumberOptions("SqliteJobQueue", options, {
      defaultMaxAttempts: "count",
      pollMs: "positive",
    });
    this.#db = options.db;
    this.#clock = options.clock ?? systemClock;
    this.#newId = options.newId ?? newJobId;
    this.#pollMs = options.pollMs ?? 50;
    this.#defaultMaxAttempts = options.defaultMaxAttempts ?? DEFAULT_MAX_ATTEMPTS;
    this.#sql = prepareAll(this.#db);
    this.#dataVersion = this.#db.prepare("PRAGMA data_version").pluck();
    const claim = this.#db.transaction((args: ClaimArgs) => this.#claimRows(args));
    this.#claimTransaction = (args) => claim.immediate(args);
    const complete = this.#db.transaction((completions: PendingCompletion[]) =>
      this.#writeCompletions(completions),
    );
    this.#completeTransaction = (completions) => complete.immediate(completions);
    this.#signal = new RunnableSignal({
      clock: this.#clock,
      nextDueAt: (now) => this.#sql.nextDueAt.pluck().get(now) as number | null,
      onActiveChange: (active) => this.#watchOtherProcesses(active),
    });
  }

  async enqueue(newJob: NewJob): Promise<Job> {
    this.#flushCompletions();
    validateNewJob(newJob);
    const now = this.#clock.now();
    const job = queuedJob(newJob, this.#newId(), now, this.#defaultMaxAttempts);
    const inserted = this.#sql.insert.run({
      id: job.id,
      agentId: job.agentId,
      sessionKey: job.sessionKey,
      sessionId: job.sessionId,
      message: job.message,
      mode: job.mode,
      replyTo: JSON.stringify(job.replyTo),
      maxAttempts: job.maxAttempts,
      runAt: job.runAt,
      dedupeKey: newJob.dedupeKey ?? null,
      task: job.task,
      parentId: job.parentId,
      batch: job.batch ? 1 : 0,
      sender: job.sender && JSON.stringify(job.sender),
      model: job.model,
      attachments: JSON.stringify(job.attachments),
      now,
    });
    if (inserted.changes === 0) return this.#byDedupeKey(newJob.dedupeKey);
    this.#signal.wakeAt(job.runAt);
    return job;
  }

  async claim(
    workerId: string,
    limit: number,
    options: { agentIds?: string[] } = {},
  ): Promise<ClaimedJob[]> {
    this.#flushCompletions();
    if (!(limit >= 1)) return [];
    const agents = options.agentIds ? JSON.stringify(options.agentIds) : null;
    return this.#claimTransaction({
      workerId,
      limit: Math.min(MAX_CLAIM, Math.floor(limit)),
      agents,
    });
  }

  /** {@link checkpoint}, usable inside a `db.transaction` with the history's writes. */
  checkpointSync(job: ClaimedJob, sessionId: string): boolean {
    const now = this.#clock.now();
    return (
      this.#sql.checkpoint.run({ id: job.id, token: job.lockToken, sessionId, now }).changes > 0
    );
  }

  async checkpoint(job: ClaimedJob, sessionId: string): Promise<boolean> {
    return this.checkpointSync(job, sessionId);
  }

  /** Marks the job done; resolves after the commit it shares with other completions. */
  complete(job: ClaimedJob): Promise<boolean> {
    return new Promise((resolve, reject) => {
      this.#pendingCompletions.push({ job, resolve, reject });
      if (this.#pendingCompletions.length === 1) queueMicrotask(() => this.#flushSoon());
    });
  }

  /**
   * Records the failed attempt. The queue does not decide the retry policy: the caller
   * passes the time of the next attempt, or null once `maxAttempts` is spent (see
   * `nextAttemptAt` in backoff.ts).
   */
  async fail(
    job: ClaimedJob,
    error: string,
    retryAt: number | null,
    options: FailOptions = {},
  ): Promise<boolean> {
    return this.failSync(job, error, retryAt, options);
  }

  /** {@link fail}, usable inside a `db.transaction` with the history's writes. */
  failSync(
    job: ClaimedJob,
    error: string,
    retryAt: number | null,
    options: FailOptions = {},
  ): boolean {
    this.#flushCompletions();
    const now = this.#clock.now();
    const fence = { id: job.id, token: job.lockToken, error, now };
    const changed =
      retryAt === null
        ? this.#sql.fail.run({ ...fence, stopped: options.stopped ? 1 : 0 }).changes > 0
        : this.#sql.retry.run({ ...fence, retryAt, refund: options.transient ? 1 : 0 }).changes > 0;
    if (!changed) return false;
    if (retryAt === null) this.#ended(job.id, now);
    else this.#signal.wakeAt(retryAt);
    return true;
  }

  async park(job: ClaimedJob, { wait, until, toolResults }: Parking): Promise<boolean> {
    this.#flushCompletions();
    const params = {
      id: job.id,
      token: job.lockToken,
      wait: JSON.stringify(wait),
      results: JSON.stringify(toolResults),
      until,
      now: this.#clock.now(),
    };
    const parked = this.#sql.park.run(params).changes > 0;
    if (parked) this.#signal.wakeAt(until);
    return parked;
  }

  async recordBatchStep(job: ClaimedJob, step: BatchStep): Promise<boolean> {
    this.#flushCompletions();
    const params = {
      id: job.id,
      token: job.lockToken,
      step: JSON.stringify(step),
      now: this.#clock.now(),
    };
    return this.#sql.recordBatchStep.run(params).changes > 0;
  }

  async wake(id: string): Promise<boolean> {
    return this.#makeDue(this.#sql.wake, id);
  }

  async requestStop(id: string): Promise<boolean> {
    return this.#makeDue(this.#sql.requestStop, id);
  }

  /** Runs `statement` (@id, @now), which makes a job due at once, and says whether it did. */
  #makeDue(statement: Database.Statement, id: string): boolean {
    this.#flushCompletions();
    const changed = statement.run({ id, now: this.#clock.now() }).changes > 0;
    if (changed) this.#signal.notify();
    return changed;
  }

  /**
   * Requeues, due at once, every job `workerId` left running, recording the interrupted
   * attempt in its errors. Attempt counts are kept: a job whose attempts already exceed
   * `maxAttempts` when claimed again was interrupted every time, and its worker should fail it.
   */
  async recover(workerId: string): Promise<number> {
    this.#flushCompletions();
    const now = this.#clock.now();
    const params = { worker: workerId, error: INTERRUPTED_MESSAGE, now };
    const recovered = this.#sql.recover.run(params).changes;
    if (recovered > 0) this.#signal.notify();
    return recovered;
  }

  onRunnable(listener: () => void): () => void {
    return this.#signal.subscribe(listener);
  }

  /** Commits pending completions and stops the timers; the database's owner closes it. */
  async close(): Promise<void> {
    this.#flushCompletions();
    this.#signal.close();
  }

  async get(id: string): Promise<Job | null> {
    this.#flushCompletions();
    const row = this.#sql.byId.get(id) as JobRow | undefined;
    return row ? parseJobRow(row).job : null;
  }

  async list(options: JobFilter = {}): Promise<Job[]> {
    this.#flushCompletions();
    const params = {
      state: options.state ?? null,
      parentId: options.parentId ?? null,
      sessionKey: options.sessionKey ?? null,
      sessionKeyPrefix: options.sessionKeyPrefix ?? null,
      limit: listLimit(options.limit, JOB_LIST_LIMIT),
    };
    return (this.#sql.list.all(params) as JobRow[]).map((row) => parseJobRow(row).job);
  }

  async counts(): Promise<Record<JobState, number>> {
    this.#flushCompletions();
    const counts = emptyCounts();
    for (const { state, count } of this.#sql.counts.all() as { state: JobState; count: number }[]) {
      if (state in counts) counts[state] = count;
    }
    return counts;
  }

  /** Requeues a failed job at the back of its session's line, due now, with fresh attempts. */
  async requeueRunning(options: { id?: string } = {}): Promise<number> {
    this.#flushCompletions();
    const params = { id: options.id ?? null, error: INTERRUPTED_MESSAGE, now: this.#clock.now() };
    const requeued = this.#sql.requeueRunning.run(params).changes;
    if (requeued > 0) this.#signal.notify();
    return requeued;
  }

  async retryFailed(id: string): Promise<boolean> {
    return this.#makeDue(this.#sql.retryFailed, id);
  }

  /** Inside the IMMEDIATE transaction: claims, then fails on the spot rows that cannot run. */
  #claimRows({ workerId, limit, agents }: ClaimArgs): ClaimedJob[] {
    const now = this.#clock.now();
    const token = this.#lockTokens.nextClaim();
    const rows = this.#claimStatement(limit).all({
      worker: workerId,
      now,
      token,
      agents,
    }) as JobRow[];
    const { claimed, malformed } = splitClaimedRows(rows);
    for (const { seq, error } of malformed) this.#sql.failMalformed.run({ seq, error, now });
    return claimed;
  }

  /** A job ended for good: the next job of its line may run, and its parent looks again. */
  #ended(id: string, now: number): void {
    this.#sql.wakeParent.run({ id, now });
    this.#signal.notify();
  }

  /** Flushes now, or once a transaction someone left open across a tick has ended. */
  #flushSoon(): void {
    if (this.#db.open && this.#db.inTransaction) setImmediate(() => this.#flushSoon());
    else this.#flushCompletions();
  }

  /** Commits the completions requested so far. */
  #flushCompletions(): void {
    const waiting = this.#takeCompletions();
    if (waiting.length === 0) return;
    try {
      this.#settleCompletions(this.#completeTransaction(waiting));
    } catch (error) {
      for (const completion of waiting) completion.reject(error);
    }
  }

  /**
   * The completions to write now. None inside a caller's open transaction: they would be
   * resolved before that transaction commits, and it might roll back.
   */
  #takeCompletions(): PendingCompletion[] {
    const waiting = this.#pendingCompletions;
    if (waiting.length === 0 || this.#db.inTransaction) return [];
    this.#pendingCompletions = [];
    return waiting;
  }

  /** Inside a transaction: writes the completions (they settle once it commits). */
  #writeCompletions(waiting: PendingCompletion[]): CompletionResult[] {
    const now = this.#clock.now();
    return waiting.map((completion) => {
      const { id, lockToken: token } = completion.job;
      const done = this.#sql.complete.run({ id, token, now }).changes > 0;
      if (done) this.#sql.wakeParent.run({ id, now });
      return { completion, done };
    });
  }

  /** After the commit: resolves the completions; the next job of their sessions may run. */
  #settleCompletions(results: CompletionResult[]): void {
    for (const { completion, done } of results) completion.resolve(done);
    if (results.some((result) => result.done)) this.#signal.notify();
  }

  #claimStatement(limit: number): Database.Statement {
    let statement = this.#claimStatements.get(limit);
    if (!statement) {
      statement = this.#db.prepare(claimSql(limit));
      this.#claimStatements.set(limit, statement);
    }
    return statement;
  }

  #byDedupeKey(dedupeKey: string | undefined): Job {
    const row = this.#sql.byDedupeKey.get(dedupeKey) as JobRow | undefined;
    // The conflict came from this key, so the row exists.
    if (!row) {
      throw new PicklebotError(`job with dedupe key ${dedupeKey} vanished during enqueue`, {
        retryable: true,
      });
    }
    return parseJobRow(row).job;
  }

  #watchOtherProcesses(active: boolean): void {
    if (this.#poll) clearInterval(this.#poll);
    this.#poll = null;
    if (!active) return;
    this.#lastDataVersion = this.#dataVersion.get() as number;
    this.#poll = setInterval(() => this.#checkOtherProcesses(), this.#pollMs);
    this.#poll.unref();
  }

  async prune(cutoff: number, batch = PRUNE_BATCH): Promise<number> {
    this.#flushCompletions();
    return this.#sql.prune.run({ cutoff, batch }).changes;
  }

  /**
   * A timer's callback, so it never throws: when the version cannot be read (busy, I/O
   * error) the listeners are woken anyway, and their claim meets the error and says so.
   */
  #checkOtherProcesses(): void {
    if (!this.#db.open) return;
    try {
      const version = this.#dataVersion.get() as number;
      if (version === this.#lastDataVersion) return;
      this.#lastDataVersion = version;
      this.#signal.notify();
      this.#signal.rescheduleWake();
    } catch {
      this.#signal.notify();
    }
  }
}

interface ClaimArgs {
  workerId: string;
  limit: number;
  agents: string | null;
}

/** A completion waiting for its commit. */
interface PendingCompletion {
  job: ClaimedJob;
  resolve: (done: boolean) => void;
  reject: (error: unknown) => void;
}

/** A completion written in a transaction, to settle once it committed. */
interface CompletionResult {
  completion: PendingCompletion;
  done: boolean;
}

function prepareAll(db: Database.Database): Statements {
  const entries = Object.entries(SQL)
    .filter(([name]) => name !== "claim")
    .map(([name, text]) => [name, db.prepare(text)]);
  return Object.fromEntries(entries) as Statements;
}
