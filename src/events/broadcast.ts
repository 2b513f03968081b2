/**
 * Many SSE clients on one event feed (in the fan-out process, see fanout.ts, on its copy
 * of the server's stream), at a cost that does not grow per event per client:
 * one subscription to the feed for every client, each event framed once, and one write
 * per client per gather window (50 ms with a few clients, growing a millisecond per client
 * to a second with a thousand), the same bytes for every client of the same filter, and
 * the writes of a window spread over turns of the event loop, a hundred clients a turn.
 *
 * A client that accepts gzip (every browser, and `fetch`) gets the same stream compressed,
 * about a tenth of the bytes: each window is deflated once, with a compressor of its own
 * and a sync flush, so its bytes continue any client's gzip stream after the 10-byte gzip
 * header and are shared by every such client. (Such a stream has no gzip trailer: it
 * ends when the connection does, as a live stream does; decoders read it as it comes.)
 *
 * A client that does not read (its socket's buffer is full: `write` returned false) is
 * skipped until it drains; what it missed is counted as dropped, so a stalled consumer
 * holds neither memory nor the workers. It can tell from the gap in `id:` and resume with
 * `Last-Event-ID` while the feed still buffers those events.
 *
 * States of a client: replayed (the buffer after its resume point, written at once) →
 * live (gets each window's events after its last `seq`) ⇄ blocked (skipped until
 * `drain`) → gone (its response closed; removed). The feed subscription exists while at
 * least one client is connected.
 */
import type { ServerResponse } from "node:http";
import { constants, deflateRawSync, gzipSync } from "node:zlib";
import { getOrMake } from "../base/get-or-make.js";
import type { EventFeed, PicklebotEvent, Unsubscribe } from "../ports/index.js";

/** What one client asked for. */
export interface StreamRequest {
  /** Send the buffered events with a greater `seq`, then the live ones. */
  after: number;
  /**
   * The types wanted, as `?type=` gives them (see {@link typeMatcher}; "" for every
   * type): clients with the same filter and encoding share one chunk per window.
   */
  filter: string;
  /**
   * Go on with live events after the buffered ones (an {@link SseBroadcaster} client),
   * else end after them ({@link sendBuffered}).
   */
  follow: boolean;
  /** Send it gzip-compressed (the client's `Accept-Encoding` allows gzip). */
  gzip: boolean;
}

/** Options of {@link SseBroadcaster}. */
export interface SseBroadcasterOptions {
  /**
   * How long the first event of a window waits for others to share its writes: the
   * shortest window, with few clients. It grows with the crowd (a millisecond per
   * client), up to `maxGatherMs`, so a thousand clients cost a twentieth of the writes.
   */
  gatherMs: number;
  /** The longest window, with many clients. */
  maxGatherMs: number;
  /** Milliseconds between `: heartbeat` comments (they keep proxies from closing idle streams). */
  heartbeatMs: number;
  /** Told how many events a client that does not read has missed. (Default: nothing) */
  onDropped?: (count: number) => void;
  /** Told how many clients there are, whenever one comes or goes. (Default: nothing) */
  onClients?: (count: number) => void;
}

/**
 * Where a stream is written: a node `ServerResponse`, or a socket handed to the fan-out
 * process (see fanout-process.ts).
 */
export interface SseOut {
  writeHead(status: number, headers: Record<string, string>): unknown;
  /** False when the socket's buffer is full: wait for `drain`. */
  write(chunk: string | Buffer): boolean;
  once(event: "close" | "drain", listener: () => void): unknown;
}

/** Clients written to in one turn of the event loop (a few milliseconds). */
const CLIENTS_PER_TURN = 100;

/** One event, framed once for every client. */
interface Framed {
  seq: number;
  type: string;
  frame: string;
}

interface Client {
  out: SseOut;
  request: StreamRequest;
  /** `request.filter` as a test of a type. */
  wanted: (type: string) => boolean;
  /** The `seq` of the last event written to it (or skipped by its filter). */
  last: number;
  blocked: boolean;
}

/** The SSE clients of one feed (see the file header). */
export class SseBroadcaster {
  readonly #feed: EventFeed;
  readonly #options: SseBroadcasterOptions;
  readonly #clients = new Set<Client>();
  #window: Framed[] = [];
  #flushTimer: NodeJS.Timeout | null = null;
  #heartbeat: NodeJS.Timeout | null = null;
  #unsubscribe: Unsubscribe | null = null;

  constructor(feed: EventFeed, options: SseBroadcasterOptions) {
    this.#feed = feed;
    this.#options = options;
  }

