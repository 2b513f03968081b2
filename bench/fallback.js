#!/usr/bin/env node
// Time from a failing primary to the fallback's first token (issue 30): the real agent
// runner (loop, fallback chain, the Anthropic provider on the SDK with its default
// retries) in-process, against two fake Anthropic servers on 127.0.0.1: the primary (the
// default entry, `llm:`) answers 503 to every request, the fallback (`models.backup`)
// streams its reply at once. Default settings otherwise (`llm.fallback_cooldown_s` 300).
//
//   first turn     a fresh runner: the primary's short retry (the SDK's 2 retries with
//                  its backoff) runs out, then the fallback streams;
//   cooling down   the next turns of the same runner: the primary is skipped.
//
// Usage: npm run build && node bench/fallback.js [--runs 10]
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { createModelProvider } from "../dist/agents/providers/index.js";
import { AgentRunner } from "../dist/agents/runner.js";
import { loadConfig } from "../dist/config/index.js";
import { openStorage } from "../dist/storage/index.js";
import { loadFakes } from "./lib/server.js";
import { markdownTable } from "./lib/stats.js";

const { values } = parseArgs({ options: { runs: { type: "string", default: "10" } } });
const RUNS = Number(values.runs);

const { anthropic } = await loadFakes(["anthropic"]);
const primary = await anthropic.startFakeAnthropic({ defaultReply: { error: { status: 503 } } });
const backup = await anthropic.startFakeAnthropic({ defaultReply: { text: "backup here" } });

/** A runner on a fresh workspace whose default entry is the primary, with `backup` after it. */
async function freshRunner() {
  const workspace = mkdtempSync(join(tmpdir(), "picklebot-bench-fallback-"));
  mkdirSync(join(workspace, "history"), { recursive: true });
  writeFileSync(
    join(workspace, "picklebot.yaml"),
    `llm:\n  api_key: bench-key\n  base_url: ${primary.url}\n  fallbacks: [backup]\nmodels:\n  backup:\n    model: backup-model\n    base_url: ${backup.url}\n`,
  );
  const config = loadConfig(workspace, {});
  const storage = await openStorage(config, { now: Date.now });
  const runner = new AgentRunner({
    workspace,
    config,
    agents: new Map(),
    history: storage.history,
    provider: createModelProvider(config.llm),
    clock: { now: Date.now },
    postMessage: () => undefined,
  });
  const close = async () => {
    await storage.close();
    rmSync(workspace, { recursive: true, force: true });
  };
  return { runner, history: storage.history, close };
}

/** Milliseconds from the start of a turn to its first streamed token. */
async function timeToFirstToken({ runner, history }) {
  const session = await history.createSession({ key: "console:bench", agentId: "pickle" });
  await history.append(session.id, { role: "user", content: [{ type: "text", text: "hi" }] });
  const started = performance.now();
  let first;
  const result = await runner.run({
    agentId: "pickle",
    sessionId: session.id,
    sessionKey: session.key,
    signal: new AbortController().signal,
    events: { onText: () => (first ??= performance.now()) },
  });
  if (!result.fallback) throw new Error("the fallback did not answer");
  return first - started;
}

const firstTurn = [];
const cooling = [];
for (let run = 0; run < RUNS; run++) {
  const fresh = await freshRunner();
  try {
    firstTurn.push(await timeToFirstToken(fresh));
    cooling.push(await timeToFirstToken(fresh));
  } finally {
    await fresh.close();
  }
}
await primary.close();
await backup.close();

const row = (name, times) => {
  const sorted = [...times].sort((a, b) => a - b);
  const at = (q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  return [
    name,
    String(times.length),
    ...[at(0), at(0.5), at(0.9), sorted.at(-1)].map((ms) => `${(ms / 1000).toFixed(2)} s`),
  ];
};
console.log(
  markdownTable(
    ["turn", "runs", "min", "p50", "p90", "max"],
    [
      row("first turn (primary retried, then fallback)", firstTurn),
      row("while cooling down", cooling),
    ],
  ),
);
