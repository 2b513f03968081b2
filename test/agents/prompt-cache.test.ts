/**
 * The prompt cache over a conversation: runTurn with SQLite history, the real SDK and the
 * fake API, whose cache follows the API's rules (test/fakes/anthropic-cache.ts). The fake's
 * clock stands still unless a test moves it, so nothing here depends on timing.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { runTurn } from "../../src/agents/loop.js";
import { createAnthropicProvider } from "../../src/agents/providers/anthropic.js";
import { createToolbox } from "../../src/agents/tools/index.js";
import type { HistoryStore } from "../../src/ports/index.js";
import { openDatabase } from "../../src/storage/sqlite/database.js";
import { SqliteHistoryStore } from "../../src/storage/sqlite/history.js";
import {
  type FakeAnthropic,
  type FakeMessagesBody,
  type FakeReply,
  promptTokens,
  type RecordedRequest,
  startFakeAnthropic,
} from "../fakes/anthropic.js";
import { promptBlocks } from "../fakes/anthropic-cache.js";
import { TestClock } from "../helpers/clock.js";
import { makeWorkspace, type TempWorkspace } from "../helpers/workspace.js";

/** About 1 300 tokens with the tool: past the 1 024 a prefix needs to be cached. */
const SYSTEM = `You are a test. ${"Answer in one short paragraph. ".repeat(160)}`;
/** Parallel reads in every fourth turn: 24 blocks, past the API's 20-block lookback. */
const PARALLEL_READS = 12;

let ws: TempWorkspace;
let model: FakeAnthropic;
let history: HistoryStore;
let now = 0;

beforeEach(async () => {
  ws = makeWorkspace({ "notes.md": "pickles\n" });
  now = Date.parse("2026-11-25T08:00:00Z");
  model = await startFakeAnthropic({ defaultReply: answer, now: () => now });
  history = new SqliteHistoryStore({
    db: openDatabase(`${ws.dir}/history/picklebot.db`),
    clock: new TestClock(),
    ownsDatabase: true,
  });
});

afterEach(async () => {
  await history.close();
  await model.close();
  ws.remove();
});

/** Reads notes.md (12 times at once when asked to read "all") before answering. */
function answer(request: RecordedRequest): FakeReply {
  const last = request.body.messages.at(-1)?.content;
  const blocks = Array.isArray(last) ? last : [];
  if (blocks.some((block) => block.type === "tool_result")) return { text: "Pickles, noted." };
  const text = blocks.map((block) => String(block.text ?? "")).join(" ");
  if (!text.includes("read")) return { text: "Happy to help with pickles." };
  const count = text.includes("read all") ? PARALLEL_READS : 1;
  return {
    toolUses: Array.from({ length: count }, () => ({ name: "read", input: { path: "notes.md" } })),
  };
}

async function chat(turns: number): Promise<void> {
  const sessionId = (await history.createSession({ key: "console:cache", agentId: "pickle" })).id;
  const provider = createAnthropicProvider({ apiKey: "k", baseURL: model.url, maxRetries: 0 });
  for (let turn = 1; turn <= turns; turn++) {
    now += 60_000;
    const text =
      turn % 4 === 0 ? `turn ${turn}: read all` : turn % 2 ? `turn ${turn}: read` : `turn ${turn}`;
    await history.append(sessionId, { role: "user", content: [{ type: "text", text }] });
    const signal = new AbortController().signal;
    await runTurn({
      sessionId,
      history,
      provider,
      system: SYSTEM,
      currentTime: new Date(now).toISOString(),
      model: "claude-sonnet-4-6",
      maxTokens: 256,
      contextWindow: 200_000,
      tools: createToolbox(["read"]),
      toolContext: { workspace: ws.dir, signal, agentId: "pickle", sessionKey: "console:cache" },
      maxMessages: 200,
    });
  }
}

/** Tokens of a request's prompt up to and including its last breakpoint. */
function cachedPrefixTokens(body: FakeMessagesBody): number {
  const blocks = promptBlocks(body);
  const end = blocks.findLastIndex((block) => block.breakpoint !== null) + 1;
  return Math.ceil(blocks.slice(0, end).reduce((sum, block) => sum + block.text.length, 0) / 4);
}

describe("prompt cache over a conversation", () => {
  it("each call reads all the previous call wrote, even 24 blocks later", async () => {
    await chat(20);
    const requests = model.requests;
    expect(requests.length).toBeGreaterThan(30);
    for (const [index, request] of requests.entries()) {
      const previous = requests[index - 1];
      const read = request.usage?.cache_read_input_tokens;
      expect(read).toBe(previous ? cachedPrefixTokens(previous.body) : 0);
    }
  });

  it("reads more than 90% of a 20-turn chat's input from the cache", async () => {
    await chat(20);
    let read = 0;
    let prompt = 0;
    for (const request of model.requests) {
      read += request.usage?.cache_read_input_tokens ?? 0;
      prompt += promptTokens(request.body);
    }
    // What no placement can read: the first call's prompt, and in every later call what
    // is new since the previous one (a message or tool results, the reply before it, the
    // time note). Here that is under 10%, so a share under 90% means a prefix was lost.
    const share = read / prompt;
    expect(share).toBeGreaterThan(0.9);
  });

  it("reads the tools and system prompt an hour later, with the 1-h TTL", async () => {
    await chat(1);
    now += 58 * 60_000; // and chat() adds a minute: 59 min after the last call
    await chat(1);
    const fresh = model.requests.find(
      (request, index) => index > 0 && request.body.messages.length === 1,
    );
    const system = promptBlocks(fresh?.body as FakeMessagesBody).findIndex((block) =>
      block.text.startsWith("system:"),
    );
    expect(fresh?.usage?.cache_read_input_tokens).toBe(
      Math.ceil(
        promptBlocks(fresh?.body as FakeMessagesBody)
          .slice(0, system + 1)
          .reduce((sum, block) => sum + block.text.length, 0) / 4,
      ),
    );
  });
});
