#!/usr/bin/env node
// A long conversation against a model with a 200k-token window: 300 turns in one session,
// every fifth asking for a large file (a `read` of 256 KiB), run in-process through the
// real agent runner (context builder, budget, compaction) with SQLite history, against
// the fake Anthropic API that refuses any prompt over 200k tokens and models prompt
// caching as the API does. Reports the input tokens of each turn's requests (a plot),
// the largest request, refused requests, failed turns, prunes and summary calls, and the share of
// input tokens a cache would read.
//
// Usage: npm run build && node bench/conversation.js [--turns 300]
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { loadAgents } from "../dist/agents/definition.js";
import { createAnthropicProvider } from "../dist/agents/providers/anthropic.js";
import { AgentRunner } from "../dist/agents/runner.js";
import { loadConfig } from "../dist/config/index.js";
import { openStorage } from "../dist/storage/index.js";
import { loadFakes } from "./lib/server.js";
import { markdownTable } from "./lib/stats.js";

const WINDOW = 200_000;
const BIG_EVERY = 5;

/** Runs the conversation; resolves the per-turn numbers and a markdown report. */
export async function runConversationBench({ turns = 300 } = {}) {
  const { anthropic } = await loadFakes(["anthropic"]);
  const fake = await anthropic.startFakeAnthropic({
    promptTokenLimit: WINDOW,
    defaultReply: answer,
  });
  const workspace = mkdtempSync(join(tmpdir(), "picklebot-conversation-"));
  writeFileSync(
    join(workspace, "picklebot.yaml"),
    `llm:\n  api_key: bench-key\n  base_url: ${fake.url}\n  model: claude-sonnet-4-6\n`,
  );
  writeFileSync(
    join(workspace, "big.txt"),
    "A line of a large log file, read now and then.\n".repeat(5600),
  );
  mkdirSync(join(workspace, "history"), { recursive: true });
  const config = loadConfig(workspace, {});
  const storage = await openStorage(config, { now: () => Date.now() });
  const runner = new AgentRunner({
    workspace,
    config,
    agents: loadAgents(workspace).agents,
    history: storage.history,
    provider: createAnthropicProvider({ apiKey: "bench-key", baseURL: fake.url, maxRetries: 0 }),
    clock: { now: () => Date.now() },
    postMessage: () => undefined,
  });
  const perTurn = [];
  let failed = 0;
  let summaries = 0;
  let prunes = 0;
  try {
    const session = await storage.history.createSession({
      key: "bench:conversation",
      agentId: "pickle",
    });
    for (let turn = 1; turn <= turns; turn++) {
      const signal = new AbortController().signal;
      const request = {
        agentId: "pickle",
        sessionId: session.id,
        sessionKey: "bench:conversation",
        signal,
      };
      const compacted = await runner.compact(request).catch(() => null);
      if (compacted?.how === "summarised") summaries += 1;
      if (compacted?.how === "pruned") prunes += 1;
      const text =
        turn % BIG_EVERY === 0
          ? `turn ${turn}: please read big.txt`
          : `turn ${turn}: ${"tell me more about pickling. ".repeat(8)}`;
      await storage.history.append(session.id, { role: "user", content: [{ type: "text", text }] });
      try {
        const result = await runner.run(request);
        const { input, cacheRead, cacheWrite } = result.usage;
        perTurn.push({
          turn,
          input: input + cacheRead + cacheWrite,
          cacheRead,
          calls: result.modelCalls,
        });
      } catch {
        failed += 1;
        perTurn.push({ turn, input: 0, cacheRead: 0, calls: 0 });
      }
    }
  } finally {
    await storage.close();
    await fake.close();
    rmSync(workspace, { recursive: true, force: true });
  }
  const largest = Math.max(...fake.requests.map((request) => anthropic.promptTokens(request.body)));
  const totalInput = perTurn.reduce((sum, turn) => sum + turn.input, 0);
  const totalRead = perTurn.reduce((sum, turn) => sum + turn.cacheRead, 0);
  const perRequest = perTurn.map((turn) => turn.input / Math.max(1, turn.calls));
  const row = [
    String(turns),
    String(fake.requests.length),
    `${largest.toLocaleString("en-US")} (limit ${WINDOW.toLocaleString("en-US")})`,
    String(fake.refused.length),
    String(failed),
    String(prunes),
    String(summaries),
    `${((100 * totalRead) / Math.max(1, totalInput)).toFixed(1)}%`,
  ];
  const table = markdownTable(
    [
      "turns",
      "requests",
      "largest request (tokens)",
      "refused",
      "failed turns",
      "prunes",
      "summary calls",
      "cache-read share",
    ],
    [row],
  );
  return {
    perTurn,
    markdown: `${table}\n\nInput tokens per request, by turn (max of each ${Math.ceil(turns / 60)} turns):\n\n\`\`\`\n${plot(perRequest)}\n\`\`\``,
  };

  /** The fake model: reads big.txt when asked, answers briefly, summarises when told to. */
  function answer(request) {
    if (JSON.stringify(request.body.system).includes("You compress a conversation")) {
      return {
        text: `Notes so far: ${"the user is learning about pickling and reads big.txt now and then. ".repeat(20)}`,
      };
    }
    const last = request.body.messages.at(-1);
    const blocks = Array.isArray(last?.content) ? last.content : [];
    const answered = blocks.some((block) => block.type === "tool_result");
    const wantsFile = blocks.some(
      (block) => block.type === "text" && String(block.text).includes("read big.txt"),
    );
    if (wantsFile && !answered) return { toolUses: [{ name: "read", input: { path: "big.txt" } }] };
    return { text: `Here is a short answer about pickling. ${"Brine, vinegar, time. ".repeat(6)}` };
  }
}

/** An ASCII plot of `values` (one column per bucket, its maximum), 12 rows high. */
function plot(values) {
  const columns = 60;
  const size = Math.ceil(values.length / columns);
  const buckets = [];
  for (let start = 0; start < values.length; start += size) {
    buckets.push(Math.max(...values.slice(start, start + size)));
  }
  const top = Math.max(...buckets, 1);
  const rows = [];
  for (let row = 12; row >= 1; row--) {
    const level = (top * row) / 12;
    const label = `${Math.round(level / 1000)}k`.padStart(5);
    rows.push(
      `${label} |${buckets.map((value) => (value >= level - top / 24 ? "#" : " ")).join("")}`,
    );
  }
  rows.push(`      +${"-".repeat(buckets.length)}`);
  rows.push(`       turn 1${" ".repeat(Math.max(1, buckets.length - 14))}turn ${values.length}`);
  return rows.join("\n");
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({ options: { turns: { type: "string", default: "300" } } });
  const { markdown } = await runConversationBench({ turns: Number(values.turns) });
  console.log(markdown);
}
