/**
 * The in-memory job queue (`queue.backend: memory`): the same semantics as the SQLite
 * queue inside one process, and nothing more. Jobs live in this process only: every
 * queued or running job is LOST when the process exits or crashes, and another process
 * (the CLI) cannot enqueue into it. For tests, benchmarks and throwaway setups.
 *
 * Each session key has a line of its unfinished jobs in arrival order; the first job of
 * a line is running or waiting to run. The first jobs of idle lines wait in run order
 * (runAt, then arrival; see run-order.ts), so a claim pops what it takes instead of
 * scanning every job. Entries are checked when popped and dropped when they no longer hold.
 */

import { systemClock } from "../../base/clock.js";
import { checkNumberOptions } from "../../base/options.js";
import {
  type BatchStep,
  type ClaimedJob,
  type Clock,
  DEFAULT_MAX_ATTEMPTS,
  type FailOptions,
  FINAL_JOB_STATES,
  JOB_LIST_LIMIT,
  type Job,
  type JobAdmin,
  type JobAttemptError,
  type JobFilter,
  type JobQueue,
  type JobState,
  type NewJob,
  type Parking,
  PRUNE_BATCH,
  RESUME_MARKER,
  type ToolResultBlock,
} from "../../ports/index.js";
import {
  emptyCounts,
  INTERRUPTED_MESSAGE,
  LockTokens,
  newJobId,
  queuedJob,
  validateNewJob,
} from "../job.js";
import { listLimit } from "../list-limit.js";
import { RunOrder } from "../run-order.js";
import { RunnableSignal } from "../runnable.js";

/** Options of {@link MemoryJobQueue}. */
export interface MemoryJobQueueOptions {
  /** (Default: the system clock) */
  clock?: Clock;
  /** Id of a new job. (Default: a time-ordered id, see `newJobId`) */
  newId?: () => string;
  /** Attempts of a job whose producer names none. (Default: {@link DEFAULT_MAX_ATTEMPTS}) */
  defaultMaxAttempts?: number;
  /**
   * Done jobs remembered for `get`, `list`, `counts` and dedupe keys; older ones are
   * forgotten entirely. (Default: 10,000)
   */
  keepDone?: number;
}

/** A job as this queue holds it. */
interface StoredJob extends Job {
  seq: number;
  lockToken: string | null;
  dedupeKey: string | null;
  /** The line of its session key while the job is unfinished. */
  line: SessionLine | null;
}

/** A session key's unfinished jobs, oldest first; the first one may be running. */
interface SessionLine {
  jobs: StoredJob[];
  running: boolean;
}

/** A line whose first job was waiting when the entry was pushed. */
interface HeadEntry {
  job: StoredJob;
  runAt: number;
  seq: number;
}

/** The error history of a job that never failed (frozen, so it can be shared). */
const NO_ERRORS = Object.freeze([]) as unknown as JobAttemptError[];

/** The job queue in this process's memory; see the file header for what that costs. */
export class MemoryJobQueue implements JobQueue, JobAdmin {
  readonly #clock: Clock;
  readonly #newId: () => string;
  readonly #defaultMaxAttempts: number;
  readonly #keepDone: number;
  readonly #jobs = new Map<string, StoredJob>();
  readonly #lines = new Map<string, SessionLine>();
  readonly #heads = new RunOrder<HeadEntry>();
  /** Running jobs by id: the only ones a fenced change can apply to (a small map). */
  readonly #running = new Map<string, StoredJob>();
  readonly #byDedupeKey = new Map<string, StoredJob>();
  /** Done jobs, oldest first, from `#doneStart` on (a queue without shifting). */
  #done: StoredJob[] = [];
  #doneStart = 0;
  /** Jobs by stored state; a parked job is stored as `queued` (see `#parked`). */
  readonly #counts: Record<JobState, number> = emptyCounts();
  /** Parked jobs: `queued`, due at their deadline, with `waitingFor` set. */
  readonly #parked = new Set<StoredJob>();
  readonly #signal: RunnableSignal;
  readonly #lockTokens = new LockTokens();
  #seq = 0;

