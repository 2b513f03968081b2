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
import type { Database } from "./database.js";

/** The {@link OutboxStore} in picklebot's SQLite database (migration 004, table `outbox`). */
export class SqliteOutboxStore implements OutboxStore {
  readonly #sql;

  constructor({ db }: { db: Database }) {
    this.#sql = {
      get: db.prepare<[string], OutboxRow>("SELECT * FROM outbox WHERE dedupe_key = ?"),
      insert: db.prepare(
        `INSERT INTO outbox (dedupe_key, platform, chat_id, state, text, next_attempt_at, created_at, updated_at)
         VALUES (@dedupeKey, @platform, @chatId, @state, @text, @now, @now, @now)
         ON CONFLICT (dedupe_key) DO NOTHING`,
      ),
      submitDraft: db.prepare(
        `UPDATE outbox SET state = 'pending', text = @text, next_attempt_at = @now, updated_at = @now
         WHERE dedupe_key = @dedupeKey AND state = 'draft'`,
      ),
      setIds: db.prepare("UPDATE outbox SET message_ids = ?, updated_at = ? WHERE id = ?"),
      due: db.prepare<[string, number, number], OutboxRow>(
        `SELECT * FROM outbox WHERE state = 'pending' AND platform = ? AND next_attempt_at <= ?
         ORDER BY id LIMIT ?`,
      ),
      claim: db.prepare<[{ id: number; holder: string; now: number; until: number }], OutboxRow>(
        `UPDATE outbox SET locked_by = @holder, locked_until = @until
         WHERE id = @id AND state = 'pending' AND next_attempt_at <= @now
           AND (locked_by IS NULL OR locked_by = @holder OR locked_until <= @now)
         RETURNING *`,
      ),
      delivered: db.prepare(
        `UPDATE outbox SET state = 'delivered', attempts = attempts + 1, delivered_at = @now, last_error = NULL, ${RELEASE}, updated_at = @now WHERE id = @id`,
      ),
      retry: db.prepare(
        `UPDATE outbox SET attempts = attempts + 1, last_error = @error, next_attempt_at = @retryAt, ${RELEASE}, updated_at = @now WHERE id = @id AND state = 'pending'`,
      ),
      failed: db.prepare(
        `UPDATE outbox SET state = 'failed', attempts = attempts + 1, last_error = @error, ${RELEASE}, updated_at = @now WHERE id = @id`,
      ),
      prune: db.prepare<[{ cutoff: number; batch: number }]>(
        `DELETE FROM outbox WHERE id IN (
           SELECT id FROM outbox WHERE state = 'delivered' AND delivered_at < @cutoff LIMIT @batch)`,
      ),
      fileTexts: db.prepare<[], { text: string }>(`SELECT text FROM outbox WHERE ${FILE_ENTRY}`),
      summary: db.prepare<[], { pending: number; failed: number; oldest: number | null }>(
        `SELECT COALESCE(SUM(state = 'pending'), 0) AS pending, COALESCE(SUM(state = 'failed'), 0) AS failed,
                MIN(CASE WHEN state = 'pending' THEN created_at END) AS oldest
         FROM outbox WHERE state = 'pending' OR state = 'failed'`,
      ),
    };
  }

  async get(dedupeKey: string): Promise<OutboxEntry | null> {
    const row = this.#sql.get.get(dedupeKey);
    return row ? toEntry(row) : null;
  }

  async openDraft(address: OutboxAddress, now: number): Promise<OutboxEntry> {
    this.#sql.insert.run({ ...address, state: "draft", text: null, now });
    return this.#mustGet(address.dedupeKey);
  }

  async setMessageIds(id: number, messageIds: string[], now: number): Promise<void> {
    this.#sql.setIds.run(JSON.stringify(messageIds), now, id);
  }

  async submit(address: OutboxAddress, text: string, now: number): Promise<OutboxEntry> {
    const inserted = this.#sql.insert.run({ ...address, state: "pending", text, now });
    if (inserted.changes === 0)
      this.#sql.submitDraft.run({ dedupeKey: address.dedupeKey, text, now });
    return this.#mustGet(address.dedupeKey);
  }

  async due(platform: ChatPlatformKind, now: number, limit: number): Promise<OutboxEntry[]> {
    return this.#sql.due.all(platform, now, limit).map(toEntry);
  }

  async claim(id: number, holder: string, now: number, until: number): Promise<OutboxEntry | null> {
    const row = this.#sql.claim.get({ id, holder, now, until });
    return row ? toEntry(row) : null;
  }

  async markDelivered(id: number, now: number): Promise<void> {
    this.#sql.delivered.run({ id, now });
  }

  async markRetry(id: number, error: string, retryAt: number, now: number): Promise<void> {
    this.#sql.retry.run({ id, error, retryAt, now });
  }

  async markFailed(id: number, error: string, now: number): Promise<void> {
    this.#sql.failed.run({ id, error, now });
  }

  async pruneDelivered(cutoff: number, batch = PRUNE_BATCH): Promise<number> {
    return this.#sql.prune.run({ cutoff, batch }).changes;
  }

  async fileTexts(): Promise<string[]> {
    return this.#sql.fileTexts.all().map((row) => row.text);
  }

  async summary(): Promise<OutboxSummary> {
    const row = this.#sql.summary.get();
    return {
      pending: row?.pending ?? 0,
      failed: row?.failed ?? 0,
      oldestPendingAt: row?.oldest ?? null,
    };
  }

  #mustGet(dedupeKey: string): OutboxEntry {
    const row = this.#sql.get.get(dedupeKey);
    if (!row)
      throw new PicklebotError(`outbox entry ${dedupeKey} vanished while it was written`, {
        retryable: true,
      });
    return toEntry(row);
  }
}
