/**
 * Job queue benchmark: the sqlite and memory adapters against bare p-queue (the in-memory
 * floor) and BullMQ on the local Redis, all with a no-op handler.
 *
 *   enqueue/s     N jobs enqueued one at a time, each awaited (sqlite: each one committed);
 *                 throughputs are the best of three rounds
 *   processed/s   N queued jobs, each in its own session, claimed in batches and completed
 *                 (each completion committed), `concurrency` at once
 *   idle p50/p99  enqueue → handler start, one job at a time with an idle worker
 *   load p50/p99  the same while jobs arrive at half the rate this process can sustain
 *                 enqueueing and processing together: 1 / (1/enqueue + 1/processed)
 *
 * Usage: npm run build && node bench/queue.js [--n 20000] [--concurrency 8]
 *        [--only sqlite,memory,p-queue,bullmq] [--sqlite-pragma "temp_store = MEMORY" ...]
 */
import { connect } from "node:net";
import { cpus } from "node:os";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { Queue as BullQueue, Worker as BullWorker } from "bullmq";
import PQueue from "p-queue";
import { MemoryJobQueue } from "../dist/storage/memory/queue.js";
import { countdown, jobQueueSystem, measure, sqliteQueueSystem, waiters } from "./lib/measure.js";
import { formatMs, formatRate, markdownTable, percentile } from "./lib/stats.js";

const REDIS = { host: "127.0.0.1", port: 6379 };
const noop = () => {};

function memorySystem() {
  return jobQueueSystem(() => {
    const queue = new MemoryJobQueue();
    return { queue, close: () => queue.close() };
  });
}

/** Bare p-queue: no storage, no sessions; the floor of any in-process queue. */
function pQueueSystem() {
  return {
    async enqueueRate(n) {
      const queue = new PQueue({ concurrency: 8, autoStart: false });
      const begin = performance.now();
      for (let index = 0; index < n; index += 1) {
        void queue.add(noop);
        // add() settles when the task has run, so await once per job like the others do.
        await undefined;
      }
      const seconds = (performance.now() - begin) / 1000;
      queue.clear();
      return n / seconds;
    },
    async processRate(n, concurrency) {
      const queue = new PQueue({ concurrency, autoStart: false });
      for (let index = 0; index < n; index += 1) void queue.add(noop);
      const begin = performance.now();
      queue.start();
      await queue.onIdle();
      return n / ((performance.now() - begin) / 1000);
    },
    async latencies(concurrency, scenario) {
      const queue = new PQueue({ concurrency });
      const started = waiters();
      const done = waiters();
      const enqueue = async (key) => {
        void queue.add(() => started.settle(key, performance.now())).then(() => done.settle(key));
      };
      const latencies = await scenario(enqueue, started, done);
      await queue.onIdle();
      return latencies;
    },
  };
}

/** BullMQ on the local Redis (no per-session order: that needs BullMQ Pro groups). */
function bullSystem() {
  const name = `picklebot-bench-${process.pid}`;
  const connection = { ...REDIS, maxRetriesPerRequest: null };
  const jobOptions = { removeOnComplete: true };
  async function withQueue(use) {
    const queue = new BullQueue(name, { connection });
    try {
      return await use(queue);
    } finally {
      await queue.obliterate({ force: true });
      await queue.close();
    }
  }
  function worker(concurrency, processor) {
    return new BullWorker(name, processor, { connection, concurrency, autorun: false });
  }
  return {
    enqueueRate: (n) =>
      withQueue(async (queue) => {
        const begin = performance.now();
        for (let index = 0; index < n; index += 1) {
          await queue.add("noop", { key: `e${index}` }, jobOptions);
        }
        return n / ((performance.now() - begin) / 1000);
      }),
    processRate: (n, concurrency) =>
      withQueue(async (queue) => {
        for (let from = 0; from < n; from += 1000) {
          const size = Math.min(1000, n - from);
          const jobs = Array.from({ length: size }, (_, offset) => ({
            name: "noop",
            data: { key: `p${from + offset}` },
            opts: jobOptions,
          }));
          await queue.addBulk(jobs);
        }
        const bull = worker(concurrency, async () => {});
        const completions = countdown(n);
        bull.on("completed", () => completions.tick());
        const begin = performance.now();
        void bull.run();
        await completions.done;
        const seconds = (performance.now() - begin) / 1000;
        await bull.close();
        return n / seconds;
      }),
    latencies: (concurrency, scenario) =>
      withQueue(async (queue) => {
        const started = waiters();
        const done = waiters();
        const bull = worker(concurrency, async (job) =>
          started.settle(job.data.key, performance.now()),
        );
        bull.on("completed", (job) => done.settle(job.data.key));
        void bull.run();
        await bull.waitUntilReady();
        const enqueue = (key) => queue.add("noop", { key }, jobOptions);
        const latencies = await scenario(enqueue, started, done);
        await bull.close();
        return latencies;
      }),
  };
}

