/**
 * Event stream benchmark: does a crowd of `/events` clients slow the workers?
 *
 * Two fresh `picklebot server` child processes (SQLite queue, the fake Anthropic API
 * answering "ok" at once; the workspace on tmpfs, /dev/shm where there is one, since this
 * VM's disk flush times vary by tens of percent from run to run and would drown the
 * difference measured), each fed the same load: jobs enqueued into the workspace's
 * queue from this process at `--rate` per second for `--seconds`, each a one-call turn in
 * its own session (about 6 events per job). The first server has no event clients; the
 * second has `--clients` SSE connections to `/events`, all reading everything, from a
 * process of their own (bench/lib/sse-clients.js), so that reading the streams does not
 * slow this process's fake model or its enqueues. The clients ask for gzip as browsers do
 * (`--encoding identity`: plain text); they read their sockets as the bytes come and
 * inflate after the load, as browsers on other machines would decode on their own cores.
 * Every client must have read every event, and the server must have dropped none
 * (`picklebot_events_dropped_total`). Reported:
 * jobs/s (enqueue of the first job to the last one done) with and without clients, their
 * ratio, the server's CPU time per job (what the events cost the server itself, apart from
 * the clients' share of this machine's cores) with and without its `/events` fan-out
 * process's (which writes to the live clients), the clients' CPU time, events each client
 * received, the events the server dropped, the server's RSS before and after the load, and
 * the fan-out process's.
 *
 * This 2-core VM's speed drifts by a quarter from minute to minute, so each round runs
 * both servers one after the other, and the ratio reported first is the median of the
 * rounds' ratios; the ratio of the median jobs/s and the mean CPU per job follow.
 *
 * Usage: npm run build && node bench/events.js [--clients 1000] [--rate 500] [--seconds 10]
 *   [--rounds 3] [--encoding gzip|identity]  (rounds alternate without and with clients; medians are reported)
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { openDatabase } from "../dist/storage/sqlite/database.js";
import { SqliteJobQueue } from "../dist/storage/sqlite/queue.js";
import { cpuSeconds, loadFakes, rssMiB, sleep } from "./lib/server.js";
import { markdownTable } from "./lib/stats.js";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const { values } = parseArgs({
  options: {
    clients: { type: "string", default: "1000" },
    rate: { type: "string", default: "500" },
    seconds: { type: "string", default: "10" },
    rounds: { type: "string", default: "3" },
    encoding: { type: "string", default: "gzip" },
  },
});
const CLIENTS = Number(values.clients);
const RATE = Number(values.rate);
const SECONDS = Number(values.seconds);
const ROUNDS = Number(values.rounds);
const ENCODING = values.encoding;
/** The server's `http.token`: the clients and the `/metrics` reader send it. */
const HTTP_TOKEN = "bench-events-token-0123456789";

