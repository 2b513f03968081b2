/**
 * The {@link MemoryStore} and {@link RecallStore} in picklebot's SQLite database (migration
 * 014). Every change is one IMMEDIATE transaction, so two turns writing one memory at once
 * take turns, and a tool call's change and its record commit together.
 */
import { UserError } from "../../base/errors.js";
import type {
  Memory,
  MemoryChange,
  MemoryChangeQuery,
  MemoryEditor,
  MemoryOrigin,
  MemoryScope,
  MemoryStore,
  MemoryUpdateResult,
  PersonLink,
  RecallScope,
  RecallStore,
  SearchHit,
  SearchQuery,
  SessionMemory,
} from "../../ports/index.js";
import { listLimit } from "../list-limit.js";
import {
  CHANGE_LIST_LIMIT,
  type ChangeToRecord,
  callKeyOf,
  changeFromRow,
  emptyMemory,
  hitFromRow,
  linkFromRow,
  linkTarget,
  MEMORY_SQL,
  type MemoryChangeRow,
  type MemoryRow,
  memoryFromRow,
  mergedMemories,
  type PersonLinkRow,
  personsOf,
  recordParams,
  SEARCH_RANK_WINDOW,
  type SearchHitRow,
  type SessionMemoryRow,
  searchLimit,
  searchWords,
  sessionMemoryFromRow,
  snapshotParams,
} from "../memory-rows.js";
import type { Database } from "./database.js";

/** Memories, their changes and the links between person keys, in SQLite. */
export class SqliteMemoryStore implements MemoryStore {
  readonly #db: Database;

  constructor({ db }: { db: Database }) {
    this.#db = db;
  }

  async read(agentId: string, scope: MemoryScope): Promise<Memory> {
    return this.#readSync(agentId, this.#resolve(scope));
  }

  async update(
    target: { agentId: string; scope: MemoryScope },
    origin: MemoryOrigin,
    edit: MemoryEditor,
  ): Promise<MemoryUpdateResult> {
    return this.#db
      .transaction((): MemoryUpdateResult => {
        const callKey = callKeyOf(origin);
        const done = callKey && this.#get<MemoryChangeRow>(MEMORY_SQL.changeOfCall, ...callKey);
        if (done) return { status: "repeated", change: changeFromRow(done) };
        const scope = this.#resolve(target.scope);
        const result = edit(this.#readSync(target.agentId, scope).text);
        if ("refused" in result) return { status: "refused", reason: result.refused };
        this.#write(target.agentId, scope, result.text, origin.at);
        const change = this.#record({ agentId: target.agentId, scope, ...result.change }, origin);
        return { status: "applied", text: result.text, change };
      })
      .immediate();
  }

  async list(agentId?: string): Promise<Memory[]> {
    const rows =
      agentId === undefined
        ? this.#all<MemoryRow>(MEMORY_SQL.list)
        : this.#all<MemoryRow>(MEMORY_SQL.listOfAgent, agentId);
    return rows.map(memoryFromRow);
  }

  async changes(query: MemoryChangeQuery = {}): Promise<MemoryChange[]> {
    const scopes = query.scope === undefined ? null : this.#sharing(query.scope);
    const rows = this.#all<MemoryChangeRow>(
      `SELECT * FROM memory_changes WHERE (? IS NULL OR agent_id = ?)
         AND (? IS NULL OR scope IN (SELECT value FROM json_each(?)))
       ORDER BY id DESC LIMIT ?`,
      query.agentId ?? null,
      query.agentId ?? null,
      scopes && "set",
      scopes && JSON.stringify(scopes),
      listLimit(query.limit, CHANGE_LIST_LIMIT),
    );
    return rows.map(changeFromRow);
  }