/** Null when Redis answers PING on 127.0.0.1:6379, else why BullMQ is skipped. */
function redisUnavailable() {
  return new Promise((resolve) => {
    const socket = connect(REDIS.port, REDIS.host);
    const give = (why) => {
      socket.destroy();
      resolve(why);
    };
    socket.setTimeout(1000, () => give(`Redis did not answer on ${REDIS.host}:${REDIS.port}`));
    socket.on("error", (error) =>
      give(`Redis is not reachable on ${REDIS.host}:${REDIS.port} (${error.message})`),
    );
    socket.on("connect", () => socket.write("PING\r\n"));
    socket.on("data", (reply) =>
      give(
        reply.toString().startsWith("+PONG") ? null : `Redis answered ${reply.toString().trim()}`,
      ),
    );
  });
}

/** Runs the benchmark; resolves the results and the markdown table. */
export async function runQueueBench(options = {}) {
  const settings = {
    n: 20_000,
    concurrency: 8,
    idleCount: 2000,
    rounds: 3,
    loadSeconds: 1,
    loadCap: 50_000,
    only: ["sqlite", "memory", "p-queue", "bullmq"],
    /** Extra pragmas on the sqlite connection, to try settings openDatabase does not make. */
    sqlitePragmas: [],
    log: (line) => console.log(line),
    ...options,
  };
  const systems = {
    sqlite: () => sqliteQueueSystem(settings.sqlitePragmas),
    memory: memorySystem,
    "p-queue": pQueueSystem,
    bullmq: bullSystem,
  };
  const results = {};
  const skipped = {};
  for (const name of settings.only) {
    if (name === "bullmq") {
      const why = await redisUnavailable();
      if (why) {
        skipped[name] = why;
        settings.log(`skipping bullmq: ${why}`);
        continue;
      }
    }
    const begin = performance.now();
    const smaller = name === "bullmq" ? { idleCount: 500 } : {};
    results[name] = await measure(systems[name](), { ...settings, ...smaller });
    settings.log(`${name}: measured in ${((performance.now() - begin) / 1000).toFixed(1)} s`);
  }
  const markdown = table(results);
  return { settings, results, skipped, markdown };
}

function table(results) {
  const floor = results["p-queue"];
  const ratio = (value, base) =>
    base && Number.isFinite(value) ? ` (${(value / base).toFixed(2)}×)` : "";
  const rows = Object.entries(results).map(([name, r]) => {
    const idle50 = percentile(r.idle, 50);
    const load50 = percentile(r.load, 50);
    return [
      name,
      formatRate(r.enqueuePerS) + ratio(r.enqueuePerS, floor?.enqueuePerS),
      formatRate(r.processedPerS) + ratio(r.processedPerS, floor?.processedPerS),
      formatMs(idle50) + ratio(idle50, floor && percentile(floor.idle, 50)),
      formatMs(percentile(r.idle, 99)),
      `${formatMs(load50)}${ratio(load50, floor && percentile(floor.load, 50))}`,
      formatMs(percentile(r.load, 99)),
      formatRate(r.loadRate),
    ];
  });
  const header = [
    "queue",
    "enqueue/s (× p-queue)",
    "processed/s (× p-queue)",
    "idle p50",
    "idle p99",
    "50% load p50",
    "50% load p99",
    "load rate/s",
  ];
  return markdownTable(header, rows);
}

async function main() {
  const { values } = parseArgs({
    options: {
      n: { type: "string" },
      concurrency: { type: "string" },
      only: { type: "string" },
      "sqlite-pragma": { type: "string", multiple: true },
    },
  });
  const options = {};
  if (values.n) options.n = Number(values.n);
  if (values.concurrency) options.concurrency = Number(values.concurrency);
  if (values.only) options.only = values.only.split(",");
  if (values["sqlite-pragma"]) options.sqlitePragmas = values["sqlite-pragma"];
  const begin = performance.now();
  const cpu = cpus()[0]?.model ?? "unknown CPU";
  console.log(`node ${process.version}, ${cpus().length} × ${cpu}`);
  const { markdown, settings } = await runQueueBench(options);
  console.log(`\nN = ${settings.n}, concurrency ${settings.concurrency}, no-op handler\n`);
  console.log(markdown);
  console.log(`\ntotal ${((performance.now() - begin) / 1000).toFixed(1)} s`);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) await main();
