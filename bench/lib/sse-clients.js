/**
 * A crowd of Server-Sent-Events clients in a process of its own, so that reading the
 * streams does not share an event loop with the load or the fake model of a benchmark.
 *
 *   node bench/lib/sse-clients.js <host:port> <count> [gzip|identity] [path]
 *
 * With `gzip` (the default, as every browser asks) each client sends
 * `Accept-Encoding: gzip`, reads its socket as the bytes come and keeps them; it inflates
 * them when asked to count, after the load, so that the decoding a browser does on its
 * own machine does not take this machine's cores from the server being measured. With
 * `identity` it reads plain text and counts as it reads. Prints `connected` once every client has its response, then on each line
 * it reads on stdin (`count`) prints the fewest events any client has read so far; exits
 * when stdin ends. Events are counted by their `event:` lines, in the bytes (no parsing).
 */
import { request } from "node:http";
import { createInterface } from "node:readline";
import { constants, gunzipSync } from "node:zlib";

const [address = "", countText = "0", encoding = "gzip", path = "/events"] = process.argv.slice(2);
const host = address.slice(0, address.lastIndexOf(":"));
const port = Number(address.slice(address.lastIndexOf(":") + 1));
const clients = Array.from({ length: Number(countText) }, () => client());
const requests = [];

const EVENT_LINE = Buffer.from("\nevent: ");

/** The events in SSE bytes: their `event:` lines. */
function countEvents(bytes) {
  let found = 0;
  for (let at = bytes.indexOf(EVENT_LINE); at !== -1; at = bytes.indexOf(EVENT_LINE, at + 1))
    found += 1;
  return found;
}

/**
 * One client's stream: plain bytes are counted as they come (with the few bytes before a
 * chunk, so that a line split between two chunks counts); gzip bytes are kept, and
 * inflated (without a trailer, as a live stream has none) when counted.
 */
function client() {
  let tail = Buffer.alloc(0);
  let counted = 0;
  const gzipped = [];
  let inflatedChunks = 0;
  return {
    gzip: false,
    add(chunk) {
      if (this.gzip) {
        gzipped.push(chunk);
        return;
      }
      const seam = Buffer.concat([tail, chunk.subarray(0, EVENT_LINE.length - 1)]);
      counted += countEvents(seam) + countEvents(chunk);
      tail = Buffer.concat([tail, chunk]).subarray(-(EVENT_LINE.length - 1));
    },
    count() {
      if (!this.gzip || inflatedChunks === gzipped.length) return counted;
      inflatedChunks = gzipped.length;
      const all = Buffer.concat(gzipped);
      counted = countEvents(gunzipSync(all, { finishFlush: constants.Z_SYNC_FLUSH }));
      return counted;
    },
  };
}

await Promise.all(
  clients.map(
    (stream) =>
      new Promise((resolve, reject) => {
        const headers = encoding === "gzip" ? { "accept-encoding": "gzip" } : {};
        const opened = request({ host, port, path, headers, agent: false }, (response) => {
          stream.gzip = response.headers["content-encoding"] === "gzip";
          response.on("data", (chunk) => stream.add(chunk));
          response.on("error", () => undefined);
          resolve();
        });
        opened.on("error", reject);
        opened.end();
        requests.push(opened);
      }),
  ),
);
process.stdout.write("connected\n");
for await (const _line of createInterface({ input: process.stdin })) {
  const counts = clients.map((stream) => stream.count());
  process.stdout.write(`${counts.length ? Math.min(...counts) : 0}\n`);
}
for (const opened of requests) opened.destroy();
process.exit(0);
