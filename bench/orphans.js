#!/usr/bin/env node
// Boot-time orphan recovery: `picklebot server` (the built CLI) runs 4 jobs whose model
// calls never answer; it is killed with SIGKILL and started again, and we time how long
// after the new process was spawned the first of the orphaned jobs calls the model again
// (its job requeued, claimed and resumed from its checkpoint). Peers wait for a lease to
// expire before a crashed worker's job runs again (30 s to 4 h).
//
// Usage: node bench/orphans.js [--runs 20]   (needs `npm run build`)
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, openSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { openDatabase } from "../dist/storage/sqlite/database.js";
import { SqliteJobQueue } from "../dist/storage/sqlite/queue.js";
import { loadFakes } from "./lib/server.js";
import { markdownTable, percentile } from "./lib/stats.js";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const JOBS = 4;

/** Runs the benchmark; resolves the per-restart times in ms and a markdown summary. */
export async function runOrphanBench({ runs = 20 } = {}) {
  const { anthropic } = await loadFakes(["anthropic"]);
  const requestTimes = [];
  const model = await anthropic.startFakeAnthropic({
    defaultReply: () => {
      requestTimes.push(performance.now());
      return { hang: true };
    },
  });
  const workspace = mkdtempSync(join(tmpdir(), "picklebot-orphans-"));
  writeFileSync(
    join(workspace, "picklebot.yaml"),
    `llm:\n  api_key: bench-key\n  base_url: ${model.url}\nhttp:\n  enabled: false\nworkers:\n  agent_concurrency: ${JOBS}\n`,
  );
  mkdirSync(join(workspace, "history"), { recursive: true });
  const times = [];
  try {
    let server = spawnServer(workspace);
    await enqueueJobs(workspace);
    await until(() => requestTimes.length >= JOBS);
    for (let run = 0; run < runs; run++) {
      server.kill("SIGKILL");
      await new Promise((resolve) => server.once("exit", resolve));
      const before = requestTimes.length;
      const spawned = performance.now();
      server = spawnServer(workspace);
      await until(() => requestTimes.length > before);
      times.push(requestTimes[before] - spawned);
      // Every orphan runs (and hangs) again before the next kill.
      await until(() => requestTimes.length >= before + JOBS);
    }
    server.kill("SIGKILL");
  } finally {
    await model.close();
    rmSync(workspace, { recursive: true, force: true });
  }
  const row = [
    String(runs),
    `${percentile(times, 50).toFixed(0)} ms`,
    `${Math.max(...times).toFixed(0)} ms`,
    `${Math.min(...times).toFixed(0)} ms`,
  ];
  const markdown = markdownTable(["restarts after kill -9", "median", "max", "min"], [row]);
  return { times, markdown };
}

function spawnServer(workspace) {
  return spawn(
    process.execPath,
    [join(ROOT, "bin/picklebot.js"), "server", "--workspace", workspace],
    {
      env: { ...process.env, ANTHROPIC_API_KEY: "" },
      stdio: [
        "ignore",
        process.env.BENCH_LOG ? openSync(process.env.BENCH_LOG, "a") : "ignore",
        "ignore",
      ],
    },
  );
}

/** Enqueues the jobs once the server has created (and migrated) the database. */
async function enqueueJobs(workspace) {
  await until(() => {
    try {
      openDatabase(join(workspace, "history", "picklebot.db")).close();
      return true;
    } catch {
      return false;
    }
  });
  const db = openDatabase(join(workspace, "history", "picklebot.db"));
  const queue = new SqliteJobQueue({ db });
  for (let index = 0; index < JOBS; index++) {
    await queue.enqueue({
      agentId: "pickle",
      sessionKey: `bench:orphan:${index}`,
      message: `orphan ${index}: answer slowly`,
      mode: "chat",
      replyTo: { kind: "silent" },
      // Every restart interrupts every job: the attempts must outlast the runs.
      maxAttempts: 1000,
    });
  }
  await queue.close();
  db.close();
}

async function until(condition, timeoutMs = 30_000) {
  const deadline = performance.now() + timeoutMs;
  while (!condition()) {
    if (performance.now() > deadline) throw new Error("orphans bench: timed out waiting");
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({ options: { runs: { type: "string", default: "20" } } });
  const { markdown } = await runOrphanBench({ runs: Number(values.runs) });
  console.log(markdown);
}
