/**
 * The CronStateStore port: what the CronWorker remembers about each cron between restarts.
 *
 * Glossary
 * - **Occurrence**: one scheduled time of a cron, as epoch ms (08:00 Berlin on 2025-01-15).
 *   It names the job it enqueues (`cron:<id>:<occurrence ISO>`).
 * - **Fired**: the occurrence's job was enqueued and the occurrence recorded here. The last
 *   fired occurrence only moves forward, so an occurrence fires at most once across
 *   restarts and across several processes sharing one store.
 * - **First seen**: when the cron was first loaded; `catch_up` never looks further back, so a
 *   new file does not fire for times before it existed.
 * - **Disabled**: a `one_off` cron that has fired. It stays disabled even when its file is
 *   edited; the file itself is never changed or deleted.
 */

/** What the store knows about one cron. Times are epoch milliseconds. */
export interface CronState {
  /** The last occurrence that fired, or null when none has. */
  lastFiredAt: number | null;
  /** True once a `one_off` cron has fired. */
  disabled: boolean;
  /** When the cron was first loaded. */
  firstSeenAt: number;
}

/** Durable memory of fired occurrences, shared by every process of one workspace. */
export interface CronStateStore {
  /** The cron's state, or null when it was never seen. */
  get(id: string): Promise<CronState | null>;
  /** Records that the cron exists, at `at`; no change when it was seen before. */
  markSeen(id: string, at: number): Promise<void>;
  /**
   * Records `occurrenceMs` as the cron's last fired occurrence, atomically, and disables the
   * cron when `options.disable`. Returns false, changing nothing, when that occurrence or a
   * later one was already recorded (by this process or another one).
   */
  recordFired(id: string, occurrenceMs: number, options: { disable: boolean }): Promise<boolean>;
}
