/**
 * The CronWorker: enqueues an agent job each time a cron of `crons/*.yaml` is due.
 *
 *   run(signal) ──► start: load folder, report bad files, catch up, arm the timer
 *                     │
 *                     ├─► timer ──► fire every due cron ──► re-arm ─┐
 *                     ├─► folder changed (debounced) ──► fire what is due, reload, re-arm
 *                     │                                            ◄┘
 *                     ├─► folder watch fails ──► crash (the supervisor restarts the run, which
 *                     │                             watches again; see #watch)
 *                     └─► signal aborted ──► close watch and timer, finish the fire in flight
 *
 * One timer is armed for the earliest next occurrence (capped, so a clock jump or a
 * suspended machine is noticed within {@link MAX_TIMER_DELAY_MS}); nothing polls. Every
 * step runs one after the other on a promise chain, so a reload never interleaves a fire.
 *
 * **Exactly once.** Firing an occurrence enqueues its job with the occurrence as dedupe key
 * *first*, and only then records it in the {@link CronStateStore}. A crash between the two
 * leaves the occurrence unrecorded, so the next start fires it again (it is within the
 * late-fire grace, or `catch_up` picks it); the queue then returns the job stored the first
 * time instead of adding one, and the occurrence is recorded. The other order (record, then
 * enqueue) would lose the job on such a crash. Two processes firing the same occurrence
 * meet at the same dedupe key and the same compare-and-set.
 *
 * **Late and missed occurrences.** An occurrence noticed at most `lateFireGraceMs` after its
 * time (a slow timer, a quick restart) fires late. Older ones were missed: they are skipped,
 * except that a `catch_up` cron runs the latest missed one once, at start-up (looking back to
 * its last fired occurrence, or to when it was first seen).
 *
 * **One-off crons.** After a `one_off` cron fires, the store marks it disabled and it never
 * fires again, even when its file is edited (rename the file to schedule it anew; `cron run`
 * still runs it by hand). Its file is never changed or deleted; `cron list` shows it as
 * `done (one_off)`.
 */

import { isRetryable, toError } from "../base/errors.js";
import { type FolderWatch, watchFolder } from "../base/folder-watch.js";
import type { Logger } from "../base/log.js";
import { checkNumberOptions } from "../base/options.js";
import type {
  Clock,
  CronState,
  CronStateStore,
  EventSink,
  JobQueue,
  Worker,
} from "../ports/index.js";
import { type CronDefaults, type CronDefinition, loadCronDir } from "./definition.js";
import { enqueueOccurrence } from "./fire.js";
import { latestOccurrenceBetween, nextOccurrence } from "./schedule.js";

export { type CronRow, type CronStatus, describeCrons } from "./describe.js";
export { runCronNow } from "./fire.js";

/** Longest single sleep; a wake with nothing due just sleeps again. */
export const MAX_TIMER_DELAY_MS = 60 * 60_000;

/** The timer functions the worker sleeps with, injectable so tests drive time. */
export interface Timers {
  setTimeout(callback: () => void, delayMs: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** Options of {@link CronWorker}. */
export interface CronWorkerOptions {
  /** The `crons/` folder of the workspace. */
  cronDir: string;
  /** What cron files inherit from `picklebot.yaml`. */
  defaults: CronDefaults;
  queue: JobQueue;
  state: CronStateStore;
  clock: Clock;
  logger: Logger;
  /** `workers.max_attempts`, given to every job. */
  maxAttempts: number;
  /** Timers of the schedule. (Default: the global setTimeout/clearTimeout) */
  timers?: Timers;
  /** An occurrence noticed this late still fires. (Default: 120 000 ms) */
  lateFireGraceMs?: number;
  /** Quiet time after a folder change before reloading. (Default: 200 ms) */
  reloadDebounceMs?: number;
  /** Watches the folder for changes. (Default: {@link watchFolder}) */
  watch?: typeof watchFolder;
  /** Where `cron.fired` goes. (Default: nowhere) */
  events?: EventSink;
}

/** A cron the worker has scheduled: enabled in its file. */
interface ScheduledCron {
  cron: CronDefinition;
  /** The next occurrence to fire, or null when it never fires again. */
  nextAt: number | null;
  /** A one-off cron that has fired. */
  done: boolean;
}

const realTimers: Timers = {
  setTimeout: (callback, delayMs) => setTimeout(callback, delayMs),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

/** Sleeps `ms` on `timers` (the global ones by default), or less when `signal` aborts. */
export function sleepFor(
  ms: number,
  signal: AbortSignal,
  timers: Timers = realTimers,
): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      signal.removeEventListener("abort", done);
      timers.clearTimeout(handle);
      resolve();
    };
    const handle = timers.setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}

/**
 * Calls `fireDue` until `signal` aborts, sleeping until the instant it returns (the next
 * due one) but never longer than `pollMs`, so what another process added is seen in time.
 */
export async function fireUntilAborted(
  fireDue: () => Promise<number>,
  signal: AbortSignal,
  options: { clock: Clock; pollMs: number; timers?: Timers | undefined },
): Promise<void> {
  while (!signal.aborted) {
    const nextAt = await fireDue();
    const delay = Math.min(Math.max(nextAt - options.clock.now(), 0), options.pollMs);
    await sleepFor(delay, signal, options.timers);
  }
}

/** Fires the crons of one folder on time; see the file header for the rules. */
export class CronWorker implements Worker {
  readonly name = "cron";
  readonly #options: CronWorkerOptions;
  readonly #timers: Timers;
  readonly #graceMs: number;
  /** Bad files already logged, with the content hash they were logged for. */
  readonly #reportedErrors = new Map<string, string>();
  #scheduled = new Map<string, ScheduledCron>();
  /** Every occurrence up to this instant has been fired or skipped. */
  #handledUntil = 0;
  #timer: unknown = null;
  #chain: Promise<void> = Promise.resolve();
  #crash: ((error: Error) => void) | null = null;

