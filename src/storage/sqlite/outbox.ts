/**
 * The OutboxStore port: every reply a chat platform must receive, stored before it is
 * sent, so a failed or interrupted delivery is retried (across restarts) without running
 * the model again.
 *
 * An entry's life:
 *   draft (a reply streaming; message ids recorded as parts appear)
 *     ─► pending (final text known) ─► delivered (the platform confirmed every part)
 *                     ▲      └─► failed (the platform refused it for good)
 *                     └── retry at next_attempt_at (429 retry_after, 5xx, network)
 *
 * Several processes may see one entry (PostgreSQL mode: the process that ran the job sends
 * it at once, the leader's retry loop finds it due). Each send first takes the entry's
 * delivery lease with {@link OutboxStore.claim}, one conditional UPDATE: whoever gets it
 * sends, the other leaves the entry alone. Marking the outcome releases the lease; a
 * process that dies mid-send leaves one that expires after {@link DELIVERY_LEASE_MS}.
 */

import type { ChatPlatformKind } from "../../ports.js";
import type { Database } from "./database.js";

/**
 * How long a delivery lease holds an entry: longer than one attempt (a few API calls, and a
 * 429 wait before them), short enough that a crashed sender's entry is soon retried.
 */
export const DELIVERY_LEASE_MS = 120_000;

/** One reply in the outbox. Times are epoch milliseconds. */
export interface OutboxEntry {
  id: number;
  /** One entry per key: `job:<job id>`, `post:<job id>:<hash>`, `bus:<platform>:<message id>`. */
  dedupeKey: string;
  platform: ChatPlatformKind;
  chatId: string;
  state: "draft" | "pending" | "delivered" | "failed";
  /** The final text; null while a draft. */
  text: string | null;
  /** Platform messages already showing parts of this reply, in order. */
  messageIds: string[];
  attempts: number;
  nextAttemptAt: number;
  lastError: string | null;
  createdAt: number;
  deliveredAt: number | null;
}

/** Where an entry goes and what identifies it. */
export interface OutboxAddress {
  dedupeKey: string;
  platform: ChatPlatformKind;
  chatId: string;
}

/** What `status` and `/healthz` show about the outbox. */
export interface OutboxSummary {
  /** Entries waiting for (another) delivery attempt. */
  pending: number;
  /** Entries the platform refused for good. */
  failed: number;
  /** Creation time of the oldest pending entry, or null. */
  oldestPendingAt: number | null;
}

/** Durable outbox of chat replies. */
export interface OutboxStore {
  /** The entry with this key, or null. */
  get(dedupeKey: string): Promise<OutboxEntry | null>;
  /** Creates a draft for a streaming reply; returns the existing entry if the key has one. */
  openDraft(address: OutboxAddress, now: number): Promise<OutboxEntry>;
  /** Records the messages showing the entry so far. */
  setMessageIds(id: number, messageIds: string[], now: number): Promise<void>;
  /**
   * Sets the final text and makes the entry pending (due now), creating it if needed.
   * An entry already pending, delivered or failed is returned unchanged: a resumed job
   * never sends its reply twice.
   */
  submit(address: OutboxAddress, text: string, now: number): Promise<OutboxEntry>;
  /** Pending entries of a platform due at `now`, oldest first. */
  due(platform: ChatPlatformKind, now: number, limit: number): Promise<OutboxEntry[]>;
  /**
   * Takes the delivery lease of a pending, due entry for `holder` until `until`, and returns
   * the entry as stored now; null when it is not pending, not due, or another holder's
   * lease runs. A holder may take its own lease again (it restarted under the same id).
   */
  claim(id: number, holder: string, now: number, until: number): Promise<OutboxEntry | null>;
  /** The platform confirmed every part (releases the lease, as do the two below). */
  markDelivered(id: number, now: number): Promise<void>;
  /** A transient failure: counts the attempt and retries at `retryAt`. */
  markRetry(id: number, error: string, retryAt: number, now: number): Promise<void>;
  /** A permanent failure: the entry is kept, with the error, and not retried. */
  markFailed(id: number, error: string, now: number): Promise<void>;
  /** Counts for status and health. */
  summary(): Promise<OutboxSummary>;
}

/** A row of the `outbox` table, as SQLite and PostgreSQL return it. */
export interface OutboxRow {
  id: number;
  dedupe_key: string;
  platform: ChatPlatformKind;
  chat_id: string;
  state: OutboxEntry["state"];
  text: string | null;
  message_ids: string;
  attempts: number;
  next_attempt_at: number;
  last_error: string | null;
  created_at: number;
  delivered_at: number | null;
}

/** The one mapping from a stored row to an {@link OutboxEntry}, for every adapter. */
export function toEntry(row: OutboxRow): OutboxEntry {
  return {
    id: row.id,
    dedupeKey: row.dedupe_key,
    platform: row.platform,
    chatId: row.chat_id,
    state: row.state,
    text: row.text,
    messageIds: parseIds(row.message_ids),
    attempts: row.attempts,
    nextAttemptAt: row.next_attempt_at,
    lastError: row.last_error,
    createdAt: row.created_at,
    deliveredAt: row.delivered_at,
  };
}

/** A damaged id list costs only the edit-in-place: delivery then sends new messages. */
function parseIds(json: string): string[] {
  try {
    const parsed: unknown = JSON.parse(json);
    return Array.isArray(parsed) ? parsed.map(String) : [];
  } catch {
    return [];
  }
}

/** Releases the delivery lease: a fragment of every outcome's UPDATE, in both databases. */
export const RELEASE = "locked_by = NULL, locked_until = NULL";

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
    if (!row) throw new Error(`outbox entry ${dedupeKey} vanished while it was written`);
    return toEntry(row);
  }
}
