#!/usr/bin/env node
// What conversations cost, and how much of their input the prompt cache reads: a 50-turn
// chat with tool calls, 24 hourly runs of a cron (a fresh session each), and a chat that
// compacts (history.max_messages 16); every third chat turn reads a file, every tenth reads
// it in 12 parallel calls. Each is run in-process through the real agent runner
// (loop, context builder, compaction, the Anthropic provider on the SDK) against the fake
// Anthropic API, whose prompt cache follows the API's rules (test/fakes/anthropic-cache.ts:
// breakpoints, 20-block lookback, 1 024-token minimum, 5-min and 1-h TTLs). Time is a test
// clock: the chat's user writes every 2 minutes with a 30-minute break after turn 25, each
// model call takes 6 s, the cron fires on the hour.
//
// Each shape runs twice: `before`, the placement of commit ae6135d (system, last tool and
// last message, all 5 min: the provider's request is rewritten to it by the fetch it is
// given), and `after`, the current one. USD at list price (Sonnet 4.x, per MTok): input
// $3, 5-min cache write $3.75, 1-h cache write $6, cache read $0.30, output $15.
//
// Memory (issue 28): the 50-turn chat of the owner (`console:`) with the shipped agent
// runs again with memory off and on. On, the agent's notes and the owner's memory start
// nearly full (2,100 and 1,300 characters: in the system prompt, with the memory tools),
// and every seventh turn asks the model to remember something, which it saves with the
// `memory` tool (the session's snapshot, and so its prompt, stays as it was).
//
// Heartbeats (issue 31): a day of a heartbeat every 30 minutes in an idle chat (48 ticks, a
// fresh session each, the heartbeat's own prompt), each finding nothing: the model answers
// NOTHING_TO_REPORT, so each tick is one model call. Both agents, the current placement.
//
// Usage: npm run build && node bench/cost.js
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadAgents } from "../dist/agents/definition.js";
import { createAnthropicProvider } from "../dist/agents/providers/anthropic.js";
import { AgentRunner } from "../dist/agents/runner.js";
import { NOTHING_TO_REPORT } from "../dist/base/heartbeat.js";
import { loadConfig } from "../dist/config/index.js";
import { heartbeatPrompt } from "../dist/cron/chat-heartbeats.js";
import { openStorage } from "../dist/storage/index.js";
import { loadFakes } from "./lib/server.js";
import { markdownTable } from "./lib/stats.js";

/** USD per million tokens, Sonnet 4.x list price. */
export const PRICES = { input: 3, write5m: 3.75, write1h: 6, read: 0.3, output: 15 };

const MODEL_CALL_MS = 6_000;
const MINUTE = 60_000;

/** The shapes, each a function of the context that runs it. */
const SHAPES = {
  "50-turn chat, tool calls": (ctx) => chat(ctx, { turns: 50 }),
  "24 hourly cron runs (fresh session each)": (ctx) => cron(ctx, { runs: 24 }),
  "40-turn chat that compacts (max_messages 16)": (ctx) => chat(ctx, { turns: 40, compacts: true }),
};

/** The shipped agent (agents/pickle), and the same with 10 kB of house rules added. */
const SHIPPED_AGENT = readFileSync(new URL("../agents/pickle/AGENT.md", import.meta.url), "utf8");
const AGENTS = {
  "shipped pickle": SHIPPED_AGENT,
  "pickle + 10 kB rules": `${SHIPPED_AGENT}\nHouse rules:\n\n${houseRules(10_000)}`,
};

/** Runs every shape before and after, for both agents; resolves the rows and a markdown table. */
export async function runCostBench() {
  const { anthropic } = await loadFakes(["anthropic"]);
  const rows = [];
  for (const [agent, prompt] of Object.entries(AGENTS)) {
    for (const [shape, run] of Object.entries(SHAPES)) {
      for (const placement of ["before", "after"]) {
        const totals = await measure(anthropic, { placement, run, shape, prompt });
        rows.push({ agent, shape, placement, ...totals });
      }
    }
  }
  const table = markdownTable(
    [
      "agent",
      "shape",
      "placement",
      "requests",
      "input (uncached)",
      "cache write 5m / 1h",
      "cache read",
      "output",
      "cache-read share",
      "USD",
    ],
    rows.map((row) => [
      row.agent,
      row.shape,
      row.placement,
      String(row.requests),
      row.input.toLocaleString("en-US"),
      `${row.write5m.toLocaleString("en-US")} / ${row.write1h.toLocaleString("en-US")}`,
      row.read.toLocaleString("en-US"),
      row.output.toLocaleString("en-US"),
      `${(100 * row.share).toFixed(1)}%`,
      `$${row.usd.toFixed(4)}`,
    ]),
  );
  return { rows, markdown: table };
}

