/**
 * HistoryStore on SQLite (tables from `migrations/sqlite/001_history.sql`), in the same
 * database as the job queue so that the checkpoint, "append the user message and mark the
 * job checkpointed", is one transaction: see {@link SqliteHistoryStore.appendSync}.
 */

import type Database from "better-sqlite3";
import { systemClock } from "../../base/clock.js";
import { PicklebotError } from "../../base/errors.js";
import { zeroUsage } from "../../base/usage.js";
import {
  type AppendOptions,
  type ChatMessage,
  type Clock,
  type ContentBlock,
  type HistoryStore,
  SESSION_LIST_LIMIT,
  type Session,
  type SessionInit,
  type StoredMessage,
  type UsageLedger,
  type UsageQuery,
  type UsageRecord,
} from "../../ports/index.js";
import { cutContext, hasTurnStart } from "../context.js";
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

/** Options of {@link SqliteHistoryStore}. */
export interface SqliteHistoryStoreOptions {
  /** An open database with the migrations applied (`openDatabase`), shared with the queue. */
  db: Database.Database;
  /** Source of `createdAt`/`updatedAt`. (Default: the system clock) */
  clock?: Clock;
  /** New session ids. (Default: time-sortable random ids, `s_…`) */
  newId?: () => string;
  /** Whether `close()` closes `db`. (Default: false: whoever opened it closes it) */
  ownsDatabase?: boolean;
}

interface MessageRow {
  seq: number;
  role: ChatMessage["role"];
  content: string;
}

const SESSION_ORDER = "ORDER BY created_at DESC, rowid DESC";

/**
 * Sessions, messages and the usage ledger in SQLite. `createSession`, `getSession`, `currentSession` and
 * `append` also exist synchronously (`…Sync`), for transactions shared with the queue.
 */
export class SqliteHistoryStore implements HistoryStore, UsageLedger {
  readonly #db: Database.Database;
  readonly #clock: Clock;
  readonly #newId: () => string;
  readonly #ownsDatabase: boolean;
  readonly #sql: Statements;
  readonly #appendTransaction: Database.Transaction<
    (sessionId: string, message: ChatMessage, options: AppendOptions) => boolean
  >;
  readonly #readTailTransaction: Database.Transaction<
    (sessionId: string, maxMessages: number) => ChatMessage[]
  >;
  #closed = false;

