/**
 * The memory ports: what an agent keeps between conversations, and what it can recall of
 * the conversations it had. Both live in the workspace's database, so every process of a
 * cluster reads and writes the same memory (docs/decisions/memory-in-the-database.md).
 *
 * Glossary
 * - **Memory**: one plain text per agent and {@link MemoryScope}, made of entries; the
 *   agent changes it with its `memory` tool, the owner with `picklebot memory`.
 * - **Entry**: one short, self-contained fact. A memory's text holds its entries one after
 *   the other, separated by a line holding only {@link ENTRY_SEPARATOR}.
 * - **Agent notes**: the memory in scope `agent`: what the agent learned about its work,
 *   shared by every conversation of that agent.
 * - **Person**: someone the agent talks to, named by a **person key**: `telegram:<user
 *   id>`, `discord:<user id>`, `slack:<member id>`, or `owner` (the terminal and the
 *   dashboard); built and read
 *   in `src/base/person-key.ts`. Their memory is the memory in scope = their key.
 * - **Link**: `picklebot memory link` makes a person key an alias of another, so a person
 *   who talks from two platforms has one memory (and one set of searchable sessions).
 * - **Change**: one recorded write to a memory: which entry, by whom, from which job and
 *   tool call, when. A tool call's change is recorded once: a call run again after a crash
 *   finds its change and writes nothing.
 * - **Snapshot**: the memory text a session's system prompt carries, taken at the
 *   session's first turn and kept for its life (so the prompt cache keeps hitting), and
 *   taken again after a compaction.
 */

/** What a memory's text puts on the line between two entries. */
export const ENTRY_SEPARATOR = "§";

/** The scope of an agent's own notes; any other scope is a person key. */
export const AGENT_SCOPE = "agent";

/** Which memory of an agent: its notes ({@link AGENT_SCOPE}) or a person's, by person key. */
export type MemoryScope = string;

/** One memory as stored. Times are epoch milliseconds. */
export interface Memory {
  agentId: string;
  /** The scope it is stored under: for a person, the key their links lead to. */
  scope: MemoryScope;
  /** The entries, separated by lines of {@link ENTRY_SEPARATOR}; "" when empty. */
  text: string;
  /** Null for a memory never written. */
  updatedAt: number | null;
}

/** What a change did. `edit`, `clear` and `link` are the owner's (`picklebot memory`). */
export type MemoryAction = "add" | "replace" | "remove" | "edit" | "clear" | "link";

/** Who or what makes a change, and for which tool call (the key of its idempotency). */
export interface MemoryOrigin {
  /** `agent` (the memory tool), `cli`, `dashboard`, `chat` (`/forget`). */
  by: string;
  at: number;
  jobId?: string;
  sessionId?: string;
  /**
   * The tool call that makes it: with `sessionId`, a change is recorded at most once per
   * session and call.
   */
  callId?: string;
}

/** One recorded change. */
export interface MemoryChange {
  id: number;
  agentId: string;
  scope: MemoryScope;
  action: MemoryAction;
  /** The entry added or written in place of `previous`; for `edit`, the whole new text. */
  entry: string | null;
  /** The entry replaced or removed; for `edit` and `clear`, the whole old text. */
  previous: string | null;
  by: string;
  jobId: string | null;
  sessionId: string | null;
  callId: string | null;
  at: number;
}

/** What an editor decided: the memory's new text and what changed, or why not. */
export type MemoryEdit =
  | {
      text: string;
      change: { action: MemoryAction; entry: string | null; previous: string | null };
    }
  | { refused: string };

/**
 * Decides a change from the memory's current text, inside the store's transaction:
 * synchronous and free of side effects (it may be called again on a retry).
 */
export type MemoryEditor = (current: string) => MemoryEdit;

/** How {@link MemoryStore.update} came out. */
export type MemoryUpdateResult =
  /** Stored, with its change. */
  | { status: "applied"; text: string; change: MemoryChange }
  /** The editor refused: nothing stored. */
  | { status: "refused"; reason: string }
  /** The origin's tool call had made its change already: nothing stored again. */
  | { status: "repeated"; change: MemoryChange };

/** Which changes {@link MemoryStore.changes} returns. */
export interface MemoryChangeQuery {
  agentId?: string;
  /** A person's scope takes in their links. */
  scope?: MemoryScope;
  /** (Default: 50) */
  limit?: number;
}