/**
 * The 50-turn chat of the owner with memory off and on (see the header); resolves the rows
 * and a markdown table.
 */
export async function runMemoryCostBench() {
  const { anthropic } = await loadFakes(["anthropic"]);
  const rows = [];
  for (const memory of [false, true]) {
    const run = (ctx) => chat(ctx, { turns: 50, key: "console:bench", remember: true });
    const totals = await measure(anthropic, {
      placement: "after",
      run,
      shape: "50-turn chat",
      prompt: SHIPPED_AGENT,
      memory,
    });
    rows.push({ memory: memory ? "on, nearly full" : "off", ...totals });
  }
  const markdown = markdownTable(
    [
      "memory",
      "requests",
      "input (uncached)",
      "cache write 5m / 1h",
      "cache read",
      "cache-read share",
      "USD",
    ],
    rows.map((row) => [
      row.memory,
      String(row.requests),
      row.input.toLocaleString("en-US"),
      `${row.write5m.toLocaleString("en-US")} / ${row.write1h.toLocaleString("en-US")}`,
      row.read.toLocaleString("en-US"),
      `${(100 * row.share).toFixed(1)}%`,
      `$${row.usd.toFixed(4)}`,
    ]),
  );
  return { rows, markdown };
}

/** Text of about `chars` characters made of short facts, one entry each (memory's format). */
function facts(chars, about) {
  const entries = [];
  for (let n = 1; entries.join("\n§\n").length < chars - 60; n++) {
    entries.push(`${about} fact ${n}: prefers dill, keeps jars in the cellar.`);
  }
  return entries.join("\n§\n");
}

/** Fills the agent's notes and the owner's memory nearly to their default budgets. */
async function fillMemory(storage) {
  for (const [scope, text] of [
    ["agent", facts(2_100, "Workspace")],
    ["owner", facts(1_300, "Owner")],
  ]) {
    await storage.memory.update({ agentId: "pickle", scope }, { by: "bench", at: 0 }, () => ({
      text,
      change: { action: "edit", entry: null, previous: null },
    }));
  }
}

/** One shape with one placement, in a fresh workspace: the summed usage the fake answered. */
async function measure(anthropic, { placement, run, shape, prompt, memory = false }) {
  const clock = { now: Date.parse("2026-11-25T08:00:00Z") };
  const fake = await anthropic.startFakeAnthropic({ defaultReply: answer, now: () => clock.now });
  const workspace = mkdtempSync(join(tmpdir(), "picklebot-cost-"));
  const compacts = shape.includes("compacts");
  writeFileSync(
    join(workspace, "picklebot.yaml"),
    `llm:\n  api_key: bench-key\n  base_url: ${fake.url}\n  model: claude-sonnet-4-6\n${
      compacts ? "history:\n  max_messages: 16\n" : ""
    }`,
  );
  writeFileSync(join(workspace, "notes.md"), "Buy dill, vinegar and jars. ".repeat(40));
  mkdirSync(join(workspace, "history"), { recursive: true });
  mkdirSync(join(workspace, "agents/pickle"), { recursive: true });
  writeFileSync(join(workspace, "agents/pickle/AGENT.md"), prompt);
  const config = loadConfig(workspace, {});
  const storage = await openStorage(config, { now: () => clock.now });
  // Each model call takes MODEL_CALL_MS of the test clock.
  const timed = async (url, init) => {
    clock.now += MODEL_CALL_MS;
    return fetch(url, placement === "before" ? withOldPlacement(init) : init);
  };
  const runner = new AgentRunner({
    workspace,
    config,
    agents: loadAgents(workspace).agents,
    history: storage.history,
    provider: createAnthropicProvider({
      apiKey: "bench-key",
      baseURL: fake.url,
      maxRetries: 0,
      fetch: timed,
    }),
    clock: { now: () => clock.now },
    postMessage: () => undefined,
    ...(memory ? { memoryStores: storage } : {}),
  });
  if (memory) await fillMemory(storage);
  try {
    await run({ runner, history: storage.history, clock });
  } finally {
    await storage.close();
    await fake.close();
    rmSync(workspace, { recursive: true, force: true });
  }
  return totalsOf(fake.requests);
}