  constructor(options: CronWorkerOptions) {
    checkNumberOptions("CronWorker", options, {
      lateFireGraceMs: "non-negative",
      reloadDebounceMs: "non-negative",
    });
    this.#options = options;
    this.#timers = options.timers ?? realTimers;
    this.#graceMs = options.lateFireGraceMs ?? 120_000;
  }

  /** Runs until `signal` aborts; rejects (a crash) when firing or loading fails. */
  async run(signal: AbortSignal): Promise<void> {
    if (this.#crash !== null) throw new Error("CronWorker is already running");
    if (signal.aborted) return;
    const crashed = new Promise<void>((_, reject) => {
      this.#crash = reject;
    });
    const stopped = new Promise<void>((resolve) => {
      signal.addEventListener("abort", () => resolve(), { once: true });
    });
    this.#serially(() => this.#start());
    const watch = this.#watch();
    try {
      await Promise.race([stopped, crashed]);
    } finally {
      this.#crash = null;
      watch.close();
      this.#disarm();
      await this.whenIdle();
    }
  }

  /** Resolves once every queued reload and fire has finished (tests, shutdown). */
  async whenIdle(): Promise<void> {
    let chain: Promise<void>;
    do {
      chain = this.#chain;
      await chain;
    } while (chain !== this.#chain);
  }

  /** Queues `task` after the others; skipped once stopped; a failure crashes the run. */
  #serially(task: () => Promise<void>): void {
    this.#chain = this.#chain.then(async () => {
      if (this.#crash === null) return;
      try {
        await task();
      } catch (error) {
        this.#crash?.(toError(error));
      }
    });
  }

  /**
   * Watches the folder. A watch that failed crashes the run, so that the supervisor makes
   * it again; a folder that cannot be created (a read-only workspace) is only logged.
   */
  #watch(): FolderWatch {
    const { cronDir, logger, reloadDebounceMs = 200, watch = watchFolder } = this.#options;
    return watch(
      cronDir,
      reloadDebounceMs,
      () => this.#serially(() => this.#reload()),
      (error) => {
        if (isRetryable(error)) this.#crash?.(error);
        else logger.warn({ dir: cronDir, err: error }, "no crons folder; add one and restart");
      },
    );
  }

