/**
 * PostgreSQL queue benchmark: the no-op workload of bench/queue.js (bench/lib/measure.js)
 * on picklebot's PostgresJobQueue with one process and with three, and on pg-boss and
 * graphile-worker, all in one run on the same server, in a database made for the run and
 * dropped afterwards.
 *
 *   picklebot-pg ×1   this process enqueues and runs the benchmark runner
 *   picklebot-pg ×3   three child processes (bench/lib/pg-worker.js), each with its own
 *                     pool, LISTEN connection and runner at `concurrency`; they enqueue a
 *                     third of the jobs each for enqueue/s; the parent enqueues for latency
 *   pg-boss           `work()` × concurrency; batchSize 100 (processing) or 1 (latency),
 *                     pollingIntervalSeconds 0.5 (its minimum); send() wakes local workers
 *   graphile-worker   `run()` with `concurrency`, its defaults otherwise (LISTEN/NOTIFY)
 *
 * Latency under load is measured at one arrival rate for all (`--load-rate`, default 100/s).
 * The systems' runs are interleaved (round 1 of each, then round 2…), so that the noise of
 * a shared machine falls on all of them alike.
 *
 * Usage: npm run build && node bench/postgres.js [--n 5000] [--concurrency 8] [--load-rate 100]
 *        [--only picklebot-pg-1,picklebot-pg-3,pg-boss,graphile-worker]
 * The server: PICKLEBOT_BENCH_DATABASE_URL (Default: postgres://postgres@127.0.0.1:5432/test).
 */
import { fork } from "node:child_process";
import { randomBytes } from "node:crypto";
import { cpus } from "node:os";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { Logger, makeWorkerUtils, run as runGraphile } from "graphile-worker";
import pg from "pg";
import PgBoss from "pg-boss";
import { connectionConfig, openPostgres } from "../dist/storage/postgres/database.js";
import { PostgresJobQueue } from "../dist/storage/postgres/queue.js";
import { benchJob, countdown, jobQueueSystem, measureAll, waiters } from "./lib/measure.js";
import { formatMs, formatRate, markdownTable, percentile } from "./lib/stats.js";

const ADMIN_URL =
  process.env.PICKLEBOT_BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";

/** Creates the benchmark's own database; `drop()` removes it. */
async function benchDatabase() {
  const name = `picklebot_bench_${randomBytes(4).toString("hex")}`;
  const admin = async (sql) => {
    const client = new pg.Client({ connectionString: ADMIN_URL });
    await client.connect();
    try {
      return (await client.query(sql)).rows;
    } finally {
      await client.end();
    }
  };
  await admin(`CREATE DATABASE ${name}`);
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      // The peers close some connections a moment after they say they stopped; a forced
      // drop would kill those, and a pool without an error listener would crash the run.
      const connected = `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = '${name}'`;
      for (let waited = 0; waited < 5000; waited += 100) {
        if ((await admin(connected))[0].n === 0) break;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    },
  };
}

/** picklebot in this process: one pool, one LISTEN connection, the benchmark runner. */
function picklebotOneProcess(url) {
  return jobQueueSystem(async () => {
    const pool = await openPostgres({ url, poolSize: 10, applicationName: "bench" });
    await pool.query("TRUNCATE jobs RESTART IDENTITY");
    const queue = new PostgresJobQueue({ pool, connection: connectionConfig({ url }) });
    return {
      queue,
      async close() {
        await queue.close();
        await pool.end();
      },
    };
  });
}

/** A child picklebot process (bench/lib/pg-worker.js) and a way to await its replies. */
async function startChild(url, onMessage) {
  const child = fork(new URL("./lib/pg-worker.js", import.meta.url), { stdio: "inherit" });
  const replies = [];
  child.on("message", (message) => {
    if (message.cmd) replies.shift()?.(message);
    else onMessage(message);
  });
  const call = (message) =>
    new Promise((resolve) => {
      replies.push(resolve);
      child.send(message);
    });
  await call({ cmd: "open", url });
  return {
    call,
    /** Starts the runner; it answers only with progress messages. */
    run: (concurrency, reportStarts) => child.send({ cmd: "run", concurrency, reportStarts }),
    stop: () => call({ cmd: "stop" }),
  };
}