/**
 * A chat: one user message per turn, every third asking for a file; with `remember`, every
 * seventh asks to remember something instead.
 */
async function chat(
  { runner, history, clock },
  { turns, compacts = false, key = "bench:chat", remember = false },
) {
  const session = await history.createSession({ key, agentId: "pickle" });
  const request = { agentId: "pickle", sessionId: session.id, sessionKey: key };
  for (let turn = 1; turn <= turns; turn++) {
    clock.now += turn === 26 ? 30 * MINUTE : 2 * MINUTE;
    const signal = new AbortController().signal;
    if (compacts) await runner.compact({ ...request, signal });
    const text =
      remember && turn % 7 === 0
        ? `turn ${turn}: remember that batch ${turn} used ${turn} grams of dill`
        : turn % 10 === 0
          ? `turn ${turn}: please read notes.md in full, all sections at once`
          : turn % 3 === 0
            ? `turn ${turn}: please read notes.md and tell me what to buy`
            : `turn ${turn}: ${"what else should I know about pickling cucumbers? ".repeat(3)}`;
    await history.append(session.id, { role: "user", content: [{ type: "text", text }] });
    await runner.run({ ...request, signal });
  }
}

/** A cron: every hour a fresh session with the same prompt, which reads a file and answers. */
async function cron({ runner, history, clock }, { runs }) {
  for (let run = 1; run <= runs; run++) {
    clock.now = Date.parse("2026-11-25T08:00:00Z") + run * 60 * MINUTE + 1_000;
    const key = `cron:hourly:${run}`;
    const session = await history.createSession({ key, agentId: "pickle" });
    const text = "Hourly check: please read notes.md and tell me what to buy.";
    await history.append(session.id, { role: "user", content: [{ type: "text", text }] });
    const signal = new AbortController().signal;
    await runner.run({ agentId: "pickle", sessionId: session.id, sessionKey: key, signal });
  }
}

/**
 * A day of a heartbeat every 30 minutes that finds nothing, for both agents; resolves the
 * rows (one call per tick) and a markdown table with the cost per tick and per day.
 */
export async function runHeartbeatCostBench() {
  const { anthropic } = await loadFakes(["anthropic"]);
  const rows = [];
  for (const [agent, prompt] of Object.entries(AGENTS)) {
    const run = (ctx) => heartbeatDay(ctx, { everyMinutes: 30 });
    const shape = "heartbeat every 30 min";
    const totals = await measure(anthropic, { placement: "after", run, shape, prompt });
    rows.push({ agent, ...totals });
  }
  const markdown = markdownTable(
    [
      "agent",
      "ticks (calls)",
      "input (uncached)",
      "cache write 5m / 1h",
      "cache read",
      "output",
      "USD per tick",
      "USD per day",
      "USD per 30 days",
    ],
    rows.map((row) => [
      row.agent,
      String(row.requests),
      row.input.toLocaleString("en-US"),
      `${row.write5m.toLocaleString("en-US")} / ${row.write1h.toLocaleString("en-US")}`,
      row.read.toLocaleString("en-US"),
      row.output.toLocaleString("en-US"),
      `$${(row.usd / row.requests).toFixed(5)}`,
      `$${row.usd.toFixed(4)}`,
      `$${(row.usd * 30).toFixed(2)}`,
    ]),
  );
  return { rows, markdown };
}

/** A day of heartbeat ticks: each a fresh session with the heartbeat's prompt, as the worker sends it. */
async function heartbeatDay({ runner, history, clock }, { everyMinutes }) {
  const start = Date.parse("2026-11-25T00:00:00Z");
  const heartbeat = {
    id: "benchhb",
    agentId: "pickle",
    chat: { kind: "telegram", chatId: "42" },
    cron: `*/${everyMinutes} * * * *`,
    check: "Look at notes.md only if something is due today; is there anything I must do now?",
    timezone: "UTC",
  };
  for (
    let tick = start + everyMinutes * MINUTE;
    tick <= start + 24 * 60 * MINUTE;
    tick += everyMinutes * MINUTE
  ) {
    clock.now = tick;
    const key = `heartbeat:${heartbeat.id}:${new Date(tick).toISOString()}`;
    const session = await history.createSession({ key, agentId: "pickle" });
    const text = heartbeatPrompt(heartbeat, tick);
    await history.append(session.id, { role: "user", content: [{ type: "text", text }] });
    const signal = new AbortController().signal;
    await runner.run({ agentId: "pickle", sessionId: session.id, sessionKey: key, signal });
  }
}