/** One person key made an alias of another. */
export interface PersonLink {
  /** The key whose memory is now `linkedTo`'s. */
  person: string;
  linkedTo: string;
  at: number;
}

/** Memories, their changes and the links between person keys. */
export interface MemoryStore {
  /** The memory of `agentId` in `scope` (a person's through their links); empty when none. */
  read(agentId: string, scope: MemoryScope): Promise<Memory>;
  /**
   * Changes one memory in one transaction: reads its text, hands it to `edit`, and stores
   * what `edit` returns together with its change. When `origin` names a session and a
   * tool call whose change is recorded already, returns that change and calls nothing.
   */
  update(
    target: { agentId: string; scope: MemoryScope },
    origin: MemoryOrigin,
    edit: MemoryEditor,
  ): Promise<MemoryUpdateResult>;
  /** Every stored memory, of one agent or all, ordered by agent and scope. */
  list(agentId?: string): Promise<Memory[]>;
  /** Recorded changes, newest first. */
  changes(query?: MemoryChangeQuery): Promise<MemoryChange[]>;
  /**
   * Makes `person` an alias of `to` (of the key `to` is linked to, if any), in one
   * transaction: every memory of `person` is merged into `to`'s (entries not there yet
   * added at the end, each recorded as a `link` change whose `previous` names `person`)
   * and removed, and the keys linked to `person` are linked to `to`. Returns the link;
   * throws UserError when `to` is `person` or leads back to it.
   */
  link(person: string, to: string, origin: MemoryOrigin): Promise<PersonLink>;
  /** Removes `person`'s link; false when it had none. Memories stay where they are. */
  unlink(person: string): Promise<boolean>;
  /** Every link, ordered by person key. */
  links(): Promise<PersonLink[]>;
}

// ---------------------------------------------------------------------------------------
// RecallStore

/** What a session's memory is: who it is with, and the snapshot its prompt carries. */
export interface SessionMemory {
  sessionId: string;
  sessionKey: string;
  agentId: string;
  /**
   * The person the conversation is with, alone: a private chat, the terminal, the
   * dashboard, a cron delivering to a private chat. Null for a group chat, a subagent,
   * a cron delivering nowhere or to a group.
   */
  person: string | null;
  /** The memory text its system prompt carries; null until taken (or after a compaction). */
  snapshot: string | null;
  takenAt: number | null;
}

/** Whose conversations a search reads: a person's (their linked keys) or one session key's. */
export type RecallScope =
  | { agentId: string; persons: readonly string[] }
  | { agentId: string; sessionKey: string };

/** Messages {@link RecallStore.search} returns at most. */
export const SEARCH_LIMIT_MAX = 20;

/** A full-text search over stored conversations. */
export interface SearchQuery {
  scope: RecallScope;
  /** Words to look for; a message matching more of them ranks higher. */
  text: string;
  /** (Default: 5, at most {@link SEARCH_LIMIT_MAX}) */
  limit?: number;
}

/** One message a search found. */
export interface SearchHit {
  sessionId: string;
  sessionKey: string;
  /** Its place in the session, from 1 (`Session.messageCount` counts the same way). */
  seq: number;
  role: "user" | "assistant";
  /** When it was written, epoch milliseconds. */
  at: number;
  /** Its text around the matching words, which are marked `[like this]`. */
  snippet: string;
}

/** The memory side of sessions: who each is with, its snapshot, and the search over them. */
export interface RecallStore {
  /** The session's memory record, or null before its first turn. */
  session(sessionId: string): Promise<SessionMemory | null>;
  /**
   * Stores the session's record unless it has one; a stored record without a snapshot
   * takes `record.snapshot`, without a person `record.person`. Returns the record as it
   * stands after, so every process of a cluster uses the snapshot stored first.
   */
  snapshot(record: SessionMemory): Promise<SessionMemory>;
  /** Drops the session's snapshot (after a compaction): its next turn takes a new one. */
  retake(sessionId: string): Promise<void>;
  /** The person of the newest session of `sessionKey` that has one (a chat's person), or null. */
  personOf(sessionKey: string): Promise<string | null>;
  /**
   * Messages of the conversations in `query.scope` that hold the words, best first.
   * Throws UserError where the history is not searchable (`history.backend: jsonl`).
   */
  search(query: SearchQuery): Promise<SearchHit[]>;
}
