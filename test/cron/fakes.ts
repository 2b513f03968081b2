import { Writable } from "node:stream";
import { createLogger, type Logger } from "../../src/base/log.js";
import type { ClaimedJob, Clock, Job, JobQueue, NewJob } from "../../src/ports/index.js";
import type { Timers } from "../../src/server/cron/worker.js";

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
      id: `job-${this.jobs.length + 1}`,
      agentId: job.agentId,
      sessionKey: job.sessionKey,
      sessionId: job.sessionId ?? null,
      message: job.message,
      mode: job.mode,
      replyTo: job.replyTo,
      state: "queued",
      attempts: 0,
      maxAttempts: job.maxAttempts ?? 5,
      runAt: job.runAt ?? now,
      lockedBy: null,
      lockedAt: null,
      lastError: null,
      errors: [],
      createdAt: now,
      updatedAt: now,
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
  recover(): Promise<number> {
    throw new Error("not used by the CronWorker");
  }
  onRunnable(): () => void {
    throw new Error("not used by the CronWorker");
  }
  async close(): Promise<void> {}
}

/** A clock and timers that move only when the test says so. */
export class FakeTime implements Clock, Timers {
  #now: number;
  #nextHandle = 1;
  readonly #pending = new Map<number, { at: number; callback: () => void }>();

  constructor(startIso: string) {
    this.#now = Date.parse(startIso);
  }

  now(): number {
    return this.#now;
  }

  setTimeout(callback: () => void, delayMs: number): unknown {
    const handle = this.#nextHandle++;
    this.#pending.set(handle, { at: this.#now + delayMs, callback });
    return handle;
  }

  clearTimeout(handle: unknown): void {
    this.#pending.delete(handle as number);
  }

  /** Jumps the clock without running timers (the machine was off). */
  set(iso: string): void {
    this.#now = Date.parse(iso);
  }

  /**
   * Moves time forward to `iso`, running each timer at its due time, in order, and waiting
   * for `settle` after each one (the worker's reaction to it).
   */
  async advanceTo(iso: string, settle: () => Promise<void>): Promise<void> {
    const target = Date.parse(iso);
    for (;;) {
      const next = this.#earliest();
      if (next === undefined || next[1].at > target) break;
      this.#pending.delete(next[0]);
      this.#now = Math.max(this.#now, next[1].at);
      next[1].callback();
      await settle();
    }
    this.#now = target;
  }

  #earliest(): [number, { at: number; callback: () => void }] | undefined {
    let earliest: [number, { at: number; callback: () => void }] | undefined;
    for (const entry of this.#pending) {
      if (earliest === undefined || entry[1].at < earliest[1].at) earliest = entry;
    }
    return earliest;
  }
}

/** One parsed log line. */
export interface LogLine {
  level: number;
  msg: string;
  [key: string]: unknown;
}

/** A real pino logger whose JSON lines are kept for assertions. */
export function recordingLogger(): { logger: Logger; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split("\n")) {
        if (line.trim() !== "") lines.push(JSON.parse(line) as LogLine);
      }
      done();
    },
  });
  return { logger: createLogger({ destination, pretty: false, level: "info" }), lines };
}
