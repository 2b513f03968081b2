/** The HistoryStore port: durable sessions and their messages. */
import type { ChatMessage, ModelCall, TokenUsage } from "./messages.js";

/** Sessions {@link HistoryStore.listSessions} returns when the caller names no limit. */
export const SESSION_LIST_LIMIT = 20;

/** A stored conversation. Times are epoch milliseconds. */
export interface Session {
  id: string;
  key: string;
  agentId: string;
  /** From the first user message; null until there is one. */
  title: string | null;
  createdAt: number;
  updatedAt: number;
  messageCount: number;
  /** Tokens summed over every model call of the session. */
  usage: TokenUsage;
  /**
   * The named model the conversation uses instead of its agent's (`/model` in a chat);
   * null for its agent's.
   */
  model: string | null;
}

/** What a new session starts with. */
export interface SessionInit {
  key: string;
  agentId: string;
  /** See {@link Session.model}. (Default: null) */
  model?: string | null;
}

/** Options of {@link HistoryStore.append}. */
export interface AppendOptions {
  /**
   * The job that wrote this message. A user message with a job id is appended at most
   * once: a second append with the same job id is ignored and returns false.
   */
  jobId?: string;
  /**
   * Tokens the model call that produced this message used; added to the session and
   * recorded in the usage ledger, in the same transaction as the message.
   */
  usage?: TokenUsage;
  /** The model call `usage` belongs to. (Default: model `unknown`, not batch, no job) */
  call?: ModelCall;
}

/** A message as stored: with when it was written and the job that wrote it. */
export interface StoredMessage extends ChatMessage {
  at: number;
  jobId: string | null;
}

/** Durable store of sessions and their messages. */
export interface HistoryStore {
  /** Creates a session for `key`, which becomes that key's current session. */
  createSession(init: SessionInit): Promise<Session>;
  /**
   * Sets the session's named model (null: its agent's again). Throws UserError when the
   * session does not exist.
   */
  setSessionModel(sessionId: string, model: string | null): Promise<void>;
  /** The session with this id, or null. */
  getSession(id: string): Promise<Session | null>;
  /** The newest session of a key, or null when the key has none. */
  currentSession(key: string): Promise<Session | null>;
  /** Sessions, newest first. (Default: every key, {@link SESSION_LIST_LIMIT}) */
  listSessions(options?: { key?: string; limit?: number }): Promise<Session[]>;
  /** Appends a message; false when `jobId` was already appended (nothing written). */
  append(sessionId: string, message: ChatMessage, options?: AppendOptions): Promise<boolean>;
  /**
   * The last messages of one session for the next model call: at most `maxMessages`,
   * cut only at the start of a turn, so every tool_use keeps its tool_result. A turn
   * longer than `maxMessages` is returned whole.
   */
  loadContext(sessionId: string, maxMessages: number): Promise<ChatMessage[]>;
  /**
   * Every message of one session, oldest first, compacted turns included: for reading a
   * transcript, never for a request. Empty for an unknown session.
   */
  messages(sessionId: string): Promise<StoredMessage[]>;
  /** Closes files and connections. */
  close(): Promise<void>;
}