  constructor(options: MemoryJobQueueOptions = {}) {
    checkNumberOptions("MemoryJobQueue", options, { defaultMaxAttempts: "count" });
    this.#clock = options.clock ?? systemClock;
    this.#newId = options.newId ?? newJobId;
    this.#defaultMaxAttempts = options.defaultMaxAttempts ?? DEFAULT_MAX_ATTEMPTS;
    this.#keepDone = options.keepDone ?? 10_000;
    this.#signal = new RunnableSignal({
      clock: this.#clock,
      nextDueAt: (now) => this.#nextDueAt(now),
    });
  }

  async enqueue(newJob: NewJob): Promise<Job> {
    validateNewJob(newJob);
    const existing = newJob.dedupeKey ? this.#byDedupeKey.get(newJob.dedupeKey) : undefined;
    if (existing) return snapshot(existing);
    const now = this.#clock.now();
    const job: StoredJob = Object.assign(
      queuedJob(newJob, this.#newId(), now, this.#defaultMaxAttempts),
      { seq: ++this.#seq, lockToken: null, dedupeKey: newJob.dedupeKey ?? null, line: null },
    );
    job.replyTo = Object.freeze(job.replyTo);
    job.errors = NO_ERRORS;
    this.#jobs.set(job.id, job);
    if (job.dedupeKey) this.#byDedupeKey.set(job.dedupeKey, job);
    this.#counts.queued += 1;
    this.#appendToLine(job);
    this.#signal.wakeAt(job.runAt);
    return snapshot(job);
  }

  async claim(
    workerId: string,
    limit: number,
    options: { agentIds?: string[] } = {},
  ): Promise<ClaimedJob[]> {
    const now = this.#clock.now();
    const allowed = options.agentIds ? new Set(options.agentIds) : null;
    const token = this.#lockTokens.nextClaim();
    const claimed: ClaimedJob[] = [];
    const otherAgents: HeadEntry[] = [];
    const wanted = Math.floor(limit);
    while (claimed.length < wanted) {
      const entry = this.#heads.peek();
      if (!entry || entry.runAt > now) break;
      this.#heads.pop();
      if (!this.#isWaitingHead(entry)) continue;
      if (allowed && !allowed.has(entry.job.agentId)) otherAgents.push(entry);
      else claimed.push(this.#start(entry.job, workerId, now, token));
    }
    for (const entry of otherAgents) this.#heads.push(entry);
    return claimed;
  }

  async checkpoint(job: ClaimedJob, sessionId: string): Promise<boolean> {
    const stored = this.#fenced(job);
    if (!stored) return false;
    stored.sessionId = sessionId;
    stored.message = RESUME_MARKER;
    stored.checkpointed = true;
    stored.updatedAt = this.#clock.now();
    return true;
  }

  async complete(job: ClaimedJob): Promise<boolean> {
    const stored = this.#fenced(job);
    if (!stored) return false;
    this.#finish(stored, "done");
    this.#done.push(stored);
    this.#forgetOldDone();
    return true;
  }

  /**
   * Records the failed attempt. The queue does not decide the retry policy: the caller
   * passes the time of the next attempt, or null once `maxAttempts` is spent.
   */
  async fail(
    job: ClaimedJob,
    error: string,
    retryAt: number | null,
    options: FailOptions = {},
  ): Promise<boolean> {
    const stored = this.#fenced(job);
    if (!stored) return false;
    this.#recordError(stored, error);
    if (retryAt !== null && options.transient) stored.attempts -= 1;
    if (retryAt !== null) this.#requeue(stored, retryAt);
    else if (!options.stopped) this.#finish(stored, "failed");
    else {
      stored.stopRequested = true;
      this.#finish(stored, "stopped");
    }
    return true;
  }

  async park(job: ClaimedJob, { wait, until, toolResults }: Parking): Promise<boolean> {
    const stored = this.#fenced(job);
    if (!stored) return false;
    stored.attempts -= 1;
    stored.waitingFor = wait;
    stored.toolResults = Object.freeze([...toolResults]) as ToolResultBlock[];
    this.#parked.add(stored);
    this.#requeue(stored, until);
    return true;
  }

  async recordBatchStep(job: ClaimedJob, step: BatchStep): Promise<boolean> {
    const stored = this.#fenced(job);
    if (!stored) return false;
    stored.batchStep = { ...step };
    stored.updatedAt = this.#clock.now();
    return true;
  }

  async wake(id: string): Promise<boolean> {
    const job = this.#jobs.get(id);
    if (!job || !this.#parked.has(job)) return false;
    this.#dueNow(job);
    return true;
  }

  async requestStop(id: string): Promise<boolean> {
    const job = this.#jobs.get(id);
    if (job?.state !== "queued") return false;
    job.stopRequested = true;
    this.#dueNow(job);
    return true;
  }

  /** A queued (or parked) job is due at once and waits for nothing more. */
  #dueNow(job: StoredJob): void {
    const now = this.#clock.now();
    job.waitingFor = null;
    this.#parked.delete(job);
    job.runAt = Math.min(job.runAt, now);
    job.updatedAt = now;
    this.#pushHead(job);
    this.#signal.notify();
  }

  /** Requeues, due at once, every job `workerId` left running (see SqliteJobQueue.recover). */
  async recover(workerId: string): Promise<number> {
    return this.#requeueRunningJobs((job) => job.lockedBy === workerId);
  }

  async requeueRunning(options: { id?: string } = {}): Promise<number> {
    return this.#requeueRunningJobs((job) => options.id === undefined || job.id === options.id);
  }

  /** Requeues, due at once, the running jobs `which` picks, recording the interruption. */
  #requeueRunningJobs(which: (job: StoredJob) => boolean): number {
    const left = [...this.#running.values()].filter(which);
    for (const job of left) {
      this.#recordError(job, INTERRUPTED_MESSAGE);
      this.#requeue(job, job.runAt);
    }
    return left.length;
  }

  onRunnable(listener: () => void): () => void {
    return this.#signal.subscribe(listener);
  }

  /** Stops the timers. The jobs stay in memory until this object is dropped. */
  async close(): Promise<void> {
    this.#signal.close();
  }

  async get(id: string): Promise<Job | null> {
    const job = this.#jobs.get(id);
    return job ? snapshot(job) : null;
  }

  async list(options: JobFilter = {}): Promise<Job[]> {
    const { state, parentId, sessionKey, sessionKeyPrefix } = options;
    const limit = listLimit(options.limit, JOB_LIST_LIMIT);
    const matching = [...this.#jobs.values()].filter(
      (job) =>
        (!state || visibleState(job) === state) &&
        (!parentId || job.parentId === parentId) &&
        (!sessionKey || job.sessionKey === sessionKey) &&
        (!sessionKeyPrefix || job.sessionKey.startsWith(sessionKeyPrefix)),
    );
    matching.sort((a, b) => b.seq - a.seq);
    return matching.slice(0, limit).map(snapshot);
  }

  async counts(): Promise<Record<JobState, number>> {
    const waiting = this.#parked.size;
    return { ...this.#counts, queued: this.#counts.queued - waiting, waiting };
  }

  async prune(cutoff: number, batch = PRUNE_BATCH): Promise<number> {
    let pruned = 0;
    for (const job of this.#jobs.values()) {
      if (pruned >= batch) break;
      if (FINAL_JOB_STATES.includes(job.state) && job.updatedAt < cutoff) {
        this.#forget(job);
        pruned += 1;
      }
    }
    return pruned;
  }

  /** Requeues a failed job at the back of its session's line, due now, with fresh attempts. */
  async retryFailed(id: string): Promise<boolean> {
    const job = this.#jobs.get(id);
    if (job?.state !== "failed") return false;
    this.#move(job, "queued");
    job.attempts = 0;
    job.runAt = this.#clock.now();
    job.updatedAt = job.runAt;
    job.seq = ++this.#seq;
    this.#appendToLine(job);
    this.#signal.notify();
    return true;
  }

  #appendToLine(job: StoredJob): void {
    let line = this.#lines.get(job.sessionKey);
    if (!line) {
      line = { jobs: [], running: false };
      this.#lines.set(job.sessionKey, line);
    }
    job.line = line;
    line.jobs.push(job);
    if (line.jobs.length === 1) this.#pushHead(job);
  }

  #pushHead(job: StoredJob): void {
    this.#heads.push({ job, runAt: job.runAt, seq: job.seq });
  }

  /** Whether a popped entry still names the first, waiting job of an idle line. */
  #isWaitingHead(entry: HeadEntry): boolean {
    const { job } = entry;
    if (job.state !== "queued" || job.runAt !== entry.runAt || job.seq !== entry.seq) return false;
    const line = job.line;
    return line !== null && !line.running && line.jobs[0] === job;
  }

  #start(job: StoredJob, workerId: string, now: number, token: string): ClaimedJob {
    this.#move(job, "running");
    job.attempts += 1;
    job.lockedBy = workerId;
    job.lockedAt = now;
    job.lockToken = LockTokens.forJob(token, job.seq);
    job.updatedAt = now;
    job.waitingFor = null;
    this.#parked.delete(job);
    (job.line as SessionLine).running = true;
    this.#running.set(job.id, job);
    const claimed = snapshot(job) as ClaimedJob;
    claimed.lockToken = job.lockToken;
    return claimed;
  }

  #fenced(claimed: ClaimedJob): StoredJob | null {
    const job = this.#running.get(claimed.id);
    if (job?.state !== "running" || job.lockToken !== claimed.lockToken) return null;
    return job;
  }

  /** A running job ends: its line moves on to the next job, if any. */
  #finish(job: StoredJob, state: "done" | "failed" | "stopped"): void {
    this.#leaveRunning(job, state);
    const line = job.line as SessionLine;
    job.line = null;
    line.jobs.shift();
    const next = line.jobs[0];
    if (next) this.#pushHead(next);
    else this.#lines.delete(job.sessionKey);
    const parent = job.parentId ? this.#jobs.get(job.parentId) : undefined;
    if (parent && this.#parked.has(parent)) this.#dueNow(parent);
    this.#signal.notify();
  }

  /** A running job goes back to the front of its line, due at `runAt`. */
  #requeue(job: StoredJob, runAt: number): void {
    this.#leaveRunning(job, "queued");
    job.runAt = runAt;
    this.#pushHead(job);
    this.#signal.wakeAt(runAt);
  }

  #leaveRunning(job: StoredJob, state: JobState): void {
    this.#move(job, state);
    job.lockedBy = null;
    job.lockedAt = null;
    job.lockToken = null;
    job.updatedAt = this.#clock.now();
    (job.line as SessionLine).running = false;
    this.#running.delete(job.id);
  }

  #move(job: StoredJob, state: JobState): void {
    this.#counts[job.state] -= 1;
    this.#counts[state] += 1;
    job.state = state;
  }

  #recordError(job: StoredJob, message: string): void {
    const error = Object.freeze({ attempt: job.attempts, at: this.#clock.now(), message });
    job.errors = Object.freeze([...job.errors, error]) as JobAttemptError[];
    job.lastError = message;
  }

  #forgetOldDone(): void {
    while (this.#done.length - this.#doneStart > this.#keepDone) {
      const old = this.#done[this.#doneStart] as StoredJob;
      this.#doneStart += 1;
      // Pruned already, or retried and finished again (then it is further on too).
      if (this.#jobs.get(old.id) === old && old.state === "done") this.#forget(old);
    }
    if (this.#doneStart > 1024 && this.#doneStart * 2 > this.#done.length) {
      this.#done = this.#done.slice(this.#doneStart);
      this.#doneStart = 0;
    }
  }

  /** Drops a finished job from every index. */
  #forget(job: StoredJob): void {
    this.#jobs.delete(job.id);
    this.#counts[job.state] -= 1;
    if (job.dedupeKey && this.#byDedupeKey.get(job.dedupeKey) === job) {
      this.#byDedupeKey.delete(job.dedupeKey);
    }
  }

  #nextDueAt(now: number): number | null {
    let next: number | null = null;
    for (const entry of this.#heads.values()) {
      if (entry.runAt > now && (next === null || entry.runAt < next)) next = entry.runAt;
    }
    return next;
  }
}

