/**
 * The fan-out process (see fanout.ts): forked by the server, it keeps a copy of the
 * server's event stream and writes it to the live `/events` clients whose sockets the
 * server hands it. It exits when its IPC channel closes: when the server stops, dies or
 * no longer needs it.
 */
import { STATUS_CODES } from "node:http";
import type { Socket } from "node:net";
import { setPriority } from "node:os";
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
 * the body until the connection closes (`Connection: close`, no chunked framing, as
 * HTTP/1.1 allows).
 */
function socketOut(socket: Socket): SseOut {
  // A client that hangs up mid-write: its `close` follows, which removes it.
  socket.on("error", () => socket.destroy());
  // Read (and ignore) what the client sends, so that its hanging up is seen at once.
  socket.resume();
  return {
    writeHead(status, headers) {
      const lines = Object.entries({ ...headers, connection: "close" }).map(
        ([name, value]) => `${name}: ${value}\r\n`,
      );
      socket.write(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n${lines.join("")}\r\n`);
    },
    write: (chunk) => socket.write(chunk),
    once: (event, listener) => socket.once(event, listener),
  };
}
