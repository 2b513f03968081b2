/**
 * `GET /events`: the event stream as Server-Sent Events (`id:` the event's `seq`,
 * `event:` its type, `data:` its JSON). A client resumes with `Last-Event-ID` (or
 * `?after=SEQ`) from the feed's buffer; `?type=job.*,cron.fired` keeps only matching
 * types; `?follow=false` ends the stream after the buffered events; a comment every
 * `heartbeatMs` keeps proxies from closing an idle stream.
 */
import type { HttpBindings } from "@hono/node-server";
import { RESPONSE_ALREADY_SENT } from "@hono/node-server/utils/response";
import { Hono } from "hono";
import type { EventFeed } from "../../ports/index.js";
import { SseBroadcaster } from "./broadcast.js";

/** How often an idle stream gets a `: heartbeat` comment. */
const DEFAULT_HEARTBEAT_MS = 15_000;

/** Options of {@link eventRoutes}. */
export interface EventRoutesOptions {
  /** Milliseconds between heartbeat comments. (Default: 15,000) */
  heartbeatMs?: number;
  /** Told how many events a client that does not read has missed. (Default: nothing) */
  onDropped?: (count: number) => void;
}

/**
 * How long a window's first event waits for others to share its writes, with few clients
 * and with many: with a thousand clients, one write per event per client would cost the
 * workers' CPU (bench/events.js measures it).
 */
const GATHER_MS = 50;
const MAX_GATHER_MS = 1_000;

/**
 * The Hono sub-app serving `GET /events`; mount with `app.route("/", eventRoutes(feed))`.
 * It writes to the Node response itself (see {@link SseBroadcaster}), so it runs under
 * @hono/node-server, not `app.request()`.
 */
export function eventRoutes(
  feed: EventFeed,
  options: EventRoutesOptions = {},
): Hono<{ Bindings: HttpBindings }> {
  const broadcaster = new SseBroadcaster(feed, {
    gatherMs: GATHER_MS,
    maxGatherMs: MAX_GATHER_MS,
    heartbeatMs: options.heartbeatMs ?? DEFAULT_HEARTBEAT_MS,
    ...(options.onDropped ? { onDropped: options.onDropped } : {}),
  });
  const app = new Hono<{ Bindings: HttpBindings }>();
  app.get("/events", (c) => {
    const after = resumePoint(c.req.header("last-event-id") ?? c.req.query("after"));
    if (after === null) {
      return c.text(
        "bad resume point: Last-Event-ID and ?after= take an event seq (0 or more)\n",
        400,
      );
    }
    const types = c.req.query("type");
    broadcaster.attach(c.env.outgoing, {
      after,
      filter: types ?? "",
      follow: c.req.query("follow") !== "false",
      gzip: acceptsGzip(c.req.header("accept-encoding")),
    });
    return RESPONSE_ALREADY_SENT;
  });
  return app;
}

/** The `seq` to resume after: 0 when absent, null when not a whole number. */
function resumePoint(value: string | undefined): number | null {
  if (value === undefined || value === "") return 0;
  const seq = Number(value);
  return Number.isSafeInteger(seq) && seq >= 0 ? seq : null;
}

/**
 * Whether an `Accept-Encoding` header allows gzip: `gzip` (or `*`) listed without `q=0`.
 */
export function acceptsGzip(header: string | undefined): boolean {
  return (header ?? "").split(",").some((part) => {
    const [name = "", ...parameters] = part.split(";").map((piece) => piece.trim());
    if (name.toLowerCase() !== "gzip" && name !== "*") return false;
    const q = parameters.find((parameter) => parameter.toLowerCase().startsWith("q="));
    return q === undefined || Number(q.slice(2)) > 0;
  });
}