  constructor(options: SqliteHistoryStoreOptions) {
    this.#db = options.db;
    this.#clock = options.clock ?? systemClock;
    this.#newId = options.newId ?? (() => newSessionId(this.#clock.now()));
    this.#ownsDatabase = options.ownsDatabase ?? false;
    this.#sql = prepareStatements(options.db);
    this.#appendTransaction = options.db.transaction((sessionId, message, appendOptions) =>
      this.#appendInTransaction(sessionId, message, appendOptions),
    );
    this.#readTailTransaction = options.db.transaction((sessionId, maxMessages) =>
      this.#readTailInTransaction(sessionId, maxMessages),
    );
  }

  /** Creates a session for `key`, which becomes that key's current session. */
  createSessionSync(init: SessionInit): Session {
    this.#assertOpen();
    const id = this.#newId();
    assertSafeSessionId(id);
    const now = this.#clock.now();
    const model = init.model ?? null;
    this.#sql.insertSession.run(id, init.key, init.agentId, now, now, model);
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

  /** The session with this id, or null. */
  getSessionSync(id: string): Session | null {
    this.#assertOpen();
    return toSession(this.#sql.selectSession.get(id));
  }

  /** The newest session of a key, or null when the key has none. */
  currentSessionSync(key: string): Session | null {
    this.#assertOpen();
    return toSession(this.#sql.selectCurrentSession.get(key));
  }

  /**
   * Appends a message and updates its session (title, `updatedAt`, `messageCount`, token
   * sums) in one transaction; false when `options.jobId` is already in this session
   * (nothing written). Synchronous so the server can call it inside a transaction of its
   * own on the same database, together with the queue's checkpoint:
   *
   * ```ts
   * db.transaction(() => { history.appendSync(id, message, { jobId }); markCheckpointed(job); })();
   * ```
   *
   * Inside such a transaction it runs as a savepoint, and a throw rolls back both.
   * Throws `UserError` when the session does not exist.
   */
  appendSync(sessionId: string, message: ChatMessage, options: AppendOptions = {}): boolean {
    this.#assertOpen();
    return this.#appendTransaction.immediate(sessionId, message, options);
  }

  async createSession(init: SessionInit): Promise<Session> {
    return this.createSessionSync(init);
  }

  async setSessionModel(sessionId: string, model: string | null): Promise<void> {
    this.#assertOpen();
    if (this.#sql.updateSessionModel.run(model, sessionId).changes === 0)
      throw unknownSessionError(sessionId);
  }

  async getSession(id: string): Promise<Session | null> {
    return this.getSessionSync(id);
  }

  async currentSession(key: string): Promise<Session | null> {
    return this.currentSessionSync(key);
  }

  async listSessions(options: { key?: string; limit?: number } = {}): Promise<Session[]> {
    this.#assertOpen();
    const limit = listLimit(options.limit, SESSION_LIST_LIMIT);
    const rows =
      options.key === undefined
        ? this.#sql.selectSessions.all(limit)
        : this.#sql.selectSessionsOfKey.all(options.key, limit);
    return rows.map((row) => toSession(row) as Session);
  }

  async append(sessionId: string, message: ChatMessage, options?: AppendOptions): Promise<boolean> {
    return this.appendSync(sessionId, message, options);
  }

  async loadContext(sessionId: string, maxMessages: number): Promise<ChatMessage[]> {
    this.#assertOpen();
    const tail = this.#readTailTransaction.deferred(sessionId, maxMessages);
    return cutContext(tail, maxMessages);
  }

  async messages(sessionId: string): Promise<StoredMessage[]> {
    this.#assertOpen();
    return this.#sql.selectAll.all(sessionId).map(toStoredMessage);
  }

  async calls(query: UsageQuery): Promise<UsageRecord[]> {
    this.#assertOpen();
    const { where, params } = usageWhere(query, () => "?");
    const rows = this.#db
      .prepare<unknown[], UsageRow>(`SELECT * FROM usage WHERE ${where} ORDER BY created_at, rowid`)
      .all(...params);
    return rows.map(usageFromRow);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#ownsDatabase) this.#db.close();
  }

  /** Body of {@link appendSync}; runs inside its transaction. */
  #appendInTransaction(sessionId: string, message: ChatMessage, options: AppendOptions): boolean {
    const session = this.#sql.selectAppendTarget.get(sessionId);
    if (session === undefined) throw unknownSessionError(sessionId);
    const count = session.message_count;
    const now = this.#clock.now();
    const content = JSON.stringify(message.content);
    const jobId = options.jobId ?? null;
    const inserted = this.#sql.insertMessage.run(
      sessionId,
      count + 1,
      message.role,
      content,
      jobId,
      now,
    );
    if (inserted.changes === 0) return false;
    const usage = options.usage ?? zeroUsage();
    if (options.usage !== undefined) {
      const [job, model, batch, ...tokens] = usageColumns(usage, options.call);
      const ledger = [sessionId, count + 1, session.agent_id, session.key, job, model] as const;
      this.#sql.insertUsage.run(...ledger, batch ? 1 : 0, ...tokens, now);
    }
    const title = titleFromMessage(message);
    this.#sql.updateSessionAfterAppend.run(
      title,
      now,
      usage.input,
      usage.output,
      usage.cacheRead,
      usage.cacheWrite,
      sessionId,
    );
    return true;
  }

  /**
   * The session's last `maxMessages` messages, oldest first, plus older pages until the
   * tail holds a turn start or the session's first message: only this session's rows,
   * read backwards through the (session_id, seq) key.
   */
  #readTailInTransaction(sessionId: string, maxMessages: number): ChatMessage[] {
    const pageSize = Math.max(1, Math.floor(maxMessages));
    let rows = this.#sql.selectTail.all(sessionId, pageSize).reverse();
    let tail = rows.map(toMessage);
    let reachedFirst = rows.length < pageSize;
    while (!reachedFirst && !hasTurnStart(tail)) {
      const oldestSeq = (rows[0] as MessageRow).seq;
      rows = this.#sql.selectOlder.all(sessionId, oldestSeq, pageSize).reverse();
      tail = rows.map(toMessage).concat(tail);
      reachedFirst = rows.length < pageSize;
    }
    return tail;
  }

  #assertOpen(): void {
    if (this.#closed) throw new PicklebotError("The history store is closed.", { retryable: true });
  }
}

