import {
  type ClaimedJob,
  type Clock,
  DEFAULT_MAX_ATTEMPTS,
  type Job,
  type JobQueue,
  type NewJob,
} from "../../src/ports/index.js";
import { queuedJob } from "../../src/storage/job.js";

/** A job the fake queue stored, with the (fake) time it was enqueued at. */
export interface RecordedJob extends Job {
  dedupeKey: string | undefined;
  enqueuedAt: number;
}

/**
 * A fake of our own JobQueue port, recording enqueues with the port's dedupe semantics
 * (a known dedupe key stores nothing and returns the first job). Only `enqueue` is used by
 * the CronWorker; the other members throw.
 */
export class RecordingQueue implements JobQueue {
  readonly jobs: RecordedJob[] = [];
  /** When set, the next enqueue throws it and stores nothing (a locked database). */
  failNextEnqueue: Error | null = null;
  readonly #clock: Clock;

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  async enqueue(job: NewJob): Promise<Job> {
    const failure = this.failNextEnqueue;
    this.failNextEnqueue = null;
    if (failure !== null) throw failure;
    const existing = this.jobs.find(
      (stored) => job.dedupeKey !== undefined && stored.dedupeKey === job.dedupeKey,
    );
    if (existing !== undefined) return existing;
    const now = this.#clock.now();
    const stored: RecordedJob = {
      ...queuedJob(job, `job-${this.jobs.length + 1}`, now, DEFAULT_MAX_ATTEMPTS),
      dedupeKey: job.dedupeKey,
      enqueuedAt: now,
    };
    this.jobs.push(stored);
    return stored;
  }

  /** Session keys of the stored jobs, in enqueue order. */
  keys(): string[] {
    return this.jobs.map((job) => job.sessionKey);
  }

  claim(): Promise<ClaimedJob[]> {
    throw new Error("not used by the CronWorker");
  }
  checkpoint(): Promise<boolean> {
    throw new Error("not used by the CronWorker");
  }
  complete(): Promise<boolean> {
    throw new Error("not used by the CronWorker");
  }
  fail(): Promise<boolean> {
    throw new Error("not used by the CronWorker");
  }
  recordBatchStep(): Promise<boolean> {
    throw new Error("not used by the CronWorker");
  }
  park(): Promise<boolean> {
    throw new Error("not used by the CronWorker");
  }
  wake(): Promise<boolean> {
    throw new Error("not used by the CronWorker");
  }
  recover(): Promise<number> {
    throw new Error("not used by the CronWorker");
  }
  onRunnable(): () => void {
    throw new Error("not used by the CronWorker");
  }
  async close(): Promise<void> {}
}
