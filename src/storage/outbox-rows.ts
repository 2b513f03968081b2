/** The outbox table's rows, mapped alike by the SQLite and PostgreSQL stores. */
import type { ChatPlatformKind, OutboxEntry } from "../ports/index.js";

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

/**
 * Selects the file entries (`file:` and `voice:` keys, src/base/outbox-key.ts), whose text
 * describes a stored copy: a WHERE fragment, in both databases.
 */
export const FILE_ENTRY = "(dedupe_key LIKE 'file:%' OR dedupe_key LIKE 'voice:%')";
