/**
 * One picklebot process of the multi-process PostgreSQL benchmark (bench/postgres.js),
 * driven over IPC: it enqueues a range of bench jobs, or runs the benchmark runner on
 * its own PostgresJobQueue (own pool and LISTEN connection, as `picklebot server` has)
 * and reports starts and completions.
 *
 *   ← { cmd: "open", url }                     → { cmd: "opened" }
 *   ← { cmd: "enqueue", prefix, from, to }     → { cmd: "enqueued" }
 *   ← { cmd: "run", concurrency, reportStarts }→ { done: n } (coalesced), { started, at },
 *                                                { completed }
 *   ← { cmd: "stop" }                          → { cmd: "stopped" }, then exits
 */
import { connectionConfig, openPostgres } from "../../dist/storage/postgres/database.js";
import { PostgresJobQueue } from "../../dist/storage/postgres/queue.js";
import { benchJob } from "./measure.js";
import { startRunner } from "./runner.js";

let pool;
let queue;
let runner = null;

/** Epoch-based milliseconds with sub-millisecond precision, comparable across processes. */
const wallNow = () => performance.timeOrigin + performance.now();

async function open({ url }) {
  pool = await openPostgres({ url, poolSize: 10, applicationName: "bench-worker" });
  queue = new PostgresJobQueue({ pool, connection: connectionConfig({ url }) });
  process.send({ cmd: "opened" });
}

async function enqueue({ prefix, from, to }) {
  for (let index = from; index < to; index += 1) await queue.enqueue(benchJob(`${prefix}${index}`));
  process.send({ cmd: "enqueued" });
}

function run({ concurrency, reportStarts }) {
  let done = 0;
  let reportQueued = false;
  runner = startRunner(queue, {
    concurrency,
    workerId: `bench-${process.pid}`,
    handler: (job) => {
      if (reportStarts) process.send({ started: job.message, at: wallNow() });
    },
    onComplete: (job) => {
      done += 1;
      if (reportStarts) process.send({ completed: job.message });
      if (reportQueued) return;
      reportQueued = true;
      setImmediate(() => {
        reportQueued = false;
        process.send({ done });
      });
    },
  });
}

async function stop() {
  runner?.stop();
  await queue.close();
  await pool.end();
  process.send({ cmd: "stopped" }, () => process.exit(0));
}

process.on("message", (message) => {
  const handlers = { open, enqueue, run, stop };
  Promise.resolve(handlers[message.cmd](message)).catch((error) => {
    console.error(error);
    process.exit(1);
  });
});
