/**
 * What the SQLite and PostgreSQL memory stores share (their tables have the same columns,
 * migrations sqlite/014 and postgres/016): the statements that read the same in both
 * dialects (`?` placeholders; PostgreSQL's driver numbers them), the row mappings, and the
 * steps of a link, which both run inside their own transaction.
 */
import { UserError } from "../base/errors.js";
import { mergeMemoryText } from "../base/memory-text.js";
import type {
  Memory,
  MemoryAction,
  MemoryChange,
  MemoryOrigin,
  MemoryScope,
  PersonLink,
  RecallScope,
  SearchHit,
  SessionMemory,
} from "../ports/index.js";
import { SEARCH_LIMIT_MAX } from "../ports/index.js";

/** Changes {@link MemoryStore.changes} returns when the caller names no limit. */
export const CHANGE_LIST_LIMIT = 50;

/** Hits a search returns when the caller names no limit. */
export const SEARCH_LIMIT_DEFAULT = 5;

/**
 * Matches of a search that are ranked: its newest this many. A word in nearly every
 * message then costs a search no more than a rare one, and what was said lately about it
 * comes first; messages holding every word of the query are looked for first.
 */
export const SEARCH_RANK_WINDOW = 200;

/** A row of `memories`. */
export interface MemoryRow {
  agent_id: string;
  scope: string;
  text: string;
  updated_at: number;
}

/** A row of `memory_changes`. */
export interface MemoryChangeRow {
  id: number;
  agent_id: string;
  scope: string;
  action: string;
  entry: string | null;
  previous: string | null;
  by: string;
  job_id: string | null;
  session_id: string | null;
  call_id: string | null;
  created_at: number;
}

/** A row of `person_links`. */
export interface PersonLinkRow {
  person: string;
  linked_to: string;
  created_at: number;
}

/** A row of `session_memory`. */
export interface SessionMemoryRow {
  session_id: string;
  session_key: string;
  agent_id: string;
  person: string | null;
  snapshot: string | null;
  taken_at: number | null;
}

/** A search hit as both backends' statements return it. */
export interface SearchHitRow {
  session_id: string;
  session_key: string;
  seq: number;
  role: "user" | "assistant";
  created_at: number;
  snippet: string;
}

/** The statements of both backends, with `?` placeholders. */
export const MEMORY_SQL = {
  read: "SELECT * FROM memories WHERE agent_id = ? AND scope = ?",
  readScope: "SELECT * FROM memories WHERE scope = ? ORDER BY agent_id",
  write: `INSERT INTO memories (agent_id, scope, text, updated_at) VALUES (?, ?, ?, ?)
    ON CONFLICT (agent_id, scope) DO UPDATE SET text = excluded.text, updated_at = excluded.updated_at`,
  drop: "DELETE FROM memories WHERE agent_id = ? AND scope = ?",
  list: "SELECT * FROM memories ORDER BY agent_id, scope",
  listOfAgent: "SELECT * FROM memories WHERE agent_id = ? ORDER BY scope",
  record: `INSERT INTO memory_changes (agent_id, scope, action, entry, previous, by, job_id,
      session_id, call_id, created_at)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING *`,
  changeOfCall: "SELECT * FROM memory_changes WHERE session_id = ? AND call_id = ?",
  linkOf: "SELECT * FROM person_links WHERE person = ?",
  linksTo: "SELECT * FROM person_links WHERE linked_to = ? ORDER BY person",
  links: "SELECT * FROM person_links ORDER BY person",
  addLink: `INSERT INTO person_links (person, linked_to, created_at) VALUES (?, ?, ?)
    ON CONFLICT (person) DO UPDATE SET linked_to = excluded.linked_to, created_at = excluded.created_at`,
  moveLinks: "UPDATE person_links SET linked_to = ? WHERE linked_to = ?",
  unlink: "DELETE FROM person_links WHERE person = ?",
  session: "SELECT * FROM session_memory WHERE session_id = ?",
  snapshot: `INSERT INTO session_memory (session_id, session_key, agent_id, person, snapshot, taken_at)
    VALUES (?, ?, ?, ?, ?, ?)
    ON CONFLICT (session_id) DO UPDATE SET
      person = COALESCE(session_memory.person, excluded.person),
      taken_at = CASE WHEN session_memory.snapshot IS NULL THEN excluded.taken_at
        ELSE session_memory.taken_at END,
      snapshot = COALESCE(session_memory.snapshot, excluded.snapshot)
    RETURNING *`,
  retake: "UPDATE session_memory SET snapshot = NULL, taken_at = NULL WHERE session_id = ?",
  personOf: `SELECT person FROM session_memory WHERE session_key = ? AND person IS NOT NULL
    ORDER BY COALESCE(taken_at, 0) DESC LIMIT 1`,
} as const;

export function memoryFromRow(row: MemoryRow): Memory {
  return { agentId: row.agent_id, scope: row.scope, text: row.text, updatedAt: row.updated_at };
}

/** The memory of a scope never written. */
export function emptyMemory(agentId: string, scope: MemoryScope): Memory {
  return { agentId, scope, text: "", updatedAt: null };
}

