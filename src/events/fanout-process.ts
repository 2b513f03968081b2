/**
 * The fan-out process (see fanout.ts): forked by the server, it keeps a copy of the
 * server's event stream and writes it to the live `/events` clients whose sockets the
 * server hands it. It exits when its IPC channel closes: when the server stops, dies or
 * no longer needs it.
 */
import { STATUS_CODES } from "node:http";
import type { Socket } from "node:net";
import { setPriority } from "node:os";
import { getOrMake } from "../base/get-or-make.js";
import { SseBroadcaster, type SseOut } from "./broadcast.js";
import type { FromFanout, ToFanout } from "./fanout.js";
import { EventHub } from "./hub.js";

/**
 * The niceness this process takes: when the host's CPU is busy, the server's workers come
 * first and the stream's windows wait (they are gathered, not lost).
 */
const NICENESS = 10;

/** How long dropped events are summed before the server hears of them. */
const DROPPED_REPORT_MS = 250;

let droppedUnreported = 0;

/** Tells the server of dropped events, summed over {@link DROPPED_REPORT_MS}. */
function countDropped(count: number): void {
  if (droppedUnreported === 0) setTimeout(reportDropped, DROPPED_REPORT_MS);
  droppedUnreported += count;
}

function reportDropped(): void {
  tell({ kind: "dropped", count: droppedUnreported });
  droppedUnreported = 0;
}

/** Sends the server a message; one the server is gone for is lost (this process exits). */
function tell(message: FromFanout): void {
  if (process.connected) process.send?.(message, undefined, {}, () => {});
}

const copy = new EventHub({ instance: "fanout", onDropped: countDropped });
let broadcaster: SseBroadcaster | null = null;

process.on("message", (message: ToFanout, socket?: Socket) => {
  switch (message.kind) {
    case "start":
      broadcaster = new SseBroadcaster(copy, {
        ...message.options,
        onDropped: countDropped,
        onClients: (count) => tell({ kind: "clients", count }),
      });
      for (const event of message.events) copy.mirror(event);
      return;
    case "events":
      for (const event of message.events) copy.mirror(event);
      return;
    case "client":
      if (socket && broadcaster) broadcaster.attach(socketOut(socket), message.request);
      else socket?.destroy();
      return;
  }
});
process.on("disconnect", () => process.exit(0));
try {
  setPriority(NICENESS);
} catch {
  // Where the system refuses, the stream runs at the server's priority.
}

/**
 * A stream written straight onto a handed-over socket: the status line and headers, then
 * the body in chunks (`Transfer-Encoding: chunked`: the framing every HTTP client reads
 * best), `Connection: close`.
 */
function socketOut(socket: Socket): SseOut {
  // A client that hangs up mid-write: its `close` follows, which removes it.
  socket.on("error", () => socket.destroy());
  // Read (and ignore) what the client sends, so that its hanging up is seen at once.
  socket.resume();
  return {
    writeHead(status, headers) {
      const fields = { ...headers, "transfer-encoding": "chunked", connection: "close" };
      const lines = Object.entries(fields).map(([name, value]) => `${name}: ${value}\r\n`);
      socket.write(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n${lines.join("")}\r\n`);
    },
    // An empty chunk would end the body: there is nothing to send anyway.
    write: (chunk) => chunk.length === 0 || socket.write(chunked(chunk)),
    once: (event, listener) => socket.once(event, listener),
  };
}

/** Chunks already framed: a window's bytes are shared by many clients, and framed once. */
const framed = new WeakMap<Buffer, Buffer>();

/** `data` as one chunk of a chunked body (RFC 9112 7.1). */
function chunked(data: string | Buffer): Buffer {
  const frame = (bytes: Buffer) =>
    Buffer.concat([Buffer.from(`${bytes.length.toString(16)}\r\n`), bytes, CRLF]);
  return typeof data === "string"
    ? frame(Buffer.from(data))
    : getOrMake(framed, data, () => frame(data));
}

const CRLF = Buffer.from("\r\n");
