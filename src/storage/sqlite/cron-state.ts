import type { CronState, CronStateStore } from "../../ports/index.js";
import type { Database } from "./database.js";

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
