/**
 * Session fields both history adapters derive the same way: ids, titles and token sums.
 */

import { randomBytes } from "node:crypto";
import { PicklebotError, UserError } from "../base/errors.js";
import type { ChatMessage, Session } from "../ports/index.js";

/** Longest title kept, in characters. */
export const MAX_TITLE_LENGTH = 80;

/** Session ids are safe as file names: letters, digits, `_` and `-` only. */
const SAFE_SESSION_ID = /^[A-Za-z0-9_-]{1,128}$/;

/**
 * A new session id that sorts by creation time: `s_`, the epoch milliseconds in base 36
 * (fixed width), then 12 random hex digits.
 */
export function newSessionId(now: number): string {
  const time = Math.max(0, Math.floor(now)).toString(36).padStart(9, "0");
  return `s_${time}${randomBytes(6).toString("hex")}`;
}

/** True when `id` is usable as a session id, and so as a file name. */
export function isSafeSessionId(id: string): boolean {
  return SAFE_SESSION_ID.test(id);
}

/** Throws unless `id` is usable as a session id (an injected generator may be wrong). */
export function assertSafeSessionId(id: string): void {
  if (!isSafeSessionId(id)) {
    // The generator is broken: every retry would make the same kind of id.
    throw new PicklebotError(`Session id ${JSON.stringify(id)} must match ${SAFE_SESSION_ID}`, {
      retryable: false,
    });
  }
}

/**
 * The title a message gives its session: the text of a user message, trimmed, its first
 * line, at most {@link MAX_TITLE_LENGTH} characters. Null when the message has no text.
 */
export function titleFromMessage(message: ChatMessage): string | null {
  if (message.role !== "user") return null;
  for (const block of message.content) {
    if (block.type !== "text") continue;
    const firstLine = block.text.trim().split(/\r?\n/, 1)[0] ?? "";
    const title = Array.from(firstLine).slice(0, MAX_TITLE_LENGTH).join("").trimEnd();
    if (title !== "") return title;
  }
  return null;
}

/** The error of an append to a session the store does not have. */
export function unknownSessionError(sessionId: string): UserError {
  return new UserError(
    `Session "${sessionId}" is not in the history store; start a new session with /new or pick an id from \`picklebot status\`.`,
    { context: { sessionId } },
  );
}

/** A row of the `sessions` table (the same columns in SQLite and PostgreSQL). */
export interface SessionRow {
  id: string;
  key: string;
  agent_id: string;
  title: string | null;
  created_at: number;
  updated_at: number;
  message_count: number;
  input_tokens: number;
  output_tokens: number;
  cache_read_tokens: number;
  cache_write_tokens: number;
  /** Null in rows written before the column existed. */
  model: string | null;
}

/** Maps a `sessions` row to a {@link Session}. */
export function sessionFromRow(row: SessionRow): Session {
  return {
    id: row.id,
    key: row.key,
    agentId: row.agent_id,
    title: row.title,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    messageCount: row.message_count,
    usage: {
      input: row.input_tokens,
      output: row.output_tokens,
      cacheRead: row.cache_read_tokens,
      cacheWrite: row.cache_write_tokens,
    },
    model: row.model ?? null,
  };
}