export function changeFromRow(row: MemoryChangeRow): MemoryChange {
  return {
    id: row.id,
    agentId: row.agent_id,
    scope: row.scope,
    action: row.action as MemoryAction,
    entry: row.entry,
    previous: row.previous,
    by: row.by,
    jobId: row.job_id,
    sessionId: row.session_id,
    callId: row.call_id,
    at: row.created_at,
  };
}

export function hitFromRow(row: SearchHitRow): SearchHit {
  return {
    sessionId: row.session_id,
    sessionKey: row.session_key,
    seq: Number(row.seq),
    role: row.role,
    at: Number(row.created_at),
    snippet: row.snippet,
  };
}

export function linkFromRow(row: PersonLinkRow): PersonLink {
  return { person: row.person, linkedTo: row.linked_to, at: row.created_at };
}

export function sessionMemoryFromRow(row: SessionMemoryRow): SessionMemory {
  return {
    sessionId: row.session_id,
    sessionKey: row.session_key,
    agentId: row.agent_id,
    person: row.person,
    snapshot: row.snapshot,
    takenAt: row.taken_at,
  };
}

/** The parameters of {@link MEMORY_SQL.snapshot}. */
export function snapshotParams(record: SessionMemory): (string | number | null)[] {
  const { sessionId, sessionKey, agentId, person, snapshot, takenAt } = record;
  return [sessionId, sessionKey, agentId, person, snapshot, takenAt];
}

/** One change to record: what it did to which memory, and its origin. */
export interface ChangeToRecord {
  agentId: string;
  scope: MemoryScope;
  action: MemoryAction;
  entry: string | null;
  previous: string | null;
}

/** The parameters of {@link MEMORY_SQL.record}. */
export function recordParams(
  change: ChangeToRecord,
  origin: MemoryOrigin,
): (string | number | null)[] {
  return [
    change.agentId,
    change.scope,
    change.action,
    change.entry,
    change.previous,
    origin.by,
    origin.jobId ?? null,
    origin.sessionId ?? null,
    origin.callId ?? null,
    origin.at,
  ];
}

/** The session and call an origin's change is recorded once for, or null when it has none. */
export function callKeyOf(origin: MemoryOrigin): [string, string] | null {
  return origin.sessionId !== undefined && origin.callId !== undefined
    ? [origin.sessionId, origin.callId]
    : null;
}

/** The limit of a search: the caller's, at least 1 and at most {@link SEARCH_LIMIT_MAX}. */
export function searchLimit(limit: number | undefined): number {
  const wanted = Math.floor(limit ?? SEARCH_LIMIT_DEFAULT);
  return Math.min(SEARCH_LIMIT_MAX, Math.max(1, Number.isFinite(wanted) ? wanted : 1));
}

/**
 * Common English words a search leaves out (PostgreSQL's `english` configuration drops
 * them too), so "what did we say about the garden" looks for "say" and "garden".
 */
const STOP_WORDS = new Set(
  (
    "a about above after again against all am an and any are as at be because been before " +
    "being below between both but by can could did do does doing down during each few for " +
    "from further had has have having he her here hers herself him himself his how i if in " +
    "into is it its itself just me more most my myself no nor not now of off on once only " +
    "or other our ours ourselves out over own s same she should so some such t than that " +
    "the their theirs them themselves then there these they this those through to too " +
    "under until up very was we were what when where which while who whom why will with " +
    "would you your yours yourself yourselves"
  ).split(" "),
);

/** Words a search looks for at most. */
const MAX_SEARCH_WORDS = 32;

/**
 * The words of a search, for the backends' full-text query languages: runs of letters and
 * digits, so no operator or quote of the query reaches them, without {@link STOP_WORDS}.
 * Empty when there are none.
 */
export function searchWords(text: string): string[] {
  const words = text.toLowerCase().match(/[\p{L}\p{N}_]+/gu) ?? [];
  return [...new Set(words.filter((word) => !STOP_WORDS.has(word)))].slice(0, MAX_SEARCH_WORDS);
}

/** The person keys a scope reads, or null for a scope of one session key. */
export function personsOf(scope: RecallScope): readonly string[] | null {
  return "persons" in scope ? scope.persons : null;
}

/** The key a link of `person` to `to` points at: `to`'s own link target, if it has one. */
export function linkTarget(person: string, to: string, toLink: PersonLinkRow | undefined): string {
  const root = toLink?.linked_to ?? to;
  if (root === person) {
    throw new UserError(
      `${person} cannot be linked to ${to}: ${to} is ${to === person ? "the same key" : `linked to ${person}`}; link ${to} to ${person} instead, or unlink it first`,
    );
  }
  return root;
}

/**
 * What merging `person`'s memory into `root`'s stores: for each agent, the merged text
 * and the entries added.
 */
export function mergedMemories(
  aliasMemories: readonly MemoryRow[],
  rootText: (agentId: string) => string,
): { agentId: string; text: string; added: string[] }[] {
  return aliasMemories.map((memory) => ({
    agentId: memory.agent_id,
    ...mergeMemoryText(rootText(memory.agent_id), memory.text),
  }));
}
