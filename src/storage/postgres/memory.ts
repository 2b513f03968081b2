/**
 * The {@link MemoryStore} and {@link RecallStore} in PostgreSQL (migration 016), shared by
 * every process of a cluster. A change holds a transaction-scoped advisory lock on its
 * memory (agent and scope), so two turns writing one memory at once, on any hosts, take
 * turns, even for a memory with no row yet. Statements read as in SQLite.
 */
import type pg from "pg";
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
import { inTransaction, queryRetrying, retryOnDisconnect } from "./database.js";

/** {@link MEMORY_SQL} with PostgreSQL's numbered placeholders (`?` becomes `$1`, `$2`…). */
const SQL = Object.fromEntries(
  Object.entries(MEMORY_SQL).map(([name, text]) => {
    let n = 0;
    return [name, text.replace(/\?/g, () => `$${++n}`)];
  }),
) as Record<keyof typeof MEMORY_SQL, string>;

/** Serialises the changes of one memory across the cluster, until the transaction ends. */
const LOCK_MEMORY =
  "SELECT pg_advisory_xact_lock(hashtext('memory:' || $1::text || ':' || $2::text))";

/** Serialises links, which touch several memories and links at once. */
const LOCK_LINKS = "SELECT pg_advisory_xact_lock(hashtext('memory-links'))";

type Queryable = Pick<pg.PoolClient, "query">;

/** Memories, their changes and the links between person keys, in PostgreSQL. */
export class PostgresMemoryStore implements MemoryStore {
  readonly #pool: pg.Pool;

  /** `pool`: from `openPostgres` (migrated); never closed here. */
  constructor({ pool }: { pool: pg.Pool }) {
    this.#pool = pool;
  }

  async read(agentId: string, scope: MemoryScope): Promise<Memory> {
    return readMemory(this.#pool, agentId, await resolve(this.#pool, scope));
  }

  // Repeated after a lost connection only when keyed by a tool call: a repeat after a
  // lost COMMIT then finds the change and writes nothing twice.
  update(
    target: { agentId: string; scope: MemoryScope },
    origin: MemoryOrigin,
    edit: MemoryEditor,
  ): Promise<MemoryUpdateResult> {
    const callKey = callKeyOf(origin);
    const once = () =>
      inTransaction(this.#pool, async (client): Promise<MemoryUpdateResult> => {
        const scope = await resolve(client, target.scope);
        await client.query(LOCK_MEMORY, [target.agentId, scope]);
        const done = callKey && (await client.query<MemoryChangeRow>(SQL.changeOfCall, callKey));
        if (done?.rows[0]) return { status: "repeated", change: changeFromRow(done.rows[0]) };
        const result = edit((await readMemory(client, target.agentId, scope)).text);
        if ("refused" in result) return { status: "refused", reason: result.refused };
        await write(client, target.agentId, scope, result.text, origin.at);
        const change = await record(
          client,
          { agentId: target.agentId, scope, ...result.change },
          origin,
        );
        return { status: "applied", text: result.text, change };
      });
    return callKey ? retryOnDisconnect(once) : once();
  }

