/**
 * A crowd of Server-Sent-Events clients in a process of its own, so that reading the
 * streams does not share an event loop with the load or the fake model of a benchmark.
 *
 *   node bench/lib/sse-clients.js <host:port> <count> [path]
 *
 * Prints `connected` once every client has its response, then on each line it reads on
 * stdin (`count`) prints the fewest events any client has read so far; exits when stdin
 * ends. Events are counted by their `event:` lines, with indexOf (no regex, no parsing).
 */
import { request } from "node:http";
import { createInterface } from "node:readline";

const [address = "", countText = "0", path = "/events"] = process.argv.slice(2);
const host = address.slice(0, address.lastIndexOf(":"));
const port = Number(address.slice(address.lastIndexOf(":") + 1));
const counts = new Array(Number(countText)).fill(0);
const requests = [];

function countEvents(text) {
  let found = 0;
  for (let at = text.indexOf("event: "); at !== -1; at = text.indexOf("event: ", at + 7))
    found += 1;
  return found;
}

await Promise.all(
  counts.map(
    (_, index) =>
      new Promise((resolve, reject) => {
        const opened = request({ host, port, path, agent: false }, (response) => {
          response.setEncoding("utf8");
          response.on("data", (chunk) => {
            counts[index] += countEvents(chunk);
          });
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
  process.stdout.write(`${counts.length ? Math.min(...counts) : 0}\n`);
}
for (const opened of requests) opened.destroy();
process.exit(0);
