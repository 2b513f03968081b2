/**
 * The {@link OutboxStore} in PostgreSQL (table `outbox`, migration 005), shared by every
 * process of a cluster: the process that ran a job sends its reply, the leader retries what
 * failed, and the delivery lease ({@link OutboxStore.claim}) keeps the two from sending one
 * entry at once. Rows map to entries exactly as in SQLite ({@link toEntry}).
 *
 * Every statement is safe to repeat after a lost connection (keyed by id or dedupe key, or
 * conditional on the state it moves from), so each runs under `retryOnDisconnect`.
 */

import type pg from "pg";
import { PicklebotError } from "../../base/errors.js";
import type {
  ChatPlatformKind,
  OutboxAddress,
  OutboxEntry,
  OutboxStore,
  OutboxSummary,
} from "../../ports/index.js";
import { PRUNE_BATCH } from "../../ports/index.js";
import { FILE_ENTRY, type OutboxRow, RELEASE, toEntry } from "../outbox-rows.js";
import { retryOnDisconnect } from "./database.js";

/** Options of {@link PostgresOutboxStore}. */
export interface PostgresOutboxStoreOptions {
  /** The pool from `openPostgres` (migrated); never closed here. */
  pool: pg.Pool;
}

const SQL = {
  get: "SELECT * FROM outbox WHERE dedupe_key = $1",
  insert: `INSERT INTO outbox (dedupe_key, platform, chat_id, state, text, next_attempt_at, created_at, updated_at)
    VALUES ($1, $2, $3, $4, $5, $6, $6, $6) ON CONFLICT (dedupe_key) DO NOTHING`,
  submitDraft: `UPDATE outbox SET state = 'pending', text = $2, next_attempt_at = $3, updated_at = $3
    WHERE dedupe_key = $1 AND state = 'draft'`,
  setIds: "UPDATE outbox SET message_ids = $2, updated_at = $3 WHERE id = $1",
  due: `SELECT * FROM outbox WHERE state = 'pending' AND platform = $1 AND next_attempt_at <= $2
    ORDER BY id LIMIT $3`,
  claim: `UPDATE outbox SET locked_by = $2, locked_until = $4
    WHERE id = $1 AND state = 'pending' AND next_attempt_at <= $3
      AND (locked_by IS NULL OR locked_by = $2 OR locked_until <= $3)
    RETURNING *`,
  delivered: `UPDATE outbox SET state = 'delivered', attempts = attempts + 1, delivered_at = $2,
    last_error = NULL, ${RELEASE}, updated_at = $2 WHERE id = $1`,
  retry: `UPDATE outbox SET attempts = attempts + 1, last_error = $2, next_attempt_at = $3,
    ${RELEASE}, updated_at = $4 WHERE id = $1 AND state = 'pending'`,
  failed: `UPDATE outbox SET state = 'failed', attempts = attempts + 1, last_error = $2,
    ${RELEASE}, updated_at = $3 WHERE id = $1`,
  fileTexts: `SELECT text FROM outbox WHERE ${FILE_ENTRY}`,
  // $1 cutoff (epoch ms), $2 batch size.
  prune: `DELETE FROM outbox WHERE id IN (
      SELECT id FROM outbox WHERE state = 'delivered' AND delivered_at < $1 LIMIT $2)`,
  summary: `SELECT count(*) FILTER (WHERE state = 'pending')::int AS pending,
      count(*) FILTER (WHERE state = 'failed')::int AS failed,
      min(created_at) FILTER (WHERE state = 'pending') AS oldest
    FROM outbox WHERE state IN ('pending', 'failed')`,
} as const;

/** Durable outbox of chat replies in PostgreSQL. */
export class PostgresOutboxStore implements OutboxStore {
  readonly #pool: pg.Pool;

  constructor({ pool }: PostgresOutboxStoreOptions) {
    this.#pool = pool;
  }

  async get(dedupeKey: string): Promise<OutboxEntry | null> {
    const row = (await this.#query(SQL.get, [dedupeKey])).rows[0];
    return row ? toEntry(row) : null;
  }

  async openDraft(address: OutboxAddress, now: number): Promise<OutboxEntry> {
    await this.#insert(address, "draft", null, now);
    return this.#mustGet(address.dedupeKey);
  }

  async setMessageIds(id: number, messageIds: string[], now: number): Promise<void> {
    await this.#query(SQL.setIds, [id, JSON.stringify(messageIds), now]);
  }

  async submit(address: OutboxAddress, text: string, now: number): Promise<OutboxEntry> {
    if (!(await this.#insert(address, "pending", text, now))) {
      await this.#query(SQL.submitDraft, [address.dedupeKey, text, now]);
    }
    return this.#mustGet(address.dedupeKey);
  }

  async due(platform: ChatPlatformKind, now: number, limit: number): Promise<OutboxEntry[]> {
    return (await this.#query(SQL.due, [platform, now, limit])).rows.map(toEntry);
  }

  async claim(id: number, holder: string, now: number, until: number): Promise<OutboxEntry | null> {
    const row = (await this.#query(SQL.claim, [id, holder, now, until])).rows[0];
    return row ? toEntry(row) : null;
  }

  async markDelivered(id: number, now: number): Promise<void> {
    await this.#query(SQL.delivered, [id, now]);
  }

  async markRetry(id: number, error: string, retryAt: number, now: number): Promise<void> {
    await this.#query(SQL.retry, [id, error, retryAt, now]);
  }

  async markFailed(id: number, error: string, now: number): Promise<void> {
    await this.#query(SQL.failed, [id, error, now]);
  }

  async pruneDelivered(cutoff: number, batch = PRUNE_BATCH): Promise<number> {
    const result = await retryOnDisconnect(() => this.#pool.query(SQL.prune, [cutoff, batch]));
    return result.rowCount ?? 0;
  }

  async fileTexts(): Promise<string[]> {
    const result = await retryOnDisconnect(() => this.#pool.query<{ text: string }>(SQL.fileTexts));
    return result.rows.map((row) => row.text);
  }

  async summary(): Promise<OutboxSummary> {
    type Row = { pending: number; failed: number; oldest: number | null };
    const row = (await retryOnDisconnect(() => this.#pool.query<Row>(SQL.summary))).rows[0];
    return {
      pending: row?.pending ?? 0,
      failed: row?.failed ?? 0,
      oldestPendingAt: row?.oldest ?? null,
    };
  }

  /** Inserts a new entry; false when its dedupe key already has one. */
  async #insert(
    address: OutboxAddress,
    state: "draft" | "pending",
    text: string | null,
    now: number,
  ): Promise<boolean> {
    const params = [address.dedupeKey, address.platform, address.chatId, state, text, now];
    return ((await this.#query(SQL.insert, params)).rowCount ?? 0) > 0;
  }

  async #mustGet(dedupeKey: string): Promise<OutboxEntry> {
    const entry = await this.get(dedupeKey);
    if (!entry)
      throw new PicklebotError(`outbox entry ${dedupeKey} vanished while it was written`, {
        retryable: true,
      });
    return entry;
  }

  #query(text: string, params: unknown[]): Promise<pg.QueryResult<OutboxRow>> {
    return retryOnDisconnect(() => this.#pool.query<OutboxRow>(text, params));
  }
}
