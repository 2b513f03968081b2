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
import type { Database } from "./database.js";

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

/** A {@link CronStateStore} in memory: for tests and the `memory` queue backend. */
export class MemoryCronStateStore implements CronStateStore {
  readonly #states = new Map<string, CronState>();

  async get(id: string): Promise<CronState | null> {
    const state = this.#states.get(id);
    return state === undefined ? null : { ...state };
  }

  async markSeen(id: string, at: number): Promise<void> {
    if (!this.#states.has(id)) {
      this.#states.set(id, { lastFiredAt: null, disabled: false, firstSeenAt: at });
    }
  }

  async recordFired(
    id: string,
    occurrenceMs: number,
    options: { disable: boolean },
  ): Promise<boolean> {
    const state = this.#states.get(id) ?? {
      lastFiredAt: null,
      disabled: false,
      firstSeenAt: occurrenceMs,
    };
    if (state.lastFiredAt !== null && state.lastFiredAt >= occurrenceMs) return false;
    this.#states.set(id, {
      ...state,
      lastFiredAt: occurrenceMs,
      disabled: state.disabled || options.disable,
    });
    return true;
  }
}

interface CronStateRow {
  first_seen_at: number;
  last_fired_at: number | null;
  disabled: number;
}

/** Options of {@link SqliteCronStateStore}. */
export interface SqliteCronStateStoreOptions {
  /** The shared connection from `openDatabase` (migration 003 creates `cron_state`). */
  db: Database;
}

/**
 * The {@link CronStateStore} in picklebot's SQLite database (table `cron_state`). The CLI
 * and the server may both hold a connection; each write is a single statement, so the
 * compare-and-set is atomic across processes.
 */
export class SqliteCronStateStore implements CronStateStore {
  readonly #select;
  readonly #insertSeen;
  readonly #upsertFired;

  constructor({ db }: SqliteCronStateStoreOptions) {
    this.#select = db.prepare<[string], CronStateRow>(
      "SELECT first_seen_at, last_fired_at, disabled FROM cron_state WHERE cron_id = ?",
    );
    this.#insertSeen = db.prepare<[string, number]>(
      "INSERT INTO cron_state (cron_id, first_seen_at) VALUES (?, ?) ON CONFLICT (cron_id) DO NOTHING",
    );
    // The compare-and-set: the WHERE of the upsert makes an older or equal occurrence a
    // no-op (changes = 0) in the same statement that would write it.
    this.#upsertFired = db.prepare<[{ id: string; occurrence: number; disabled: number }]>(
      `INSERT INTO cron_state (cron_id, first_seen_at, last_fired_at, disabled)
       VALUES (@id, @occurrence, @occurrence, @disabled)
       ON CONFLICT (cron_id) DO UPDATE SET
         last_fired_at = excluded.last_fired_at,
         disabled = MAX(cron_state.disabled, excluded.disabled)
       WHERE cron_state.last_fired_at IS NULL OR cron_state.last_fired_at < @occurrence`,
    );
  }

  async get(id: string): Promise<CronState | null> {
    const row = this.#select.get(id);
    if (row === undefined) return null;
    return {
      firstSeenAt: row.first_seen_at,
      lastFiredAt: row.last_fired_at,
      disabled: row.disabled === 1,
    };
  }

  async markSeen(id: string, at: number): Promise<void> {
    this.#insertSeen.run(id, at);
  }

  async recordFired(
    id: string,
    occurrenceMs: number,
    options: { disable: boolean },
  ): Promise<boolean> {
    const disabled = options.disable ? 1 : 0;
    return this.#upsertFired.run({ id, occurrence: occurrenceMs, disabled }).changes === 1;
  }
}
