/**
 * The {@link CronStateStore} in PostgreSQL (table `cron_state`, migration 003), shared by
 * every process of a cluster. Only the leader runs crons, but for a moment after a
 * leader change two processes may both believe they lead: the compare-and-set below still
 * lets an occurrence fire once.
 */
import type pg from "pg";
import type { CronState, CronStateStore } from "../../ports/index.js";
import { retryOnDisconnect } from "./database.js";

/** Options of {@link PostgresCronStateStore}. */
export interface PostgresCronStateStoreOptions {
  /** The pool from `openPostgres` (migrated); never closed here. */
  pool: pg.Pool;
}

interface CronStateRow {
  first_seen_at: number;
  last_fired_at: number | null;
  disabled: boolean;
}

const SQL = {
  select: "SELECT first_seen_at, last_fired_at, disabled FROM cron_state WHERE cron_id = $1",
  insertSeen:
    "INSERT INTO cron_state (cron_id, first_seen_at) VALUES ($1, $2) ON CONFLICT (cron_id) DO NOTHING",
  // The compare-and-set: an older or equal occurrence updates no row, in the same statement
  // that would write it. Repeating it after a lost reply returns false; the occurrence's
  // job was enqueued before, once, under its dedupe key.
  upsertFired: `INSERT INTO cron_state (cron_id, first_seen_at, last_fired_at, disabled)
    VALUES ($1, $2, $2, $3)
    ON CONFLICT (cron_id) DO UPDATE SET
      last_fired_at = excluded.last_fired_at,
      disabled = cron_state.disabled OR excluded.disabled
    WHERE cron_state.last_fired_at IS NULL OR cron_state.last_fired_at < $2`,
} as const;

/** Cron state in PostgreSQL. */
export class PostgresCronStateStore implements CronStateStore {
  readonly #pool: pg.Pool;

  constructor({ pool }: PostgresCronStateStoreOptions) {
    this.#pool = pool;
  }

  async get(id: string): Promise<CronState | null> {
    const result = await retryOnDisconnect(() => this.#pool.query<CronStateRow>(SQL.select, [id]));
    const row = result.rows[0];
    if (row === undefined) return null;
    return {
      firstSeenAt: row.first_seen_at,
      lastFiredAt: row.last_fired_at,
      disabled: row.disabled,
    };
  }

  async markSeen(id: string, at: number): Promise<void> {
    await retryOnDisconnect(() => this.#pool.query(SQL.insertSeen, [id, at]));
  }

  async recordFired(
    id: string,
    occurrenceMs: number,
    options: { disable: boolean },
  ): Promise<boolean> {
    const params = [id, occurrenceMs, options.disable];
    const result = await retryOnDisconnect(() => this.#pool.query(SQL.upsertFired, params));
    return result.rowCount === 1;
  }
}