  async list(agentId?: string): Promise<Memory[]> {
    const { rows } =
      agentId === undefined
        ? await queryRetrying<MemoryRow>(this.#pool, SQL.list)
        : await queryRetrying<MemoryRow>(this.#pool, SQL.listOfAgent, [agentId]);
    return rows.map(memoryFromRow);
  }

  async changes(query: MemoryChangeQuery = {}): Promise<MemoryChange[]> {
    const scopes = query.scope === undefined ? null : await sharing(this.#pool, query.scope);
    const { rows } = await queryRetrying<MemoryChangeRow>(
      this.#pool,
      `SELECT * FROM memory_changes WHERE ($1::text IS NULL OR agent_id = $1)
         AND ($2::text[] IS NULL OR scope = ANY ($2))
       ORDER BY id DESC LIMIT $3`,
      [query.agentId ?? null, scopes, listLimit(query.limit, CHANGE_LIST_LIMIT)],
    );
    return rows.map(changeFromRow);
  }

  // Not repeated after a lost connection: a repeat after a lost COMMIT finds the link
  // made and says so, which is the truth.
  link(person: string, to: string, origin: MemoryOrigin): Promise<PersonLink> {
    return inTransaction(this.#pool, async (client) => {
      await client.query(LOCK_LINKS);
      const toLink = (await client.query<PersonLinkRow>(SQL.linkOf, [to])).rows[0];
      const root = linkTarget(person, to, toLink);
      const aliasMemories = (await client.query<MemoryRow>(SQL.readScope, [person])).rows;
      const rootTexts = new Map<string, string>();
      for (const memory of aliasMemories) {
        await client.query(LOCK_MEMORY, [memory.agent_id, root]);
        rootTexts.set(memory.agent_id, (await readMemory(client, memory.agent_id, root)).text);
      }
      for (const { agentId, text, added } of mergedMemories(
        aliasMemories,
        (id) => rootTexts.get(id) ?? "",
      )) {
        if (added.length > 0) await write(client, agentId, root, text, origin.at);
        for (const entry of added) {
          const change = { agentId, scope: root, action: "link" as const, entry, previous: person };
          await record(client, change, origin);
        }
        await client.query(SQL.drop, [agentId, person]);
      }
      await client.query(SQL.moveLinks, [root, person]);
      await client.query(SQL.addLink, [person, root, origin.at]);
      return { person, linkedTo: root, at: origin.at };
    });
  }

  async unlink(person: string): Promise<boolean> {
    return ((await queryRetrying(this.#pool, SQL.unlink, [person])).rowCount ?? 0) > 0;
  }

  async links(): Promise<PersonLink[]> {
    return (await queryRetrying<PersonLinkRow>(this.#pool, SQL.links)).rows.map(linkFromRow);
  }
}

/** The key `scope`'s memory is kept under: a linked person's link target. */
async function resolve(db: Queryable, scope: MemoryScope): Promise<MemoryScope> {
  const { rows } = await db.query<PersonLinkRow>(SQL.linkOf, [scope]);
  return rows[0]?.linked_to ?? scope;
}

/** Every key sharing `scope`'s memory: the one it resolves to and those linked to it. */
async function sharing(db: Queryable, scope: MemoryScope): Promise<string[]> {
  const root = await resolve(db, scope);
  const { rows } = await db.query<PersonLinkRow>(SQL.linksTo, [root]);
  return [root, ...rows.map((row) => row.person)];
}

async function readMemory(db: Queryable, agentId: string, scope: MemoryScope): Promise<Memory> {
  const { rows } = await db.query<MemoryRow>(SQL.read, [agentId, scope]);
  return rows[0] ? memoryFromRow(rows[0]) : emptyMemory(agentId, scope);
}

/** Stores a memory's text; an empty text removes its row. */
async function write(
  db: Queryable,
  agentId: string,
  scope: MemoryScope,
  text: string,
  at: number,
): Promise<void> {
  if (text === "") await db.query(SQL.drop, [agentId, scope]);
  else await db.query(SQL.write, [agentId, scope, text, at]);
}

async function record(
  db: Queryable,
  change: ChangeToRecord,
  origin: MemoryOrigin,
): Promise<MemoryChange> {
  const { rows } = await db.query<MemoryChangeRow>(SQL.record, recordParams(change, origin));
  return changeFromRow(rows[0] as MemoryChangeRow);
}

/** Sessions' memory records and the full-text search over the stored messages, in PostgreSQL. */
export class PostgresRecallStore implements RecallStore {
  readonly #pool: pg.Pool;

  /** `pool`: from `openPostgres` (migrated); never closed here. */
  constructor({ pool }: { pool: pg.Pool }) {
    this.#pool = pool;
  }

  async session(sessionId: string): Promise<SessionMemory | null> {
    const { rows } = await queryRetrying<SessionMemoryRow>(this.#pool, SQL.session, [sessionId]);
    return rows[0] ? sessionMemoryFromRow(rows[0]) : null;
  }

  // Safe to repeat after a lost connection: a second run keeps what the first stored.
  async snapshot(record: SessionMemory): Promise<SessionMemory> {
    const { rows } = await queryRetrying<SessionMemoryRow>(
      this.#pool,
      SQL.snapshot,
      snapshotParams(record),
    );
    return sessionMemoryFromRow(rows[0] as SessionMemoryRow);
  }

  async retake(sessionId: string): Promise<void> {
    await queryRetrying(this.#pool, SQL.retake, [sessionId]);
  }

  async personOf(sessionKey: string): Promise<string | null> {
    const { rows } = await queryRetrying<{ person: string }>(this.#pool, SQL.personOf, [
      sessionKey,
    ]);
    return rows[0]?.person ?? null;
  }

  async search(query: SearchQuery): Promise<SearchHit[]> {
    const words = searchWords(query.text);
    const persons = personsOf(query.scope);
    if (words.length === 0 || persons?.length === 0) return [];
    const limit = searchLimit(query.limit);
    const whose = persons ?? (query.scope as { sessionKey: string }).sessionKey;
    const sql = persons ? SEARCH_PERSONS : SEARCH_SESSION_KEY;
    const anyWord = words.join(" | ");
    const best = async (match: string) =>
      (
        await queryRetrying<SearchHitRow>(this.#pool, sql, [
          match,
          query.scope.agentId,
          whose,
          limit,
          SEARCH_RANK_WINDOW,
          anyWord,
        ])
      ).rows;
    const hits = words.length > 1 ? await best(words.join(" & ")) : [];
    if (hits.length < limit) {
      const found = new Set(hits.map((hit) => `${hit.session_id}/${hit.seq}`));
      for (const hit of await best(anyWord)) {
        if (hits.length < limit && !found.has(`${hit.session_id}/${hit.seq}`)) hits.push(hit);
      }
    }
    return hits.map(hitFromRow);
  }
}

/**
 * A search whose scope is `whose` (a condition on `sm`, the session's memory record, with
 * $3): $1 the words joined by `&` (every one) or `|` (any), $2 agent, $4 limit, $5 the rank
 * window ({@link SEARCH_RANK_WINDOW}), $6 the words to mark in the headline. The query is
 * written out (not in a CTE) so the planner sees how common the words are: it walks the
 * newest messages (`messages_created`) for a common word and the GIN index for a rare
 * one. Only the newest matches are ranked, and only the best get a headline, which reads
 * their text again.
 */
function searchSql(whose: string): string {
  return `WITH recent AS (
    SELECT m.session_id, sm.session_key, m.seq, m.role, m.created_at, m.content, m.search
    FROM session_memory sm JOIN messages m ON m.session_id = sm.session_id
    WHERE m.search @@ to_tsquery('english', $1) AND sm.agent_id = $2 AND ${whose}
    ORDER BY m.created_at DESC, m.seq DESC
    LIMIT $5),
  best AS (
    SELECT *, ts_rank(search, to_tsquery('english', $1)) AS rank FROM recent
    ORDER BY rank DESC, created_at DESC, seq DESC
    LIMIT $4)
  SELECT session_id, session_key, seq, role, created_at,
    ts_headline('english',
      (SELECT string_agg(value #>> '{}', E'\\n') FROM jsonb_array_elements(
        jsonb_path_query_array(content::jsonb, '$[*] ? (@.type == "text").text'))),
      to_tsquery('english', $6), 'StartSel=[, StopSel=], MinWords=15, MaxWords=35') AS snippet
  FROM best
  ORDER BY rank DESC, created_at DESC, seq DESC`;
}

const SEARCH_PERSONS = searchSql("sm.person = ANY ($3::text[])");
const SEARCH_SESSION_KEY = searchSql("sm.session_key = $3");