/**
 * A copy the caller may keep: later changes to the queue do not show through it. The
 * reply target and the error history are frozen and shared, never changed in place.
 */
function snapshot(job: StoredJob): Job {
  return {
    id: job.id,
    agentId: job.agentId,
    sessionKey: job.sessionKey,
    sessionId: job.sessionId,
    message: job.message,
    checkpointed: job.checkpointed,
    attachments: job.attachments,
    task: job.task,
    mode: job.mode,
    replyTo: job.replyTo,
    state: visibleState(job),
    attempts: job.attempts,
    maxAttempts: job.maxAttempts,
    runAt: job.runAt,
    lockedBy: job.lockedBy,
    lockedAt: job.lockedAt,
    lastError: job.lastError,
    errors: job.errors,
    createdAt: job.createdAt,
    updatedAt: job.updatedAt,
    waitingFor: job.waitingFor,
    parentId: job.parentId,
    stopRequested: job.stopRequested,
    toolResults: job.toolResults,
    batch: job.batch,
    batchStep: job.batchStep && { ...job.batchStep },
    sender: job.sender && { ...job.sender },
    model: job.model,
  };
}

/** A parked job is stored as `queued` and shows as `waiting`. */
function visibleState(job: StoredJob): JobState {
  return job.state === "queued" && job.waitingFor !== null ? "waiting" : job.state;
}