type Statements = ReturnType<typeof prepareStatements>;

/** Prepares every statement once; the tables must exist (migrations applied). */
function prepareStatements(db: Database.Database) {
  return {
    insertSession: db.prepare<[string, string, string, number, number, string | null]>(
      "INSERT INTO sessions (id, key, agent_id, created_at, updated_at, model) VALUES (?, ?, ?, ?, ?, ?)",
    ),
    updateSessionModel: db.prepare<[string | null, string]>(
      "UPDATE sessions SET model = ? WHERE id = ?",
    ),
    selectSession: db.prepare<[string], SessionRow>("SELECT * FROM sessions WHERE id = ?"),
    selectCurrentSession: db.prepare<[string], SessionRow>(
      `SELECT * FROM sessions WHERE key = ? ${SESSION_ORDER} LIMIT 1`,
    ),
    selectSessions: db.prepare<[number], SessionRow>(
      `SELECT * FROM sessions ${SESSION_ORDER} LIMIT ?`,
    ),
    selectSessionsOfKey: db.prepare<[string, number], SessionRow>(
      `SELECT * FROM sessions WHERE key = ? ${SESSION_ORDER} LIMIT ?`,
    ),
    selectAppendTarget: db.prepare<
      [string],
      Pick<SessionRow, "message_count" | "agent_id" | "key">
    >("SELECT message_count, agent_id, key FROM sessions WHERE id = ?"),
    insertUsage: db.prepare<
      [string, number, string, string, string | null, string, number, ...number[]]
    >(
      `INSERT INTO usage (session_id, seq, agent_id, session_key, job_id, model, batch,
         input_tokens, output_tokens, cache_read_tokens, cache_write_tokens,
         cache_write_1h_tokens, web_searches, service_usd, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    insertMessage: db.prepare<[string, number, string, string, string | null, number]>(
      `INSERT INTO messages (session_id, seq, role, content, job_id, created_at)
       VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (session_id, job_id) WHERE job_id IS NOT NULL DO NOTHING`,
    ),
    updateSessionAfterAppend: db.prepare<
      [string | null, number, number, number, number, number, string]
    >(
      `UPDATE sessions SET title = COALESCE(title, ?), updated_at = ?,
         message_count = message_count + 1, input_tokens = input_tokens + ?,
         output_tokens = output_tokens + ?, cache_read_tokens = cache_read_tokens + ?,
         cache_write_tokens = cache_write_tokens + ?
       WHERE id = ?`,
    ),
    selectTail: db.prepare<[string, number], MessageRow>(
      "SELECT seq, role, content FROM messages WHERE session_id = ? ORDER BY seq DESC LIMIT ?",
    ),
    selectAll: db.prepare<[string], StoredRow>(
      "SELECT role, content, created_at, job_id FROM messages WHERE session_id = ? ORDER BY seq",
    ),
    selectOlder: db.prepare<[string, number, number], MessageRow>(
      `SELECT seq, role, content FROM messages WHERE session_id = ? AND seq < ?
       ORDER BY seq DESC LIMIT ?`,
    ),
  };
}

function toSession(row: SessionRow | undefined): Session | null {
  return row === undefined ? null : sessionFromRow(row);
}

function toMessage(row: MessageRow): ChatMessage {
  return { role: row.role, content: JSON.parse(row.content) as ContentBlock[] };
}

/** A row of `selectAll`. */
interface StoredRow {
  role: ChatMessage["role"];
  content: string;
  created_at: number;
  job_id: string | null;
}

function toStoredMessage(row: StoredRow): StoredMessage {
  const content = JSON.parse(row.content) as ContentBlock[];
  return { role: row.role, content, at: row.created_at, jobId: row.job_id };
}