  async #start(): Promise<void> {
    const now = this.#options.clock.now();
    this.#handledUntil = now;
    this.#scheduled = new Map();
    for (const cron of this.#load()) {
      const { entry, state } = await this.#admit(cron, now);
      if (!entry.done) await this.#catchUp(entry, state, now);
      this.#plan(entry);
      this.#scheduled.set(cron.id, entry);
      this.#logScheduled(entry, "cron loaded");
    }
    this.#arm();
  }

  async #reload(): Promise<void> {
    // Occurrences due under the old definitions fire first, so a reload never skips one.
    await this.#fireDue();
    const now = this.#handledUntil;
    const previous = this.#scheduled;
    const next = new Map<string, ScheduledCron>();
    for (const cron of this.#load()) {
      const known = previous.get(cron.id);
      if (known !== undefined && known.cron.contentHash === cron.contentHash) {
        next.set(cron.id, known);
        continue;
      }
      const { entry } = await this.#admit(cron, now);
      this.#plan(entry);
      next.set(cron.id, entry);
      this.#logScheduled(entry, known === undefined ? "cron added" : "cron changed");
    }
    for (const [id, known] of previous) {
      if (!next.has(id))
        this.#options.logger.info({ cron: id, file: known.cron.file }, "cron removed");
    }
    this.#scheduled = next;
    this.#arm();
  }

  /** Loads the folder, logs each bad file once per content, returns the enabled crons. */
  #load(): CronDefinition[] {
    const { cronDir, defaults, logger } = this.#options;
    const { crons, errors } = loadCronDir(cronDir, defaults);
    const stillBad = new Set<string>();
    for (const error of errors) {
      const file = String(error.context.file);
      const fingerprint = String(error.context.contentHash ?? error.message);
      stillBad.add(file);
      if (this.#reportedErrors.get(file) === fingerprint) continue;
      this.#reportedErrors.set(file, fingerprint);
      logger.error({ file, field: error.context.field }, error.message);
    }
    for (const file of this.#reportedErrors.keys()) {
      if (!stillBad.has(file)) this.#reportedErrors.delete(file);
    }
    return crons.filter((cron) => cron.enabled);
  }

  /** Registers the cron in the state store and reads what it knows. */
  async #admit(
    cron: CronDefinition,
    now: number,
  ): Promise<{ entry: ScheduledCron; state: CronState }> {
    const store = this.#options.state;
    await store.markSeen(cron.id, now);
    const state = (await store.get(cron.id)) ?? {
      lastFiredAt: null,
      disabled: false,
      firstSeenAt: now,
    };
    return { entry: { cron, nextAt: null, done: state.disabled }, state };
  }

  /** At start-up: fires the latest occurrence since the last one, if late or `catch_up`. */
  async #catchUp(entry: ScheduledCron, state: CronState, now: number): Promise<void> {
    const since = state.lastFiredAt ?? state.firstSeenAt;
    const missed = latestOccurrenceBetween(entry.cron, since, now);
    if (missed !== null) await this.#fireOrSkip(entry, missed, now);
  }

  /** Sets the cron's next occurrence after everything handled so far. */
  #plan(entry: ScheduledCron): void {
    entry.nextAt = null;
    if (entry.done) return;
    try {
      entry.nextAt = nextOccurrence(entry.cron, this.#handledUntil);
    } catch (error) {
      const { file } = entry.cron;
      this.#options.logger.error(
        { file, field: "schedule", err: toError(error) },
        "cron has no next run",
      );
    }
  }

  async #wake(): Promise<void> {
    await this.#fireDue();
    this.#arm();
  }

  async #fireDue(): Promise<void> {
    const now = Math.max(this.#options.clock.now(), this.#handledUntil);
    for (const entry of this.#scheduled.values()) {
      if (entry.nextAt === null || entry.nextAt > now) continue;
      const due = latestOccurrenceBetween(entry.cron, this.#handledUntil, now) ?? entry.nextAt;
      await this.#fireOrSkip(entry, due, now);
    }
    this.#handledUntil = now;
    for (const entry of this.#scheduled.values()) {
      if (entry.nextAt !== null && entry.nextAt <= now) this.#plan(entry);
    }
  }

  async #fireOrSkip(entry: ScheduledCron, occurrence: number, now: number): Promise<void> {
    if (entry.cron.catchUp || now - occurrence <= this.#graceMs) {
      await this.#fire(entry, occurrence);
      return;
    }
    const at = new Date(occurrence).toISOString();
    this.#options.logger.info(
      { cron: entry.cron.id, occurrence: at },
      "cron occurrence missed (no catch_up)",
    );
  }

  /** Enqueue first, record second: see "Exactly once" in the file header. */
  async #fire(entry: ScheduledCron, occurrence: number): Promise<void> {
    const { queue, state, logger, maxAttempts } = this.#options;
    const { cron } = entry;
    const known = await state.get(cron.id);
    if (known?.disabled) {
      entry.done = true;
      return;
    }
    if (known?.lastFiredAt != null && known.lastFiredAt >= occurrence) return;
    const job = await enqueueOccurrence(queue, cron, occurrence, maxAttempts);
    const recorded = await state.recordFired(cron.id, occurrence, { disable: cron.oneOff });
    if (cron.oneOff) entry.done = true;
    if (recorded) {
      const fired = { type: "cron.fired", cronId: cron.id, agentId: cron.agentId } as const;
      this.#options.events?.publish({ ...fired, jobId: job.id });
    }
    logger.info(
      {
        cron: cron.id,
        occurrence: new Date(occurrence).toISOString(),
        job: job.id,
        agent: cron.agentId,
      },
      recorded ? "cron fired" : "cron occurrence was already recorded by another process",
    );
  }

  #arm(): void {
    this.#disarm();
    if (this.#crash === null) return;
    let earliest = Number.POSITIVE_INFINITY;
    for (const entry of this.#scheduled.values()) {
      if (entry.nextAt !== null) earliest = Math.min(earliest, entry.nextAt);
    }
    if (earliest === Number.POSITIVE_INFINITY) return;
    const delay = Math.min(Math.max(earliest - this.#options.clock.now(), 0), MAX_TIMER_DELAY_MS);
    this.#timer = this.#timers.setTimeout(() => {
      this.#timer = null;
      this.#serially(() => this.#wake());
    }, delay);
  }

  #disarm(): void {
    if (this.#timer === null) return;
    this.#timers.clearTimeout(this.#timer);
    this.#timer = null;
  }

  #logScheduled(entry: ScheduledCron, message: string): void {
    const { id, file } = entry.cron;
    const nextRunAt = entry.nextAt === null ? null : new Date(entry.nextAt).toISOString();
    this.#options.logger.info({ cron: id, file, nextRunAt, done: entry.done }, message);
  }
}