/** Starts `picklebot server`; resolves with the child and its `host:port` once started. */
function startServer(workspace) {
  const child = spawn(
    process.execPath,
    [join(ROOT, "bin/picklebot.js"), "server", "--workspace", workspace],
    {
      env: { ...process.env, TELEGRAM_BOT_TOKEN: "", DISCORD_BOT_TOKEN: "", ANTHROPIC_API_KEY: "" },
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  return new Promise((resolve, reject) => {
    let partial = "";
    child.stdout.setEncoding("utf8").on("data", (chunk) => {
      const lines = (partial + chunk).split("\n");
      partial = lines.pop() ?? "";
      for (const line of lines) {
        if (!line.includes('"msg":"picklebot server started"')) continue;
        const http = String(JSON.parse(line).http ?? "")
          .split(" ")[0]
          .replace("http://", "");
        resolve({ child, address: http });
      }
    });
    child.on("exit", (code) => reject(new Error(`server exited with ${code} before starting`)));
  });
}

/**
 * Opens `count` SSE clients on `/events` in a child process (bench/lib/sse-clients.js);
 * `minEvents()` asks it for the fewest events a client has read, `close()` ends it.
 */
async function connectClients(address, count) {
  const child = spawn(
    process.execPath,
    [join(ROOT, "bench/lib/sse-clients.js"), address, String(count), ENCODING],
    {
      stdio: ["pipe", "pipe", "inherit"],
      env: { ...process.env, PICKLEBOT_HTTP_TOKEN: HTTP_TOKEN },
    },
  );
  child.stdout.setEncoding("utf8");
  const lines = [];
  let waiting = null;
  child.stdout.on("data", (chunk) => {
    lines.push(...chunk.split("\n").filter(Boolean));
    waiting?.();
  });
  const nextLine = async () => {
    while (lines.length === 0) await new Promise((resolve) => (waiting = resolve));
    return lines.shift();
  };
  if ((await nextLine()) !== "connected") throw new Error("the SSE clients did not connect");
  return {
    pid: child.pid,
    async minEvents() {
      child.stdin.write("count\n");
      return Number(await nextLine());
    },
    /** The fewest events a client has read, once no client reads more for a second. */
    async settledMinEvents() {
      let last = await this.minEvents();
      for (let quiet = 0; quiet < 4; ) {
        await sleep(250);
        const now = await this.minEvents();
        quiet = now === last ? quiet + 1 : 0;
        last = now;
      }
      return last;
    },
    async close() {
      child.stdin.end();
      await new Promise((resolve) => child.once("exit", resolve));
    },
  };
}

/** The pid of the server's `/events` fan-out process (it starts with the first client). */
function fanoutPid(serverPid) {
  const found = spawnSync("pgrep", ["-P", String(serverPid), "-f", "fanout-process.js"], {
    encoding: "utf8",
  });
  return Number(found.stdout.trim().split("\n")[0]) || null;
}

/** The server's `picklebot_events_dropped_total`: events a client too slow to read lost. */
async function droppedEvents(address) {
  const metrics = await (
    await fetch(`http://${address}/metrics`, { headers: { authorization: `Bearer ${HTTP_TOKEN}` } })
  ).text();
  const line = metrics
    .split("\n")
    .find((text) => text.startsWith("picklebot_events_dropped_total"));
  return Number(line?.split(" ").at(-1) ?? 0);
}

/** Enqueues RATE jobs a second for SECONDS; resolves with the seconds until all are done. */
async function load(queue) {
  const total = RATE * SECONDS;
  const begin = performance.now();
  for (let index = 0; index < total; index += 1) {
    const due = begin + (index / RATE) * 1000;
    const wait = due - performance.now();
    if (wait > 1) await sleep(wait);
    await queue.enqueue({
      agentId: "pickle",
      sessionKey: `bench:${index}`,
      message: `hello ${index}`,
      mode: "job",
      replyTo: { kind: "silent" },
    });
  }
  for (;;) {
    const counts = await queue.counts();
    if (counts.done + counts.failed >= total) break;
    await sleep(50);
  }
  return (performance.now() - begin) / 1000;
}

async function run(fakeUrl, clientCount) {
  const dir = mkdtempSync(
    join(existsSync("/dev/shm") ? "/dev/shm" : tmpdir(), "picklebot-bench-events-"),
  );
  writeFileSync(
    join(dir, "picklebot.yaml"),
    [
      "llm:",
      "  api_key: bench-key",
      `  base_url: ${fakeUrl}`,
      "queue:",
      "  backend: sqlite",
      "workers:",
      "  agent_concurrency: 8",
      "http:",
      "  port: 0",
      `  token: ${HTTP_TOKEN}`,
      "",
    ].join("\n"),
  );
  const { child, address } = await startServer(dir);
  try {
    const db = openDatabase(join(dir, "history", "picklebot.db"));
    const queue = new SqliteJobQueue({ db });
    const clients = clientCount > 0 ? await connectClients(address, clientCount) : null;
    await sleep(500);
    const rssBefore = rssMiB(child.pid);
    const cpuBefore = cpuSeconds(child.pid);
    const clientCpuBefore = clients ? cpuSeconds(clients.pid) : 0;
    const fanout = clients ? fanoutPid(child.pid) : null;
    const fanoutCpuBefore = fanout ? cpuSeconds(fanout) : 0;
    const seconds = await load(queue);
    const serverCpu = cpuSeconds(child.pid) - cpuBefore;
    const clientLoadCpu = clients ? cpuSeconds(clients.pid) - clientCpuBefore : 0;
    const fanoutCpu = fanout ? cpuSeconds(fanout) - fanoutCpuBefore : 0;
    await sleep(500);
    const rssAfter = rssMiB(child.pid);
    const fanoutRss = fanout ? rssMiB(fanout) : 0;
    const eventsPerClient = clients ? await clients.settledMinEvents() : 0;
    const clientCpu = clients ? cpuSeconds(clients.pid) - clientCpuBefore : 0;
    const dropped = await droppedEvents(address);
    await clients?.close();
    await queue.close();
    db.close();
    return {
      jobsPerSecond: (RATE * SECONDS) / seconds,
      serverCpuMsPerJob: (serverCpu * 1000) / (RATE * SECONDS),
      clientCpuSeconds: clientCpu,
      clientLoadCpuSeconds: clientLoadCpu,
      fanoutCpuSeconds: fanoutCpu,
      fanoutRss,
      rssBefore,
      rssAfter,
      eventsPerClient,
      dropped,
    };
  } finally {
    child.kill("SIGTERM");
    await new Promise((resolve) => child.once("exit", resolve));
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The middle value. */
function median(values) {
  return [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
}

/** The run with the median throughput. */
function medianRun(runs) {
  const sorted = [...runs].sort((a, b) => a.jobsPerSecond - b.jobsPerSecond);
  return sorted[Math.floor(sorted.length / 2)];
}

const { anthropic } = await loadFakes(["anthropic"]);
const fake = await anthropic.startFakeAnthropic({ defaultReply: { text: "ok" } });
try {
  // Interleaved rounds, medians: the machine's noise hits both sides alike.
  const rounds = { without: [], with: [] };
  for (let round = 0; round < ROUNDS; round += 1) {
    rounds.without.push(await run(fake.url, 0));
    rounds.with.push(await run(fake.url, CLIENTS));
  }
  const without = medianRun(rounds.without);
  const withClients = medianRun(rounds.with);
  const fmt = (n) => n.toFixed(0);
  console.log(
    `\n${RATE} jobs/s offered for ${SECONDS} s (${RATE * SECONDS} jobs), ${ROUNDS} interleaved rounds (medians), clients ${ENCODING}, ${cpus().length} cores, ${new Date().toISOString().slice(0, 10)}\n`,
  );
  console.log(
    markdownTable(
      [
        "/events clients",
        "jobs/s",
        "server CPU per job",
        "clients' CPU: during the load, in all",
        "fan-out process: CPU, RSS",
        "server RSS before",
        "RSS after",
        "RSS growth",
        "events read per client (min)",
        "events dropped",
      ],
      [
        [0, without],
        [CLIENTS, withClients],
      ].map(([clients, result]) => [
        String(clients),
        fmt(result.jobsPerSecond),
        `${result.serverCpuMsPerJob.toFixed(2)} ms`,
        clients
          ? `${result.clientLoadCpuSeconds.toFixed(1)} s, ${result.clientCpuSeconds.toFixed(1)} s`
          : "-",
        clients ? `${result.fanoutCpuSeconds.toFixed(1)} s, ${fmt(result.fanoutRss)} MiB` : "-",
        `${fmt(result.rssBefore)} MiB`,
        `${fmt(result.rssAfter)} MiB`,
        `${fmt(result.rssAfter - result.rssBefore)} MiB`,
        clients ? String(result.eventsPerClient) : "-",
        clients ? String(result.dropped) : "-",
      ]),
    ),
  );
  const each = (runs) => runs.map((result) => fmt(result.jobsPerSecond)).join(", ");
  const ratios = rounds.with.map(
    (result, round) => result.jobsPerSecond / rounds.without[round].jobsPerSecond,
  );
  const mean = (runs, msPerJob) =>
    runs.reduce((sum, result) => sum + msPerJob(result), 0) / runs.length;
  const server = (result) => result.serverCpuMsPerJob;
  const serverAndFanout = (result) =>
    result.serverCpuMsPerJob + (result.fanoutCpuSeconds * 1000) / (RATE * SECONDS);
  const base = mean(rounds.without, server);
  const percent = (ms) => `${((ms / base - 1) * 100).toFixed(0)}%`;
  console.log(
    `\nserver CPU per job, mean of the rounds: without clients ${base.toFixed(2)} ms, with ${mean(rounds.with, server).toFixed(2)} ms (${percent(mean(rounds.with, server))}); with the fan-out process's added: ${mean(rounds.with, serverAndFanout).toFixed(2)} ms (${percent(mean(rounds.with, serverAndFanout))})`,
  );
  console.log(
    `jobs/s in each round: without clients ${each(rounds.without)}; with ${each(rounds.with)}`,
  );
  console.log(
    `throughput with clients / without, median of the rounds (each round runs both, one after the other, so a drift of the machine hits both alike): ${median(ratios).toFixed(3)}; each round: ${ratios.map((ratio) => ratio.toFixed(2)).join(", ")}; ratio of the median jobs/s: ${(withClients.jobsPerSecond / without.jobsPerSecond).toFixed(3)}`,
  );
} finally {
  await fake.close();
}
