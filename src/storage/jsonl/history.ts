/**
 * HistoryStore on plain files, for users who want their history greppable:
 *
 * ```
 * <dir>/index.jsonl            session events, append-only (see jsonl-index.ts)
 * <dir>/sessions/<id>.jsonl    one line per message: {"role","content","job_id","created_at","call"?}
 * ```
 *
 * `call` is the usage ledger's record of the model call that produced the message
 * (tokens, model, batch, job): written in the message's own line, it is stored exactly
 * when the message is.
 *
 * Every write is one `appendFileSync` of whole lines, so a crash leaves at most a torn
 * last line, which readers skip. The message is written before its index event: a crash
 * between the two leaves the message stored and the session's `messageCount`/`usage`
 * short by it. History and queue cannot share a transaction here, so a user message
 * carries its job id and is not appended again when that id is already in the session.
 */

import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { systemClock } from "../../base/clock.js";
import { PicklebotError } from "../../base/errors.js";
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
import { cutContext } from "../context.js";
import { listLimit } from "../list-limit.js";
import {
  assertSafeSessionId,
  newSessionId,
  titleFromMessage,
  unknownSessionError,
} from "../session.js";
import { UNKNOWN_MODEL } from "../usage-row.js";
import { appendLine, readAllLines } from "./lines.js";
import { diskUsageSchema, fromDiskUsage, SessionIndex, toDiskUsage } from "./session-index.js";

/** Options of {@link JsonlHistoryStore}. */
export interface JsonlHistoryStoreOptions {
  /** Folder of `index.jsonl` and `sessions/`; created on the first write. */
  dir: string;
  /** Source of `createdAt`/`updatedAt`. (Default: the system clock) */
  clock?: Clock;
  /** New session ids. (Default: time-sortable random ids, `s_…`) */
  newId?: () => string;
}

/** A stored content block is kept as written; only its shape is checked. */
const contentBlockSchema = z.custom<ContentBlock>(
  (value) =>
    typeof value === "object" && value !== null && typeof Reflect.get(value, "type") === "string",
);

const callLineSchema = diskUsageSchema.extend({
  model: z.string(),
  batch: z.boolean(),
  job_id: z.string().nullable(),
});

const messageLineSchema = z.object({
  role: z.enum(["user", "assistant"]),
  content: z.array(contentBlockSchema),
  job_id: z.string().nullable(),
  created_at: z.number(),
  call: callLineSchema.optional(),
});

/** One line of a session file. */
type MessageLine = z.infer<typeof messageLineSchema>;

/** Sessions in an append-only index, messages in one JSON Lines file per session. */
export class JsonlHistoryStore implements HistoryStore, UsageLedger {
  readonly #dir: string;
  readonly #clock: Clock;
  readonly #newId: () => string;
  /** Loaded on first use, then refreshed with the bytes appended since. */
  #index: SessionIndex | null = null;
  /** Job ids already in each session file this process has appended to. */
  readonly #jobIdsBySession = new Map<string, Set<string>>();
  #foldersCreated = false;
  #closed = false;

  constructor(options: JsonlHistoryStoreOptions) {
    this.#dir = options.dir;
    this.#clock = options.clock ?? systemClock;
    this.#newId = options.newId ?? (() => newSessionId(this.#clock.now()));
  }

  async createSession(init: SessionInit): Promise<Session> {
    const index = this.#currentIndex();
    const id = this.#newId();
    assertSafeSessionId(id);
    if (index.get(id)) {
      // A fresh id on the next attempt does not collide.
      throw new PicklebotError(`Session id "${id}" is already in ${this.#indexPath()}`, {
        retryable: true,
      });
    }
    this.#createFolders();
    index.record({
      event: "session_created",
      session_id: id,
      key: init.key,
      agent_id: init.agentId,
      ...(init.model ? { model: init.model } : {}),
      at: this.#clock.now(),
    });
    return index.get(id) as Session;
  }

