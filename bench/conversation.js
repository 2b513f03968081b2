#!/usr/bin/env node
// Long conversations against a model with a 200k-token window, 300 turns in one session
// each, run in-process through the real agent runner (context builder, budget,
// compaction, the memory save before each summary) with SQLite history, against the fake
// Anthropic API that refuses any prompt over 200k tokens and models prompt caching as the
// API does. Two shapes: `files`, every fifth turn asking for a large file (a `read` of
// 256 KiB) and short questions between; `talk`, every turn a long message (about 1,000
// tokens) and a short answer, no tools. Each runs twice: with the summary keeping the
// latest turns verbatim (`history.keep_verbatim_tokens`, default 20,000) and without (0:
// the summary replaces everything). Reports for each the input tokens of each turn's
// requests (a plot), the largest request, refused requests, failed turns, prunes,
// summaries and memory save calls, the context before and after each summary, the input
// tokens of all requests and the share a cache would read.
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

/** Runs the conversation with and without the verbatim tail; resolves a markdown report. */
export async function runConversationBench({ turns = 300 } = {}) {
  const runs = [];
  for (const shape of ["files", "talk"]) {
    for (const keep of [20_000, 0]) {
      runs.push({ shape, keep, ...(await runConversation(turns, keep, shape)) });
    }
  }
  const table = markdownTable(
    [
      "shape",
      "keep_verbatim_tokens",
      "requests",
      "largest request (tokens)",
      "refused",
      "failed turns",
      "prunes",
      "summaries",
      "memory save calls",
      "context before → after a summary (mean tokens)",
      "input tokens, all requests",
      "cache-read share",
    ],
    runs.map((run) => run.row),
  );
  const plots = runs.map(
    (run) =>
      `${run.shape}, keep_verbatim_tokens: ${run.keep}. Input tokens per request, by turn (max of each ${Math.ceil(turns / 60)} turns):\n\n\`\`\`\n${plot(run.perRequest)}\n\`\`\``,
  );
  return { runs, markdown: [table, ...plots].join("\n\n") };
}

/** One conversation of `turns` turns of `shape`, its summaries keeping `keep` tokens verbatim. */
async function runConversation(turns, keep, shape) {
  const { anthropic } = await loadFakes(["anthropic"]);
  let saves = 0;
  const fake = await anthropic.startFakeAnthropic({
    promptTokenLimit: WINDOW,
    defaultReply: answer,
  });
  const workspace = mkdtempSync(join(tmpdir(), "picklebot-conversation-"));
  writeFileSync(
    join(workspace, "picklebot.yaml"),
    `llm:\n  api_key: bench-key\n  base_url: ${fake.url}\n  model: claude-sonnet-4-6\nhistory:\n  keep_verbatim_tokens: ${keep}\n`,
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
    memoryStores: storage,
  });
  const perTurn = [];
  const summaries = [];
  let failed = 0;
  let prunes = 0;
  try {
    const session = await storage.history.createSession({
      key: "console:bench-conversation",
      agentId: "pickle",
    });
    for (let turn = 1; turn <= turns; turn++) {
      const signal = new AbortController().signal;
      const request = {
        agentId: "pickle",
        sessionId: session.id,
        sessionKey: "console:bench-conversation",
        signal,
      };
      const compacted = await runner.compact(request).catch(() => null);
      if (compacted?.how === "summarised") summaries.push(compacted);
      if (compacted?.how === "pruned") prunes += 1;
      const text =
        shape === "talk"
          ? `turn ${turn}: ${"here is what happened with my pickles this week. ".repeat(80)}`
          : turn % BIG_EVERY === 0
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
  // Every request, the save and summary calls too, as the fake counted and cached them.
  const usage = fake.requests.map((request) => request.usage).filter(Boolean);
  const totalInput = usage.reduce(
    (sum, u) => sum + u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens,
    0,
  );
  const totalRead = usage.reduce((sum, u) => sum + u.cache_read_input_tokens, 0);
  const mean = (values) =>
    Math.round(values.reduce((a, b) => a + b, 0) / Math.max(1, values.length));
  const k = (tokens) => `${(tokens / 1000).toFixed(1)}k`;
  const row = [
    shape,
    String(keep),
    String(fake.requests.length),
    `${largest.toLocaleString("en-US")} (limit ${WINDOW.toLocaleString("en-US")})`,
    String(fake.refused.length),
    String(failed),
    String(prunes),
    String(summaries.length),
    String(saves),
    `${k(mean(summaries.map((s) => s.before)))} → ${k(mean(summaries.map((s) => s.after)))}`,
    totalInput.toLocaleString("en-US"),
    `${((100 * totalRead) / Math.max(1, totalInput)).toFixed(1)}%`,
  ];
  const perRequest = perTurn.map((turn) => turn.input / Math.max(1, turn.calls));
  return { perTurn, perRequest, row };

  /**
   * The fake model: reads big.txt when asked, answers briefly, saves one fact when asked
   * to save to memory, summarises when told to.
   */
  function answer(request) {
    if (JSON.stringify(request.body.system).includes("You compress a conversation")) {
      return {
        text: `Notes so far: ${"the user is learning about pickling and reads big.txt now and then. ".repeat(20)}`,
      };
    }
    if (JSON.stringify(request.body.system).includes("is about to be summarised")) {
      saves += 1;
      const text = `Learning about pickling, part ${saves}.`;
      return { toolUses: [{ name: "memory", input: { action: "add", about: "agent", text } }] };
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