  /** Answers one live `GET /events` on `out`: headers, the buffered events, then live ones. */
  attach(out: SseOut, request: StreamRequest): void {
    out.writeHead(200, streamHeaders(request));
    const wanted = typeMatcher(request.filter);
    const { text, lastSeq } = buffered(this.#feed, request, wanted);
    out.write(request.gzip ? Buffer.concat([GZIP_HEADER, deflated(text)]) : text);
    const client: Client = { out, request, wanted, last: lastSeq, blocked: false };
    this.#clients.add(client);
    this.#options.onClients?.(this.#clients.size);
    this.#unsubscribe ??= this.#feed.subscribe((event) => this.#collect(event));
    this.#heartbeat ??= setInterval(() => this.#beat(), this.#options.heartbeatMs).unref();
    out.once("close", () => this.#remove(client));
  }

  #remove(client: Client): void {
    this.#clients.delete(client);
    this.#options.onClients?.(this.#clients.size);
    if (this.#clients.size > 0) return;
    this.#unsubscribe?.();
    this.#unsubscribe = null;
    if (this.#heartbeat) clearInterval(this.#heartbeat);
    this.#heartbeat = null;
  }

  #collect(event: PicklebotEvent): void {
    this.#window.push({ seq: event.seq, type: event.type, frame: frameOf(event) });
    // While a window is written, the timer stays set: the next window waits for it.
    this.#flushTimer ??= setTimeout(() => void this.#flush(), this.#gatherMs());
  }

  /** This window's length: a millisecond per client, within the options' bounds. */
  #gatherMs(): number {
    const { gatherMs, maxGatherMs } = this.#options;
    return Math.min(maxGatherMs, Math.max(gatherMs, this.#clients.size));
  }

  /**
   * Writes the window to every client, {@link CLIENTS_PER_TURN} at a time with a turn of
   * the event loop between, so that a crowd's writes never hold up for long the next
   * events coming in.
   */
  async #flush(): Promise<void> {
    await this.#writeWindow();
    this.#flushTimer =
      this.#window.length > 0 ? setTimeout(() => void this.#flush(), this.#gatherMs()) : null;
  }

  async #writeWindow(): Promise<void> {
    const window = this.#window;
    this.#window = [];
    const first = window[0];
    const lastSeq = window.at(-1)?.seq;
    if (!first || lastSeq === undefined) return;
    // Clients that have seen none of the window (nearly all) share, per filter, the frames
    // they want, and per filter and encoding, the bytes: a crowd costs one filter and one
    // deflate per kind of client, whatever its size.
    const framesByFilter = new Map<string, Framed[]>();
    const bytesByKind = new Map<string, Buffer>();
    const clients = [...this.#clients];
    for (const [index, client] of clients.entries()) {
      if (index > 0 && index % CLIENTS_PER_TURN === 0) await new Promise(setImmediate);
      if (!this.#clients.has(client)) continue; // gone since the window began
      const { filter, gzip } = client.request;
      const wants = client.wanted;
      const fresh = client.last < first.seq;
      const wanted = fresh
        ? getOrMake(framesByFilter, filter, () => window.filter((framed) => wants(framed.type)))
        : window.filter((framed) => framed.seq > client.last && wants(framed.type));
      client.last = lastSeq;
      if (wanted.length === 0) continue;
      if (client.blocked) {
        this.#options.onDropped?.(wanted.length);
        continue;
      }
      const chunk = fresh
        ? getOrMake(bytesByKind, `${gzip} ${filter}`, () => encoded(wanted, gzip))
        : encoded(wanted, gzip);
      this.#write(client, chunk);
    }
  }

  #beat(): void {
    for (const client of this.#clients) {
      if (!client.blocked) this.#write(client, client.request.gzip ? GZIP_HEARTBEAT : HEARTBEAT);
    }
  }

  #write(client: Client, chunk: string | Buffer): void {
    if (client.out.write(chunk)) return;
    client.blocked = true;
    client.out.once("drain", () => {
      client.blocked = false;
    });
  }
}

/** Answers a `?follow=false` request: the buffered events, then the end (a whole gzip file). */
export function sendBuffered(out: ServerResponse, feed: EventFeed, request: StreamRequest): void {
  out.writeHead(200, streamHeaders(request));
  const { text } = buffered(feed, request, typeMatcher(request.filter));
  out.end(request.gzip ? gzipSync(text) : text);
}

/** The response headers of a stream. */
export function streamHeaders(request: StreamRequest): Record<string, string> {
  return {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    "x-accel-buffering": "no",
    vary: "accept-encoding",
    ...(request.gzip ? { "content-encoding": "gzip" } : {}),
  };
}

/**
 * What a client gets first: a comment, then the buffered events after its resume point
 * that it wants; `lastSeq` is where its live events start. A resume point past the
 * stream's latest event was given by an earlier run of the server (`seq` starts at 1
 * again after a restart): such a client gets the whole buffer.
 */
function buffered(
  feed: EventFeed,
  request: StreamRequest,
  wanted: (type: string) => boolean,
): { text: string; lastSeq: number } {
  const after = request.after > feed.lastSeq ? 0 : request.after;
  const replay = feed.since(after);
  let text = ": connected\n\n";
  for (const event of replay) if (wanted(event.type)) text += frameOf(event);
  return { text, lastSeq: Math.max(after, replay.at(-1)?.seq ?? 0) };
}

/**
 * The 10 bytes that start a gzip stream: magic, deflate, no flags, no time, no extra
 * flags, unknown OS (RFC 1952).
 */
const GZIP_HEADER = Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff]);

/**
 * `text` as raw deflate blocks from a compressor of its own, ending on a byte boundary
 * (sync flush) and not final: bytes that continue any deflate stream.
 */
function deflated(text: string): Buffer {
  return deflateRawSync(text, { finishFlush: constants.Z_SYNC_FLUSH });
}

/** The frames of a window, as the bytes a plain or a gzip client gets. */
function encoded(frames: readonly Framed[], gzip: boolean): Buffer {
  const text = frames.map((framed) => framed.frame).join("");
  return gzip ? deflated(text) : Buffer.from(text);
}

const HEARTBEAT = ": heartbeat\n\n";
const GZIP_HEARTBEAT = deflated(HEARTBEAT);

/** The SSE frame of an event: `id:` its seq, `event:` its type, `data:` its JSON. */
function frameOf(event: PicklebotEvent): string {
  return `id: ${event.seq}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
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