/** picklebot as a cluster of `count` processes on one database. */
function picklebotCluster(url, count) {
  async function withCluster(onMessage, use) {
    const pool = await openPostgres({ url, poolSize: 4, applicationName: "bench" });
    await pool.query("TRUNCATE jobs RESTART IDENTITY");
    const producer = new PostgresJobQueue({ pool });
    const children = [];
    try {
      for (let index = 0; index < count; index += 1) {
        children.push(await startChild(url, (message) => onMessage(index, message)));
      }
      return await use(children, producer);
    } finally {
      await Promise.all(children.map((child) => child.stop()));
      await producer.close();
      await pool.end();
    }
  }
  return {
    enqueueRate: (n) =>
      withCluster(
        () => undefined,
        async (children) => {
          const share = Math.ceil(n / count);
          const begin = performance.now();
          await Promise.all(
            children.map((child, index) =>
              child.call({
                cmd: "enqueue",
                prefix: "e",
                from: index * share,
                to: Math.min(n, (index + 1) * share),
              }),
            ),
          );
          return n / ((performance.now() - begin) / 1000);
        },
      ),
    processRate(n, concurrency) {
      const done = new Array(count).fill(0);
      const completions = countdown(n);
      const onMessage = (index, message) => {
        if (message.done === undefined) return;
        completions.tick(message.done - done[index]);
        done[index] = message.done;
      };
      return withCluster(onMessage, async (children, producer) => {
        for (let index = 0; index < n; index += 1) await producer.enqueue(benchJob(`p${index}`));
        const begin = performance.now();
        for (const child of children) child.run(concurrency, false);
        await completions.done;
        return n / ((performance.now() - begin) / 1000);
      });
    },
    latencies(concurrency, scenario) {
      const started = waiters();
      const completed = waiters();
      const onMessage = (_index, message) => {
        if (message.started !== undefined) {
          started.settle(message.started, message.at - performance.timeOrigin);
        }
        if (message.completed !== undefined) completed.settle(message.completed);
      };
      return withCluster(onMessage, async (children, producer) => {
        for (const child of children) child.run(concurrency, true);
        // Let every child's LISTEN connection come up before the first job.
        await new Promise((resolve) => setTimeout(resolve, 500));
        return scenario((key) => producer.enqueue(benchJob(key)), started, completed);
      });
    },
  };
}

/** pg-boss with its own schema in the benchmark database. */
function pgBossSystem(url) {
  const name = "noop";
  async function withBoss(use) {
    const boss = new PgBoss({ connectionString: url, schema: "pgboss_bench", max: 10 });
    boss.on("error", (error) => console.error(`pg-boss: ${error.message}`));
    await boss.start();
    await boss.deleteQueue(name).catch(() => undefined);
    await boss.createQueue(name);
    try {
      return await use(boss);
    } finally {
      await boss.stop({ graceful: false, wait: true });
    }
  }
  async function workers(boss, concurrency, batchSize, handler) {
    const options = { batchSize, pollingIntervalSeconds: 0.5 };
    for (let index = 0; index < concurrency; index += 1) await boss.work(name, options, handler);
  }
  return {
    enqueueRate: (n) =>
      withBoss(async (boss) => {
        const begin = performance.now();
        for (let index = 0; index < n; index += 1) await boss.send(name, { key: `e${index}` });
        return n / ((performance.now() - begin) / 1000);
      }),
    processRate: (n, concurrency) =>
      withBoss(async (boss) => {
        for (let from = 0; from < n; from += 1000) {
          const size = Math.min(1000, n - from);
          await boss.insert(
            Array.from({ length: size }, (_, offset) => ({
              name,
              data: { key: `p${from + offset}` },
            })),
          );
        }
        const completions = countdown(n);
        const begin = performance.now();
        await workers(boss, concurrency, 100, async (jobs) => {
          setImmediate(() => completions.tick(jobs.length));
        });
        await completions.done;
        return n / ((performance.now() - begin) / 1000);
      }),
    latencies: (concurrency, scenario) =>
      withBoss(async (boss) => {
        const started = waiters();
        const done = waiters();
        await workers(boss, concurrency, 1, async ([job]) => {
          started.settle(job.data.key, performance.now());
          setImmediate(() => done.settle(job.data.key));
        });
        return scenario((key) => boss.send(name, { key }), started, done);
      }),
  };
}

/** graphile-worker in the benchmark database (schema graphile_worker). */
function graphileSystem(url) {
  const silent = new Logger(() => () => undefined);
  async function withUtils(use) {
    const utils = await makeWorkerUtils({ connectionString: url, logger: silent });
    await utils.migrate();
    await utils.withPgClient((client) => client.query("DELETE FROM graphile_worker._private_jobs"));
    try {
      return await use(utils);
    } finally {
      await utils.release();
    }
  }
  function start(concurrency, noop) {
    return runGraphile({
      connectionString: url,
      concurrency,
      noHandleSignals: true,
      logger: silent,
      taskList: { noop },
    });
  }
  return {
    enqueueRate: (n) =>
      withUtils(async (utils) => {
        const begin = performance.now();
        for (let index = 0; index < n; index += 1) await utils.addJob("noop", { key: `e${index}` });
        return n / ((performance.now() - begin) / 1000);
      }),
    processRate: (n, concurrency) =>
      withUtils(async (utils) => {
        for (let index = 0; index < n; index += 1) await utils.addJob("noop", { key: `p${index}` });
        const completions = countdown(n);
        const begin = performance.now();
        const runner = await start(concurrency, async () => {});
        runner.events.on("job:success", () => completions.tick());
        await completions.done;
        const seconds = (performance.now() - begin) / 1000;
        await runner.stop();
        return n / seconds;
      }),
    latencies: (concurrency, scenario) =>
      withUtils(async (utils) => {
        const started = waiters();
        const done = waiters();
        const runner = await start(concurrency, async (payload) => {
          started.settle(payload.key, performance.now());
        });
        runner.events.on("job:success", ({ job }) => done.settle(job.payload.key));
        try {
          return await scenario((key) => utils.addJob("noop", { key }), started, done);
        } finally {
          await runner.stop();
        }
      }),
  };
}

