/**
 * The session index of the jsonl history store: `<dir>/index.jsonl`, an append-only log
 * of events folded into sessions in memory. It is read once, then only the bytes other
 * writers (or this one) appended since; it is never rewritten.
 *
 * Events, one JSON line each:
 * - `{"event":"session_created","session_id","key","agent_id","at"}`
 * - `{"event":"message_appended","session_id","at","title"?,"usage"?}`: a message was
 *   written to the session's file; `title` when it gave the session its title, `usage`
 *   as `{"input","output","cache_read","cache_write"}` tokens.
 */

import { z } from "zod";
import { addUsage, oneHourWrites, serviceCost, webSearches, zeroUsage } from "../../base/usage.js";
import type { Session, TokenUsage } from "../../ports/index.js";
import { isSafeSessionId } from "../session.js";
import { appendLine, readLinesFrom } from "./lines.js";

/** Token usage as the index (and a message line's `call`) stores it. */
export const diskUsageSchema = z.object({
  input: z.number(),
  output: z.number(),
  cache_read: z.number(),
  cache_write: z.number(),
  cache_write_1h: z.number().optional(),
  web_searches: z.number().optional(),
  service_usd: z.number().optional(),
});

const indexEventSchema = z.discriminatedUnion("event", [
  z.object({
    event: z.literal("session_created"),
    session_id: z.string().refine(isSafeSessionId),
    key: z.string(),
    agent_id: z.string(),
    model: z.string().optional(),
    at: z.number(),
  }),
  z.object({
    event: z.literal("model_chosen"),
    session_id: z.string(),
    model: z.string().nullable(),
    at: z.number(),
  }),
  z.object({
    event: z.literal("message_appended"),
    session_id: z.string(),
    at: z.number(),
    title: z.string().optional(),
    usage: diskUsageSchema.optional(),
  }),
]);

/** One line of the index. */
export type IndexEvent = z.infer<typeof indexEventSchema>;

/** Token usage as the index stores it. */
export type DiskUsage = z.infer<typeof diskUsageSchema>;

/** `usage` in the index's snake_case form. */
export function toDiskUsage(usage: TokenUsage): DiskUsage {
  return {
    input: usage.input,
    output: usage.output,
    cache_read: usage.cacheRead,
    cache_write: usage.cacheWrite,
    ...(usage.cacheWrite1h ? { cache_write_1h: usage.cacheWrite1h } : {}),
    ...(usage.webSearches ? { web_searches: usage.webSearches } : {}),
    ...(usage.serviceUsd ? { service_usd: usage.serviceUsd } : {}),
  };
}

interface IndexedSession {
  session: Session;
  /** Position in the index: breaks ties between sessions created in the same millisecond. */
  order: number;
}

/** Sessions folded from `index.jsonl`; returns copies, never its own objects. */
export class SessionIndex {
  readonly #path: string;
  readonly #sessions = new Map<string, IndexedSession>();
  #offset = 0;

  constructor(path: string) {
    this.#path = path;
  }

  /** Folds the events appended since the last read, by this process or another. */
  refresh(): void {
    const { records, nextOffset } = readLinesFrom(this.#path, this.#offset);
    this.#offset = nextOffset;
    for (const record of records) {
      const parsed = indexEventSchema.safeParse(record);
      if (parsed.success) this.#fold(parsed.data);
    }
  }

  /** Appends an event to the file, then folds it with anything else new. */
  record(event: IndexEvent): void {
    appendLine(this.#path, event);
    this.refresh();
  }

  /** The session with this id, or undefined. */
  get(id: string): Session | undefined {
    const indexed = this.#sessions.get(id);
    return indexed && copySession(indexed.session);
  }

  /** Sessions newest first, optionally of one key only, at most `limit`. */
  list(key: string | undefined, limit: number): Session[] {
    const matching = [...this.#sessions.values()].filter(
      (indexed) => key === undefined || indexed.session.key === key,
    );
    matching.sort((a, b) => b.session.createdAt - a.session.createdAt || b.order - a.order);
    return matching.slice(0, limit).map((indexed) => copySession(indexed.session));
  }

  #fold(event: IndexEvent): void {
    if (event.event === "session_created") {
      if (this.#sessions.has(event.session_id)) return;
      const session: Session = {
        id: event.session_id,
        key: event.key,
        agentId: event.agent_id,
        title: null,
        createdAt: event.at,
        updatedAt: event.at,
        messageCount: 0,
        usage: zeroUsage(),
        model: event.model ?? null,
      };
      this.#sessions.set(session.id, { session, order: this.#sessions.size });
      return;
    }
    const session = this.#sessions.get(event.session_id)?.session;
    if (session === undefined) return;
    if (event.event === "model_chosen") {
      session.model = event.model;
      return;
    }
    session.updatedAt = event.at;
    session.messageCount += 1;
    session.title ??= event.title ?? null;
    if (event.usage) session.usage = addUsage(session.usage, fromDiskUsage(event.usage));
  }
}

/** `usage` from the index's snake_case form. */
export function fromDiskUsage(usage: DiskUsage): TokenUsage {
  return {
    input: usage.input,
    output: usage.output,
    cacheRead: usage.cache_read,
    cacheWrite: usage.cache_write,
    ...oneHourWrites(usage.cache_write_1h),
    ...webSearches(usage.web_searches),
    ...serviceCost(usage.service_usd),
  };
}

function copySession(session: Session): Session {
  return { ...session, usage: { ...session.usage } };
}