  async link(person: string, to: string, origin: MemoryOrigin): Promise<PersonLink> {
    return this.#db
      .transaction((): PersonLink => {
        const root = linkTarget(person, to, this.#get<PersonLinkRow>(MEMORY_SQL.linkOf, to));
        const merged = mergedMemories(
          this.#all<MemoryRow>(MEMORY_SQL.readScope, person),
          (agentId) => this.#readSync(agentId, root).text,
        );
        for (const { agentId, text, added } of merged) {
          if (added.length > 0) this.#write(agentId, root, text, origin.at);
          for (const entry of added) {
            this.#record({ agentId, scope: root, action: "link", entry, previous: person }, origin);
          }
          this.#run(MEMORY_SQL.drop, agentId, person);
        }
        this.#run(MEMORY_SQL.moveLinks, root, person);
        this.#run(MEMORY_SQL.addLink, person, root, origin.at);
        return { person, linkedTo: root, at: origin.at };
      })
      .immediate();
  }

  async unlink(person: string): Promise<boolean> {
    return this.#run(MEMORY_SQL.unlink, person) > 0;
  }

  async links(): Promise<PersonLink[]> {
    return this.#all<PersonLinkRow>(MEMORY_SQL.links).map(linkFromRow);
  }

  /** The key `scope`'s memory is kept under: a linked person's link target. */
  #resolve(scope: MemoryScope): MemoryScope {
    return this.#get<PersonLinkRow>(MEMORY_SQL.linkOf, scope)?.linked_to ?? scope;
  }

  /** Every key sharing `scope`'s memory: the one it resolves to and those linked to it. */
  #sharing(scope: MemoryScope): string[] {
    const root = this.#resolve(scope);
    return [root, ...this.#all<PersonLinkRow>(MEMORY_SQL.linksTo, root).map((row) => row.person)];
  }

  #readSync(agentId: string, scope: MemoryScope): Memory {
    const row = this.#get<MemoryRow>(MEMORY_SQL.read, agentId, scope);
    return row ? memoryFromRow(row) : emptyMemory(agentId, scope);
  }

  /** Stores a memory's text; an empty text removes its row. */
  #write(agentId: string, scope: MemoryScope, text: string, at: number): void {
    if (text === "") this.#run(MEMORY_SQL.drop, agentId, scope);
    else this.#run(MEMORY_SQL.write, agentId, scope, text, at);
  }

  #record(change: ChangeToRecord, origin: MemoryOrigin): MemoryChange {
    const row = this.#get<MemoryChangeRow>(MEMORY_SQL.record, ...recordParams(change, origin));
    return changeFromRow(row as MemoryChangeRow);
  }

  #get<Row>(sql: string, ...params: unknown[]): Row | undefined {
    return this.#db.prepare<unknown[], Row>(sql).get(...params);
  }

  #all<Row>(sql: string, ...params: unknown[]): Row[] {
    return this.#db.prepare<unknown[], Row>(sql).all(...params);
  }

  #run(sql: string, ...params: unknown[]): number {
    return this.#db.prepare(sql).run(...params).changes;
  }
}

/** Options of {@link SqliteRecallStore}. */
export interface SqliteRecallStoreOptions {
  db: Database;
  /**
   * Whether the history is in this database: with `history.backend: jsonl` it is not, and
   * a search says so. (Default: true)
   */
  searchable?: boolean;
}

/** Sessions' memory records and the FTS5 search over the stored messages, in SQLite. */
export class SqliteRecallStore implements RecallStore {
  readonly #db: Database;
  readonly #searchable: boolean;

  constructor(options: SqliteRecallStoreOptions) {
    this.#db = options.db;
    this.#searchable = options.searchable ?? true;
  }

  async session(sessionId: string): Promise<SessionMemory | null> {
    const row = this.#db.prepare<[string], SessionMemoryRow>(MEMORY_SQL.session).get(sessionId);
    return row ? sessionMemoryFromRow(row) : null;
  }

  async snapshot(record: SessionMemory): Promise<SessionMemory> {
    const row = this.#db
      .prepare<unknown[], SessionMemoryRow>(MEMORY_SQL.snapshot)
      .get(...snapshotParams(record));
    return sessionMemoryFromRow(row as SessionMemoryRow);
  }

  async retake(sessionId: string): Promise<void> {
    this.#db.prepare(MEMORY_SQL.retake).run(sessionId);
  }