/** Runs the benchmark; resolves the results and the markdown tables. */
export async function runPostgresBench(options = {}) {
  const settings = {
    n: 5000,
    concurrency: 8,
    idleCount: 500,
    // pg-boss polls: its idle runs take long enough with fewer jobs.
    idleCounts: { "pg-boss": 200 },
    rounds: 2,
    loadSeconds: 2,
    loadCap: 10_000,
    // The same arrival rate for every system: each one's own half capacity would load the
    // faster systems harder and make their latencies incomparable.
    loadRate: 100,
    only: ["picklebot-pg-1", "picklebot-pg-3", "pg-boss", "graphile-worker"],
    log: (line) => console.log(line),
    ...options,
  };
  const database = await benchDatabase();
  const systems = {
    "picklebot-pg-1": () => picklebotOneProcess(database.url),
    "picklebot-pg-3": () => picklebotCluster(database.url, 3),
    "pg-boss": () => pgBossSystem(database.url),
    "graphile-worker": () => graphileSystem(database.url),
  };
  let results;
  try {
    const chosen = Object.fromEntries(settings.only.map((name) => [name, systems[name]()]));
    results = await measureAll(chosen, settings);
  } finally {
    await database.drop();
  }
  return { settings, results, markdown: tables(results) };
}

function tables(results) {
  const row = (name, r) => [
    name,
    formatRate(r.enqueuePerS),
    formatRate(r.processedPerS),
    formatMs(percentile(r.idle, 50)),
    formatMs(percentile(r.idle, 99)),
    formatMs(percentile(r.load, 50)),
    formatMs(percentile(r.load, 99)),
    formatRate(r.loadRate),
  ];
  const header = [
    "queue",
    "enqueue/s",
    "processed/s",
    "idle p50",
    "idle p99",
    "load p50",
    "load p99",
    "load rate/s",
  ];
  const main = markdownTable(
    header,
    Object.entries(results).map(([name, r]) => row(name, r)),
  );
  return `${main}\n\n${ratioTable(results)}`;
}

/** picklebot's processes against each peer: × throughput (higher is better), × latency (lower). */
function ratioTable(results) {
  const ours = ["picklebot-pg-1", "picklebot-pg-3"].filter((name) => results[name]);
  const peers = ["pg-boss", "graphile-worker"].filter((name) => results[name]);
  const rows = [];
  for (const mine of ours) {
    for (const peer of peers) {
      const a = results[mine];
      const b = results[peer];
      const times = (x, y) => `${(x / y).toFixed(2)}×`;
      rows.push([
        `${mine} vs ${peer}`,
        times(a.enqueuePerS, b.enqueuePerS),
        times(a.processedPerS, b.processedPerS),
        times(percentile(a.idle, 50), percentile(b.idle, 50)),
        times(percentile(a.load, 50), percentile(b.load, 50)),
      ]);
    }
  }
  return markdownTable(
    ["ratio", "enqueue/s", "processed/s", "idle p50 latency", "load p50 latency"],
    rows,
  );
}

async function main() {
  const { values } = parseArgs({
    options: {
      n: { type: "string" },
      concurrency: { type: "string" },
      only: { type: "string" },
      "load-rate": { type: "string" },
    },
  });
  const options = {};
  if (values.n) options.n = Number(values.n);
  if (values.concurrency) options.concurrency = Number(values.concurrency);
  if (values.only) options.only = values.only.split(",");
  if (values["load-rate"]) options.loadRate = Number(values["load-rate"]);
  const begin = performance.now();
  console.log(`node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? "unknown CPU"}`);
  const { markdown, settings } = await runPostgresBench(options);
  console.log(`\nN = ${settings.n}, concurrency ${settings.concurrency}, no-op handler\n`);
  console.log(markdown);
  console.log(`\ntotal ${((performance.now() - begin) / 1000).toFixed(1)} s`);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) await main();