/** About `chars` characters of numbered rules, as a workspace's agent prompt grows them. */
function houseRules(chars) {
  const rules = [];
  for (let n = 1; rules.join("\n").length < chars; n++) {
    rules.push(
      `${n}. Rule ${n}: keep answers short, cite the file you read, and ask before writing.`,
    );
  }
  return rules.join("\n");
}

/** The fake model: reads notes.md when asked (once per turn), summarises when told to. */
function answer(request) {
  if (JSON.stringify(request.body.system ?? "").includes("You compress a conversation")) {
    return { text: `Notes so far: ${"the user pickles cucumbers and buys dill. ".repeat(30)}` };
  }
  const last = request.body.messages.at(-1);
  const blocks = Array.isArray(last?.content) ? last.content : [];
  const answered = blocks.some((block) => block.type === "tool_result");
  const said = blocks.map((block) => String(block.text ?? "")).join(" ");
  // A heartbeat tick that finds nothing.
  if (said.startsWith("[Heartbeat ")) return { text: NOTHING_TO_REPORT };
  const remember = /remember that (.*)/.exec(said)?.[1];
  const hasMemory = (request.body.tools ?? []).some((tool) => tool.name === "memory");
  if (remember && !answered) {
    if (!hasMemory) return { text: "I will keep that in mind for this conversation." };
    const input = { action: "add", about: "person", text: `The owner said: ${remember}.` };
    return { toolUses: [{ name: "memory", input }] };
  }
  const wantsFile = blocks.some(
    (block) => block.type === "text" && String(block.text).includes("read notes.md"),
  );
  if (!wantsFile || answered) {
    return { text: `Here is what I suggest. ${"Brine, dill, vinegar, patience. ".repeat(12)}` };
  }
  // "all sections at once": 12 parallel reads, 24 blocks, past the API's 20-block lookback.
  const calls = blocks.some((block) => String(block.text).includes("all sections")) ? 12 : 1;
  const section = (n) => ({ name: "read", input: { path: "notes.md", offset: n * 90 } });
  return { toolUses: Array.from({ length: calls }, (_, n) => section(n)) };
}

/** A request init rewritten to the placement of ae6135d: no 1-h TTL, no breakpoint before the last message. */
function withOldPlacement(init) {
  const body = JSON.parse(String(init.body));
  const strip = (block) => {
    if (block.cache_control) block.cache_control = { type: "ephemeral" };
  };
  for (const tool of body.tools ?? []) strip(tool);
  for (const part of Array.isArray(body.system) ? body.system : []) strip(part);
  for (const message of body.messages.slice(0, -1)) {
    for (const block of Array.isArray(message.content) ? message.content : []) {
      delete block.cache_control;
    }
  }
  return { ...init, body: JSON.stringify(body) };
}

/** The usage the fake answered, summed, with the cache-read share and the USD. */
export function totalsOf(requests) {
  const totals = {
    requests: requests.length,
    input: 0,
    write5m: 0,
    write1h: 0,
    read: 0,
    output: 0,
  };
  for (const { usage } of requests) {
    if (!usage) continue;
    totals.input += usage.input_tokens;
    totals.read += usage.cache_read_input_tokens;
    totals.output += usage.output_tokens;
    totals.write5m += usage.cache_creation?.ephemeral_5m_input_tokens ?? 0;
    totals.write1h += usage.cache_creation?.ephemeral_1h_input_tokens ?? 0;
  }
  const prompt = totals.input + totals.read + totals.write5m + totals.write1h;
  const usd =
    (totals.input * PRICES.input +
      totals.write5m * PRICES.write5m +
      totals.write1h * PRICES.write1h +
      totals.read * PRICES.read +
      totals.output * PRICES.output) /
    1e6;
  return { ...totals, share: totals.read / Math.max(1, prompt), usd };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { markdown } = await runCostBench();
  console.log(markdown);
  console.log(`\nMemory off and on, 50-turn chat of the owner (after placement):\n`);
  console.log((await runMemoryCostBench()).markdown);
  console.log(`\nA heartbeat every 30 minutes that finds nothing, for a day:\n`);
  console.log((await runHeartbeatCostBench()).markdown);
}