  async personOf(sessionKey: string): Promise<string | null> {
    const row = this.#db.prepare<[string], { person: string }>(MEMORY_SQL.personOf).get(sessionKey);
    return row?.person ?? null;
  }

  async search(query: SearchQuery): Promise<SearchHit[]> {
    if (!this.#searchable) {
      throw new UserError(
        "searching past conversations needs the history in the database; set history.backend to sqlite (the default) or postgres",
      );
    }
    const words = searchWords(query.text);
    const persons = personsOf(query.scope);
    if (words.length === 0 || persons?.length === 0) return [];
    const limit = searchLimit(query.limit);
    const whose = scopeExpression(query.scope);
    const anyWord = `text : (${quoted(words).join(" OR ")}) AND scope : (${whose})`;
    const everyWord = `text : (${quoted(words).join(" AND ")}) AND scope : (${whose})`;
    const best = words.length > 1 ? this.#best(everyWord, limit) : [];
    for (const id of best.length < limit ? this.#best(anyWord, limit) : []) {
      if (best.length < limit && !best.includes(id)) best.push(id);
    }
    const hit = this.#db.prepare<unknown[], SearchHitRow>(
      `SELECT m.session_id, sm.session_key, m.seq, m.role, m.created_at, found.snippet
       FROM (SELECT session_id, seq, snippet(messages_search, 0, '[', ']', '…', 24) AS snippet
             FROM messages_search
             -- A JavaScript number binds as a real, which FTS5 does not look a rowid up by.
             WHERE messages_search MATCH @match AND rowid = CAST(@id AS INTEGER)) found
       JOIN messages m ON m.session_id = found.session_id AND m.seq = found.seq
       JOIN session_memory sm ON sm.session_id = m.session_id
       WHERE sm.agent_id = @agentId AND ${
         persons
           ? "sm.person IN (SELECT value FROM json_each(@persons))"
           : "sm.session_key = @sessionKey"
       }`,
    );
    const scope = {
      agentId: query.scope.agentId,
      persons: persons ? JSON.stringify(persons) : null,
      sessionKey: persons ? null : (query.scope as { sessionKey: string }).sessionKey,
    };
    return best.flatMap((id) => {
      const row = hit.get({ match: anyWord, id, ...scope });
      return row ? [hitFromRow(row)] : [];
    });
  }

  /**
   * The index rows of the `limit` best matches of `match` among its newest
   * {@link SEARCH_RANK_WINDOW} (bm25 over the text; the newer first on a tie): the index
   * walks its matches newest first and stops, so a word in every message costs no more
   * than a rare one.
   */
  #best(match: string, limit: number): number[] {
    return this.#db
      .prepare<[string, number, number], { id: number }>(
        `SELECT id FROM (
           SELECT rowid AS id, bm25(messages_search, 1.0, 0.0) AS score
           FROM messages_search WHERE messages_search MATCH ? ORDER BY rowid DESC LIMIT ?)
         ORDER BY score, id DESC LIMIT ?`,
      )
      .all(match, SEARCH_RANK_WINDOW, limit)
      .map((row) => row.id);
  }
}

/** Each word as an FTS5 string (a word holds letters, digits and `_` only). */
function quoted(words: readonly string[]): string[] {
  return words.map((word) => `"${word}"`);
}

/**
 * The scope's tokens in an FTS5 query (see migration 014): the agent with one of the
 * persons, or with the session key, so the index itself keeps to the scope's messages.
 */
function scopeExpression(scope: RecallScope): string {
  const persons = personsOf(scope);
  return persons
    ? persons.map((person) => scopeToken("p", scope.agentId, person)).join(" OR ")
    : scopeToken("k", scope.agentId, (scope as { sessionKey: string }).sessionKey);
}

/**
 * One scope token: a letter, the UTF-8 of the agent and the value (a line feed between)
 * in hex, and a 0, as migration 014 writes them.
 */
function scopeToken(kind: "k" | "p", agentId: string, value: string): string {
  return `${kind}${Buffer.from(`${agentId}\n${value}`, "utf8").toString("hex").toUpperCase()}0`;
}