  async setSessionModel(sessionId: string, model: string | null): Promise<void> {
    const index = this.#currentIndex();
    if (!index.get(sessionId)) throw unknownSessionError(sessionId);
    index.record({ event: "model_chosen", session_id: sessionId, model, at: this.#clock.now() });
  }

  async getSession(id: string): Promise<Session | null> {
    return this.#currentIndex().get(id) ?? null;
  }

  async currentSession(key: string): Promise<Session | null> {
    return this.#currentIndex().list(key, 1)[0] ?? null;
  }

  async listSessions(options: { key?: string; limit?: number } = {}): Promise<Session[]> {
    const limit = listLimit(options.limit, SESSION_LIST_LIMIT);
    return this.#currentIndex().list(options.key, limit);
  }

  async append(
    sessionId: string,
    message: ChatMessage,
    options: AppendOptions = {},
  ): Promise<boolean> {
    const index = this.#currentIndex();
    const session = index.get(sessionId);
    if (session === undefined) throw unknownSessionError(sessionId);
    const jobIds = this.#jobIdsOf(sessionId);
    if (options.jobId !== undefined && jobIds.has(options.jobId)) return false;
    const now = this.#clock.now();
    const line: MessageLine = {
      role: message.role,
      content: message.content,
      job_id: options.jobId ?? null,
      created_at: now,
      ...(options.usage === undefined
        ? {}
        : {
            call: {
              ...toDiskUsage(options.usage),
              model: options.call?.model ?? UNKNOWN_MODEL,
              batch: options.call?.batch ?? false,
              job_id: options.call?.jobId ?? null,
            },
          }),
    };
    this.#createFolders();
    appendLine(this.#sessionPath(sessionId), line);
    if (options.jobId !== undefined) jobIds.add(options.jobId);
    const title = session.title === null ? titleFromMessage(message) : null;
    index.record({
      event: "message_appended",
      session_id: sessionId,
      at: now,
      ...(title === null ? {} : { title }),
      ...(options.usage === undefined ? {} : { usage: toDiskUsage(options.usage) }),
    });
    return true;
  }

  async loadContext(sessionId: string, maxMessages: number): Promise<ChatMessage[]> {
    if (this.#currentIndex().get(sessionId) === undefined) return cutContext([], maxMessages);
    const messages = this.#readMessageLines(sessionId).map(
      (line): ChatMessage => ({ role: line.role, content: line.content }),
    );
    return cutContext(messages, maxMessages);
  }

  async messages(sessionId: string): Promise<StoredMessage[]> {
    if (this.#currentIndex().get(sessionId) === undefined) return [];
    return this.#readMessageLines(sessionId).map((line) => ({
      role: line.role,
      content: line.content,
      at: line.created_at,
      jobId: line.job_id,
    }));
  }

  /** Reads the files of the sessions updated since `query.since`. */
  async calls(query: UsageQuery): Promise<UsageRecord[]> {
    const inRange = (at: number) =>
      at >= query.since && (query.until === undefined || at < query.until);
    const index = this.#currentIndex();
    const chosen =
      query.sessionId === undefined
        ? index.list(undefined, Number.POSITIVE_INFINITY)
        : [index.get(query.sessionId)].filter((session) => session !== undefined);
    const sessions = chosen.filter((session) => session.updatedAt >= query.since);
    const records: UsageRecord[] = [];
    for (const session of sessions) {
      for (const line of this.#readMessageLines(session.id)) {
        if (!line.call || !inRange(line.created_at)) continue;
        const { model, batch, job_id: jobId, ...tokens } = line.call;
        const base = { at: line.created_at, agentId: session.agentId, sessionKey: session.key };
        records.push({
          ...base,
          sessionId: session.id,
          jobId,
          model,
          batch,
          ...fromDiskUsage(tokens),
        });
      }
    }
    return records.sort((a, b) => a.at - b.at);
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#index = null;
    this.#jobIdsBySession.clear();
  }

  #currentIndex(): SessionIndex {
    if (this.#closed) throw new PicklebotError("The history store is closed.", { retryable: true });
    this.#index ??= new SessionIndex(this.#indexPath());
    this.#index.refresh();
    return this.#index;
  }

  #jobIdsOf(sessionId: string): Set<string> {
    let jobIds = this.#jobIdsBySession.get(sessionId);
    if (jobIds === undefined) {
      jobIds = new Set();
      for (const line of this.#readMessageLines(sessionId)) {
        if (line.job_id !== null) jobIds.add(line.job_id);
      }
      this.#jobIdsBySession.set(sessionId, jobIds);
    }
    return jobIds;
  }

  /** The valid lines of one session's file (only that file is read). */
  #readMessageLines(sessionId: string): MessageLine[] {
    const lines: MessageLine[] = [];
    for (const record of readAllLines(this.#sessionPath(sessionId))) {
      const parsed = messageLineSchema.safeParse(record);
      if (parsed.success) lines.push(parsed.data);
    }
    return lines;
  }

  #createFolders(): void {
    if (this.#foldersCreated) return;
    mkdirSync(join(this.#dir, "sessions"), { recursive: true });
    this.#foldersCreated = true;
  }

  #indexPath(): string {
    return join(this.#dir, "index.jsonl");
  }

  /** Only called with ids found in the index, which accepts file-safe ids only. */
  #sessionPath(sessionId: string): string {
    return join(this.#dir, "sessions", `${sessionId}.jsonl`);
  }
}
