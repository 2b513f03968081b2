/**
 * The queue benchmark's workload, shared by bench/queue.js and bench/postgres.js: no-op
 * jobs, each in its own session, measured for enqueue rate, processing rate and
 * enqueue → start latency (idle, and at half of one process's capacity).
 *
 * A "system" is anything with `enqueueRate(n)`, `processRate(n, concurrency)` and
 * `latencies(concurrency, scenario)`; `jobQueueSystem` makes one from a JobQueue adapter.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase } from "../../dist/storage/sqlite/database.js";
import { SqliteJobQueue } from "../../dist/storage/sqlite/queue.js";
import { startRunner } from "./runner.js";
import { yieldToEventLoop } from "./stats.js";

const noop = () => {};

/** A job of its own session, named by `key` (the handler finds its waiter by it). */
export function benchJob(key) {
  return {
    agentId: "bench",
    sessionKey: `bench:${key}`,
    message: key,
    mode: "job",
    replyTo: { kind: "silent" },
  };
}

/** Waiters keyed by job key: `expect(key)` before enqueueing, `settle(key)` in the handler. */
export function waiters() {
  const pending = new Map();
  return {
    expect(key) {
      return new Promise((resolve) => pending.set(key, resolve));
    },
    settle(key, value) {
      const resolve = pending.get(key);
      pending.delete(key);
      resolve?.(value);
    },
  };
}

/** Enqueues `total` jobs at `ratePerS` (paced on the event loop); resolves start latencies. */
async function latencyUnderLoad(total, ratePerS, enqueue, started) {
  const latencies = [];
  const finished = [];
  const begin = performance.now();
  let index = 0;
  while (index < total) {
    const due = Math.min(total, Math.floor(((performance.now() - begin) * ratePerS) / 1000) + 1);
    for (; index < due; index += 1) {
      const key = `load-${index}`;
      const start = started.expect(key);
      const enqueuedAt = performance.now();
      finished.push(
        enqueue(key)
          .then(() => start)
          .then((at) => latencies.push(at - enqueuedAt)),
      );
    }
    await yieldToEventLoop();
  }
  await Promise.all(finished);
  return latencies;
}

/**
 * The measurements, written once for anything with `enqueue(key)` and a handler hook.
 * Throughputs are the best of `rounds` runs: this machine's noise only ever slows a run down.
 */
export async function measure(system, options) {
  return (await measureAll({ system }, options)).system;
}

/**
 * Measures several systems with their runs interleaved (every system's first round, then
 * every system's second…), so that a noisy stretch of the machine hits all of them alike.
 * Resolves `{ [name]: { enqueuePerS, processedPerS, idle, load, loadRate } }`.
 */
export async function measureAll(systems, options) {
  const { n, concurrency, loadSeconds } = options;
  const entries = Object.entries(systems);
  const results = Object.fromEntries(
    entries.map(([name]) => [name, { enqueuePerS: 0, processedPerS: 0 }]),
  );
  for (let round = 0; round < options.rounds; round += 1) {
    for (const [name, system] of entries) {
      const result = results[name];
      result.enqueuePerS = Math.max(result.enqueuePerS, await system.enqueueRate(n));
      result.processedPerS = Math.max(
        result.processedPerS,
        await system.processRate(n, concurrency),
      );
      options.log?.(`${name}: round ${round + 1} measured`);
    }
  }
  for (const [name, system] of entries) {
    const result = results[name];
    result.idle = await idleLatencies(
      system,
      concurrency,
      options.idleCounts?.[name] ?? options.idleCount,
    );
    // Producer and worker share this thread, so capacity is the two costs added up; a fixed
    // `loadRate` puts every system under the same arrival rate instead.
    const rate = options.loadRate ?? 0.5 / (1 / result.enqueuePerS + 1 / result.processedPerS);
    const total = Math.max(200, Math.min(options.loadCap, Math.round(rate * loadSeconds)));
    result.load = await system.latencies(concurrency, (enqueue, started) =>
      latencyUnderLoad(total, rate, enqueue, started),
    );
    result.loadRate = rate;
  }
  return results;
}

/** Enqueue → start of `count` jobs, one at a time, each waited for, with idle workers. */
function idleLatencies(system, concurrency, count) {
  return system.latencies(concurrency, async (enqueue, started, done) => {
    const latencies = [];
    for (let index = 0; index < count; index += 1) {
      const key = `idle-${index}`;
      const start = started.expect(key);
      const finish = done.expect(key);
      const enqueuedAt = performance.now();
      await enqueue(key);
      latencies.push((await start) - enqueuedAt);
      await finish;
    }
    return latencies;
  });
}

/** Our JobQueue adapters, through the benchmark runner (a minimal AgentWorker). */
/** `done` resolves once `tick(count)` has counted `n` in all. */
export function countdown(n) {
  let left = n;
  let resolve;
  const done = new Promise((settle) => {
    resolve = settle;
  });
  return {
    done,
    tick(count = 1) {
      left -= count;
      if (left <= 0) resolve();
    },
  };
}

/** A system over a JobQueue adapter; `open()` (sync or async) makes a fresh, empty one. */
export function jobQueueSystem(open) {
  return {
    async enqueueRate(n) {
      const { queue, close } = await open();
      const begin = performance.now();
      for (let index = 0; index < n; index += 1) await queue.enqueue(benchJob(`e${index}`));
      const seconds = (performance.now() - begin) / 1000;
      await close();
      return n / seconds;
    },
    async processRate(n, concurrency) {
      const { queue, close } = await open();
      for (let index = 0; index < n; index += 1) await queue.enqueue(benchJob(`p${index}`));
      const completions = countdown(n);
      const begin = performance.now();
      const runner = startRunner(queue, {
        concurrency,
        handler: noop,
        onComplete: () => completions.tick(),
      });
      await completions.done;
      const seconds = (performance.now() - begin) / 1000;
      runner.stop();
      await close();
      return n / seconds;
    },
    async latencies(concurrency, scenario) {
      const { queue, close } = await open();
      const started = waiters();
      const done = waiters();
      const runner = startRunner(queue, {
        concurrency,
        handler: (job) => started.settle(job.message, performance.now()),
        onComplete: (job) => done.settle(job.message),
      });
      const latencies = await scenario((key) => queue.enqueue(benchJob(key)), started, done);
      runner.stop();
      await close();
      return latencies;
    },
  };
}

/**
 * A system over picklebot's SQLite queue, each run on a fresh database in a new folder of
 * `parent` (Default: the temp folder), with `pragmas` applied after picklebot's own.
 */
export function sqliteQueueSystem(pragmas = [], parent = tmpdir()) {
  return jobQueueSystem(() => {
    const dir = mkdtempSync(join(parent, "picklebot-bench-"));
    const db = openDatabase(join(dir, "picklebot.db"));
    for (const pragma of pragmas) db.pragma(pragma);
    const queue = new SqliteJobQueue({ db });
    return {
      queue,
      async close() {
        await queue.close();
        db.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  });
}
