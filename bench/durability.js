/**
 * SQLite `synchronous=NORMAL` against `FULL` (docs/operations/reliability.md, durability): the
 * sqlite queue adapter enqueueing N jobs one commit each, and processing N queued jobs
 * (claimed in batches, each completion committed), the two settings interleaved round by
 * round in one run so both see the same machine. The database lives on the disk given by
 * --dir (not /tmp, which may be a RAM disk where fsync costs nothing).
 *
 * Usage: npm run build && node bench/durability.js [--n 3000] [--rounds 3]
 *        [--concurrency 8] [--dir bench]
 */
import { cpus } from "node:os";
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { sqliteQueueSystem } from "./lib/measure.js";
import { formatRate, markdownTable, percentile } from "./lib/stats.js";

const { values } = parseArgs({
  options: {
    n: { type: "string", default: "3000" },
    rounds: { type: "string", default: "3" },
    concurrency: { type: "string", default: "8" },
    dir: { type: "string", default: "bench" },
  },
});
const n = Number(values.n);
const rounds = Number(values.rounds);
const concurrency = Number(values.concurrency);
const parent = resolve(values.dir);

function system(synchronous) {
  return sqliteQueueSystem([`synchronous = ${synchronous}`], parent);
}

const modes = ["NORMAL", "FULL"];
const results = Object.fromEntries(modes.map((mode) => [mode, { enqueue: [], processed: [] }]));
for (let round = 0; round < rounds; round += 1) {
  // Alternate who goes first, so neither always meets a warmer (or busier) machine.
  const order = round % 2 === 0 ? modes : [...modes].reverse();
  for (const mode of order) {
    const measured = system(mode);
    results[mode].enqueue.push(await measured.enqueueRate(n));
    results[mode].processed.push(await measured.processRate(n, concurrency));
    process.stderr.write(`round ${round + 1}: ${mode} done\n`);
  }
}

const median = (list) => percentile(list, 50);
const rows = modes.map((mode) => [
  `synchronous=${mode}`,
  formatRate(median(results[mode].enqueue)),
  formatRate(median(results[mode].processed)),
]);
const ratio = (key) => median(results.FULL[key]) / median(results.NORMAL[key]);
console.log(
  `${cpus().length} × ${cpus()[0]?.model.trim()}, Node ${process.version}; n=${n}, ${rounds} interleaved rounds (medians), concurrency ${concurrency}, database in ${parent}\n`,
);
console.log(markdownTable(["setting", "enqueue/s", "processed/s"], rows));
console.log(
  `\nFULL / NORMAL: enqueue ${(ratio("enqueue") * 100).toFixed(0)} %, processing ${(ratio("processed") * 100).toFixed(0)} %`,
);
