/**
 * `GET /events`: the event stream as Server-Sent Events (`id:` the event's `seq`,
 * `event:` its type, `data:` its JSON). A client resumes with `Last-Event-ID` (or
 * `?after=SEQ`) from the feed's buffer; `?type=job.*,cron.fired` keeps only matching
 * types; `?follow=false` ends the stream after the buffered events; a comment every
 * `heartbeatMs` keeps proxies from closing an idle stream.
 */
import { Hono } from "hono";
import { type SSEStreamingApi, streamSSE } from "hono/streaming";
import type { EventFeed, PicklebotEvent } from "../../ports/index.js";

/** How often an idle stream gets a `: heartbeat` comment. */
const DEFAULT_HEARTBEAT_MS = 15_000;

/** Options of {@link eventRoutes}. */
export interface EventRoutesOptions {
  /** Milliseconds between heartbeat comments. (Default: 15,000) */
  heartbeatMs?: number;
}

/** The Hono sub-app serving `GET /events`; mount with `app.route("/", eventRoutes(feed))`. */
export function eventRoutes(feed: EventFeed, options: EventRoutesOptions = {}): Hono {
  const heartbeatMs = options.heartbeatMs ?? DEFAULT_HEARTBEAT_MS;
  const app = new Hono();
  app.get("/events", (c) => {
    const after = resumePoint(c.req.header("last-event-id") ?? c.req.query("after"));
    if (after === null) {
      return c.text(
        "bad resume point: Last-Event-ID and ?after= take an event seq (0 or more)\n",
        400,
      );
    }
    const wanted = typeMatcher(c.req.query("type"));
    const follow = c.req.query("follow") !== "false";
    return streamSSE(c, (stream) => serve(stream, feed, { after, wanted, heartbeatMs, follow }));
  });
  return app;
}

/** What one SSE client asked for. */
interface StreamRequest {
  after: number;
  wanted: (type: string) => boolean;
  heartbeatMs: number;
  /** Go on with live events after the buffered ones. */
  follow: boolean;
}

/** Replays the buffer after `after`, then the live events, until the client goes away. */
async function serve(stream: SSEStreamingApi, feed: EventFeed, request: StreamRequest) {
  let last = request.after;
  const send = async (event: PicklebotEvent) => {
    if (event.seq <= last) return;
    last = event.seq;
    if (!request.wanted(event.type)) return;
    await stream.writeSSE({
      id: String(event.seq),
      event: event.type,
      data: JSON.stringify(event),
    });
  };
  let replayed!: () => void;
  const replay = new Promise<void>((resolve) => {
    replayed = resolve;
  });
  // Subscribe first so nothing published during the replay is missed; live events wait.
  const unsubscribe = feed.subscribe(async (event) => {
    await replay;
    await send(event);
  });
  const closed = new Promise<void>((resolve) => stream.onAbort(resolve));
  const heartbeat = setInterval(() => void stream.write(": heartbeat\n\n"), request.heartbeatMs);
  try {
    await stream.write(": connected\n\n");
    for (const event of feed.since(request.after)) await send(event);
    replayed();
    if (request.follow) await closed;
  } finally {
    clearInterval(heartbeat);
    unsubscribe();
  }
}

/** The `seq` to resume after: 0 when absent, null when not a whole number. */
function resumePoint(value: string | undefined): number | null {
  if (value === undefined || value === "") return 0;
  const seq = Number(value);
  return Number.isSafeInteger(seq) && seq >= 0 ? seq : null;
}

/**
 * A filter from `?type=`: comma-separated types, each exact (`job.done`) or a prefix
 * ending in `*` (`job.*`); everything when absent.
 */
export function typeMatcher(filter: string | undefined): (type: string) => boolean {
  const patterns = (filter ?? "")
    .split(",")
    .map((part) => part.trim())
    .filter(Boolean);
  if (patterns.length === 0) return () => true;
  return (type) =>
    patterns.some((pattern) =>
      pattern.endsWith("*") ? type.startsWith(pattern.slice(0, -1)) : type === pattern,
    );
}
