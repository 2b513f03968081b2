/**
 * A crowd of Server-Sent-Events clients in a process of their own, so that reading the
 * streams does not share an event loop with the load or the fake model of a benchmark.
 *
 *   node bench/lib/sse-clients.js <host:port> <count> [gzip|identity] [path]
 *
 * Each client is a bare TCP socket that sends the request by hand and keeps the bytes it
 * reads (no HTTP parser: the clients stand for browsers on other machines, so the less of
 * this machine's CPU they take, the closer the measure is to the server's own cost). With
 * `gzip` (the default, as every browser asks) it sends `Accept-Encoding: gzip`, and the
 * access token from PICKLEBOT_HTTP_TOKEN when it is set; the bytes
 * are parsed and inflated only when counted, after the load. Prints `connected` once every
 * client has its response headers, then on each line it reads on stdin (`count`) prints
 * the fewest events any client has read so far; exits when stdin ends. Events are counted
 * by their `event:` lines. The body is chunked, as the server's live streams are, or
 * delimited by the connection's end. (A chunk holds whole SSE messages, so plain bytes are
 * counted with the chunks' size lines among them; gzip bytes are taken out of their chunks
 * before they are inflated.)
 */
import { connect } from "node:net";
import { createInterface } from "node:readline";
import { constants, gunzipSync } from "node:zlib";

const [address = "", countText = "0", encoding = "gzip", path = "/events"] = process.argv.slice(2);
const host = address.slice(0, address.lastIndexOf(":"));
const port = Number(address.slice(address.lastIndexOf(":") + 1));
const HEAD_END = Buffer.from("\r\n\r\n");
const TOKEN = process.env.PICKLEBOT_HTTP_TOKEN;
const AUTHORIZATION = TOKEN ? `authorization: Bearer ${TOKEN}\r\n` : "";

const EVENT_LINE = Buffer.from("\nevent: ");

/** The events in SSE bytes: their `event:` lines. */
function countEvents(bytes) {
  let found = 0;
  for (let at = bytes.indexOf(EVENT_LINE); at !== -1; at = bytes.indexOf(EVENT_LINE, at + 1))
    found += 1;
  return found;
}

/** The data of a chunked body (RFC 9112 7.1), up to its last complete chunk. */
function unchunked(bytes) {
  const parts = [];
  for (let at = 0; ; ) {
    const lineEnd = bytes.indexOf("\r\n", at);
    if (lineEnd === -1) break;
    const size = Number.parseInt(bytes.subarray(at, lineEnd).toString("latin1"), 16);
    const end = lineEnd + 2 + size;
    if (!(size > 0) || end > bytes.length) break;
    parts.push(bytes.subarray(lineEnd + 2, end));
    at = end + 2;
  }
  return Buffer.concat(parts);
}

/**
 * One client's stream. Its first bytes are the response's head (the server writes it at
 * once); after them, gzip bytes are kept and inflated (without a trailer, as a live stream
 * has none) when counted, and plain bytes are counted as they come (with the few bytes
 * before a chunk, so that a line split between two chunks counts).
 */
function client() {
  const gzipped = [];
  let gzip = false;
  let chunked = false;
  let tail = Buffer.alloc(0);
  let counted = 0;
  let inflatedChunks = 0;
  const read = (bytes) => {
    if (gzip) {
      gzipped.push(bytes);
      return;
    }
    const seam = Buffer.concat([tail, bytes.subarray(0, EVENT_LINE.length - 1)]);
    counted += countEvents(seam) + countEvents(bytes);
    tail = Buffer.concat([tail, bytes]).subarray(-(EVENT_LINE.length - 1));
  };
  return {
    /** Resolves with the socket once the response's head has come. */
    open() {
      return new Promise((resolve, reject) => {
        const socket = connect(port, host);
        const accept = encoding === "gzip" ? "accept-encoding: gzip\r\n" : "";
        socket.write(`GET ${path} HTTP/1.1\r\nhost: ${address}\r\n${accept}${AUTHORIZATION}\r\n`);
        socket.on("error", reject);
        socket.once("data", (first) => {
          const headEnd = first.indexOf(HEAD_END);
          const head = first.subarray(0, headEnd).toString("latin1").toLowerCase();
          gzip = head.includes("content-encoding: gzip");
          chunked = head.includes("transfer-encoding: chunked");
          if (headEnd === -1) {
            reject(new Error(`not a stream these clients read: ${head.slice(0, 300)}`));
          }
          read(first.subarray(headEnd + HEAD_END.length));
          socket.on("data", read);
          resolve(socket);
        });
      });
    },
    count() {
      if (!gzip || inflatedChunks === gzipped.length) return counted;
      inflatedChunks = gzipped.length;
      const body = chunked ? unchunked(Buffer.concat(gzipped)) : Buffer.concat(gzipped);
      counted = countEvents(gunzipSync(body, { finishFlush: constants.Z_SYNC_FLUSH }));
      return counted;
    },
  };
}

const clients = Array.from({ length: Number(countText) }, () => client());
const sockets = await Promise.all(clients.map((stream) => stream.open()));
process.stdout.write("connected\n");
for await (const _line of createInterface({ input: process.stdin })) {
  const counts = clients.map((stream) => stream.count());
  process.stdout.write(`${counts.length ? Math.min(...counts) : 0}\n`);
}
for (const socket of sockets) socket.destroy();
process.exit(0);
