/**
 * HistoryStore on PostgreSQL (tables from `migrations/postgres/002_history.sql`), in the
 * same database as the job queue so that the checkpoint is one transaction: see
 * {@link PostgresHistoryStore.appendOn}.
 */

import type pg from "pg";
import { systemClock } from "../../base/clock.js";
import { PicklebotError } from "../../base/errors.js";
import { zeroUsage } from "../../base/usage.js";
import {
  type AppendOptions,
  type ChatMessage,
  type Clock,
  type HistoryStore,
  SESSION_LIST_LIMIT,
  type Session,
  type SessionInit,
  type StoredMessage,
  type UsageLedger,
  type UsageQuery,
  type UsageRecord,
} from "../../ports/index.js";
import { cutContext, isTurnStart } from "../context.js";
import { listLimit } from "../list-limit.js";
import {
  assertSafeSessionId,
  newSessionId,
  type SessionRow,
  sessionFromRow,
  titleFromMessage,
  unknownSessionError,
} from "../session.js";
import { type UsageRow, usageColumns, usageFromRow, usageWhere } from "../usage-row.js";
import { retryOnDisconnect } from "./database.js";

/** Options of {@link PostgresHistoryStore}. */
export interface PostgresHistoryStoreOptions {
  /** The pool from `openPostgres` (migrated), shared with the queue; never closed here. */
  pool: pg.Pool;
  /** Source of `createdAt`/`updatedAt`. (Default: the system clock) */
  clock?: Clock;
  /** New session ids. (Default: time-sortable random ids, `s_…`) */
  newId?: () => string;
}

const SESSION_ORDER = "ORDER BY created_at DESC, seq DESC";

const SQL = {
  insertSession:
    "INSERT INTO sessions (id, key, agent_id, created_at, updated_at, model) VALUES ($1, $2, $3, $4, $4, $5)",
  updateSessionModel: "UPDATE sessions SET model = $1 WHERE id = $2",
  selectSession: "SELECT * FROM sessions WHERE id = $1",
  selectCurrentSession: `SELECT * FROM sessions WHERE key = $1 ${SESSION_ORDER} LIMIT 1`,
  selectSessions: `SELECT * FROM sessions ${SESSION_ORDER} LIMIT $1`,
  selectSessionsOfKey: `SELECT * FROM sessions WHERE key = $1 ${SESSION_ORDER} LIMIT $2`,
  // $1 session, $2 role, $3 content, $4 turn start, $5 job id, $6 now, $7 title,
  // $8..$11 tokens, $12 whether to record the call in the ledger, $13 its job, $14 model,
  // $15 batch, $16 1-hour cache writes, $17 web searches, $18 service USD. The session
  // row is locked first, so concurrent appends to one session number their messages one
  // after the other; a repeated job id inserts nothing.
  append: `WITH s AS (
      SELECT id, message_count, agent_id, key FROM sessions WHERE id = $1 FOR UPDATE),
    inserted AS (
      INSERT INTO messages (session_id, seq, role, content, turn_start, job_id, created_at)
      SELECT s.id, s.message_count + 1, $2, $3, $4, $5, $6 FROM s
      ON CONFLICT (session_id, job_id) WHERE job_id IS NOT NULL DO NOTHING
      RETURNING session_id, seq),
    ledger AS (
      INSERT INTO usage (session_id, seq, agent_id, session_key, job_id, model, batch,
        input_tokens, output_tokens, cache_read_tokens, cache_write_tokens,
        cache_write_1h_tokens, web_searches, service_usd, created_at)
      SELECT inserted.session_id, inserted.seq, s.agent_id, s.key, $13, $14, $15,
        $8, $9, $10, $11, $16, $17, $18, $6
      FROM inserted, s WHERE $12::boolean),
    updated AS (
      UPDATE sessions SET title = COALESCE(title, $7), updated_at = $6,
        message_count = message_count + 1, input_tokens = input_tokens + $8,
        output_tokens = output_tokens + $9, cache_read_tokens = cache_read_tokens + $10,
        cache_write_tokens = cache_write_tokens + $11
      FROM inserted WHERE sessions.id = inserted.session_id
      RETURNING 1)
    SELECT (SELECT count(*) FROM s)::integer AS found,
      (SELECT count(*) FROM updated)::integer AS appended`,
  // $1 session, $2 max messages: the last $2 messages, extended back to the turn start at
  // or before them, so cutContext can cut at a turn start (one snapshot, one read).
  tail: `WITH bounds AS (
      SELECT greatest(1, message_count - $2 + 1) AS window_start FROM sessions WHERE id = $1),
    start AS (
      SELECT coalesce((SELECT max(m.seq) FROM messages m WHERE m.session_id = $1
        AND m.turn_start AND m.seq <= bounds.window_start), bounds.window_start) AS seq
      FROM bounds)
    SELECT role, content FROM messages, start
    WHERE session_id = $1 AND messages.seq >= start.seq ORDER BY messages.seq`,
  all: `SELECT role, content, created_at, job_id FROM messages WHERE session_id = $1
    ORDER BY seq`,
} as const;

/** A row of {@link SQL.all}. */
interface StoredRow {
  role: ChatMessage["role"];
  content: string;
  created_at: string | number;
  job_id: string | null;
}

/** Sessions and messages in PostgreSQL, shared by every process of a cluster. */
export class PostgresHistoryStore implements HistoryStore, UsageLedger {
  readonly #pool: pg.Pool;
  readonly #clock: Clock;
  readonly #newId: () => string;
  #closed = false;

