/**
 * `GET /events`: the event stream as Server-Sent Events (`id:` the event's `seq`,
 * `event:` its type, `data:` its JSON). A client resumes with `Last-Event-ID` (or
 * `?after=SEQ`) from the feed's buffer; `?type=job.*,cron.fired` keeps only matching
 * types; `?follow=false` ends the stream after the buffered events (answered here); a
 * live stream is handed to the fan-out process (fanout.ts), which sends a comment every
 * `heartbeatMs` so that proxies do not close an idle stream.
 */
import type { HttpBindings } from "@hono/node-server";
import { RESPONSE_ALREADY_SENT } from "@hono/node-server/utils/response";
import { Hono } from "hono";
import type { EventFeed } from "../ports/index.js";
import { sendBuffered, streamHeaders } from "./broadcast.js";
import { EventFanout, type EventFanoutOptions } from "./fanout.js";

/** How often an idle stream gets a `: heartbeat` comment. */
const DEFAULT_HEARTBEAT_MS = 15_000;

/**
 * How long a window's first event waits for others to share its writes, with few clients
 * and with many: with a thousand clients, one write per event per client would cost the
 * machine's CPU (bench/events.js measures it).
 */
const GATHER_MS = 50;
const MAX_GATHER_MS = 1_000;

/** How long the fan-out process stays after its last client left. */
const FANOUT_IDLE_MS = 60_000;
/** Batches of events (25 ms each) the fan-out process may fall behind before they drop. */
const MAX_BATCHES_IN_FLIGHT = 200;

/** Options of {@link eventRoutes}: the fan-out's, each with a default. */
export type EventRoutesOptions = Partial<EventFanoutOptions>;

/**
 * The Hono sub-app serving `GET /events`, and the fan-out it hands live clients to (close
 * it with the server). It answers on the Node response or socket itself, so it runs
 * under @hono/node-server, not `app.request()`.
 */
export function eventRoutes(
  feed: EventFeed,
  options: EventRoutesOptions = {},
): { app: Hono<{ Bindings: HttpBindings }>; fanout: EventFanout } {
  const fanout = new EventFanout(feed, {
    gatherMs: GATHER_MS,
    maxGatherMs: MAX_GATHER_MS,
    heartbeatMs: DEFAULT_HEARTBEAT_MS,
    idleMs: FANOUT_IDLE_MS,
    maxBatchesInFlight: MAX_BATCHES_IN_FLIGHT,
    ...options,
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
    const request = {
      after,
      filter: c.req.query("type") ?? "",
      follow: c.req.query("follow") !== "false",
      gzip: acceptsGzip(c.req.header("accept-encoding")),
    };
    // Hono answers HEAD with the GET route, keeping only the response's headers.
    if (c.req.method === "HEAD") return c.body(null, 200, streamHeaders(request));
    if (request.follow) fanout.attach(c.env.incoming.socket, request);
    else sendBuffered(c.env.outgoing, feed, request);
    return RESPONSE_ALREADY_SENT;
  });
  return { app, fanout };
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