  constructor(options: PostgresHistoryStoreOptions) {
    this.#pool = options.pool;
    this.#clock = options.clock ?? systemClock;
    this.#newId = options.newId ?? (() => newSessionId(this.#clock.now()));
  }

  async createSession(init: SessionInit): Promise<Session> {
    this.#assertOpen();
    const id = this.#newId();
    assertSafeSessionId(id);
    const now = this.#clock.now();
    const model = init.model ?? null;
    // Safe to repeat: a second insert of the same id fails on the key, not silently.
    await this.#pool.query(SQL.insertSession, [id, init.key, init.agentId, now, model]);
    return {
      key: init.key,
      agentId: init.agentId,
      model,
      id,
      title: null,
      createdAt: now,
      updatedAt: now,
      messageCount: 0,
      usage: zeroUsage(),
    };
  }

  async setSessionModel(sessionId: string, model: string | null): Promise<void> {
    this.#assertOpen();
    const result = await retryOnDisconnect(() =>
      this.#pool.query(SQL.updateSessionModel, [model, sessionId]),
    );
    if (result.rowCount === 0) throw unknownSessionError(sessionId);
  }

  async getSession(id: string): Promise<Session | null> {
    return this.#selectOne(SQL.selectSession, [id]);
  }

  async currentSession(key: string): Promise<Session | null> {
    return this.#selectOne(SQL.selectCurrentSession, [key]);
  }

  async listSessions(options: { key?: string; limit?: number } = {}): Promise<Session[]> {
    this.#assertOpen();
    const limit = listLimit(options.limit, SESSION_LIST_LIMIT);
    const [text, params] =
      options.key === undefined
        ? [SQL.selectSessions, [limit]]
        : [SQL.selectSessionsOfKey, [options.key, limit]];
    const result = await retryOnDisconnect(() => this.#pool.query<SessionRow>(text, params));
    return result.rows.map(sessionFromRow);
  }

  async append(
    sessionId: string,
    message: ChatMessage,
    options: AppendOptions = {},
  ): Promise<boolean> {
    this.#assertOpen();
    // Without a job id a repeated append would store the message twice: no retry then.
    if (options.jobId === undefined) return this.appendOn(this.#pool, sessionId, message, options);
    return retryOnDisconnect(() => this.appendOn(this.#pool, sessionId, message, options));
  }

  /**
   * {@link append} on `client`, which may be inside the caller's transaction (the
   * checkpoint: the user message and the job's new state commit together).
   */
  async appendOn(
    client: pg.ClientBase | pg.Pool,
    sessionId: string,
    message: ChatMessage,
    options: AppendOptions = {},
  ): Promise<boolean> {
    const usage = options.usage ?? zeroUsage();
    const params = [
      sessionId,
      message.role,
      JSON.stringify(message.content),
      isTurnStart(message),
      options.jobId ?? null,
      this.#clock.now(),
      titleFromMessage(message),
      usage.input,
      usage.output,
      usage.cacheRead,
      usage.cacheWrite,
      options.usage !== undefined,
      ...usageColumns(usage, options.call).slice(0, 3),
      usage.cacheWrite1h ?? 0,
      usage.webSearches ?? 0,
      usage.serviceUsd ?? 0,
    ];
    const result = await client.query<{ found: number; appended: number }>(SQL.append, params);
    const row = result.rows[0];
    if (!row || row.found === 0) throw unknownSessionError(sessionId);
    return row.appended > 0;
  }

  async messages(sessionId: string): Promise<StoredMessage[]> {
    this.#assertOpen();
    const result = await retryOnDisconnect(() => this.#pool.query<StoredRow>(SQL.all, [sessionId]));
    return result.rows.map((row) => ({
      role: row.role,
      content: JSON.parse(row.content),
      at: Number(row.created_at),
      jobId: row.job_id,
    }));
  }

  async loadContext(sessionId: string, maxMessages: number): Promise<ChatMessage[]> {
    this.#assertOpen();
    const pageSize = Math.max(1, Math.floor(maxMessages));
    const result = await retryOnDisconnect(() =>
      this.#pool.query<{ role: ChatMessage["role"]; content: string }>(SQL.tail, [
        sessionId,
        pageSize,
      ]),
    );
    const tail = result.rows.map((row) => ({ role: row.role, content: JSON.parse(row.content) }));
    return cutContext(tail, maxMessages);
  }

  async calls(query: UsageQuery): Promise<UsageRecord[]> {
    this.#assertOpen();
    const { where, params } = usageWhere(query, (n) => `$${n}`);
    const text = `SELECT * FROM usage WHERE ${where} ORDER BY created_at, id`;
    const result = await retryOnDisconnect(() => this.#pool.query<UsageRow>(text, params));
    return result.rows.map(usageFromRow);
  }

  /** Marks the store closed; the pool belongs to whoever opened it. */
  async close(): Promise<void> {
    this.#closed = true;
  }

  async #selectOne(text: string, params: unknown[]): Promise<Session | null> {
    this.#assertOpen();
    const result = await retryOnDisconnect(() => this.#pool.query<SessionRow>(text, params));
    return result.rows[0] ? sessionFromRow(result.rows[0]) : null;
  }

  #assertOpen(): void {
    if (this.#closed) throw new PicklebotError("The history store is closed.", { retryable: true });
  }
}
