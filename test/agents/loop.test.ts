/**
 * The agent loop (runTurn) on its own: SQLite history on a temp file, the real Anthropic SDK
 * against the fake API, the real toolbox. The resume states are shown through the
 * AgentWorker in test/server/agent-worker.test.ts.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createAnthropicProvider } from "../../src/agents/anthropic.js";
import { runTurn, type TurnOptions, type TurnResult } from "../../src/agents/loop.js";
import { createToolbox } from "../../src/agents/tools/index.js";
import type { HistoryStore, ToolUseBlock } from "../../src/ports/index.js";
import { openDatabase } from "../../src/storage/sqlite/database.js";
import { SqliteHistoryStore } from "../../src/storage/sqlite/history.js";
import { type FakeAnthropic, startFakeAnthropic } from "../fakes/anthropic.js";
import { TestClock } from "../helpers/clock.js";
import { makeWorkspace, type TempWorkspace } from "../helpers/workspace.js";

let ws: TempWorkspace;
let model: FakeAnthropic;
let history: HistoryStore;
let sessionId: string;

beforeEach(async () => {
  ws = makeWorkspace({ "notes.md": "pickles\n" });
  model = await startFakeAnthropic();
  history = new SqliteHistoryStore({
    db: openDatabase(`${ws.dir}/history/picklebot.db`),
    clock: new TestClock(),
    ownsDatabase: true,
  });
  sessionId = (await history.createSession({ key: "console:loop", agentId: "pickle" })).id;
  await history.append(sessionId, { role: "user", content: [{ type: "text", text: "go" }] });
});

afterEach(async () => {
  await history.close();
  await model.close();
  ws.remove();
});

function turn(overrides: Partial<TurnOptions> = {}): Promise<TurnResult> {
  const signal = new AbortController().signal;
  return runTurn({
    sessionId,
    history,
    provider: createAnthropicProvider({ apiKey: "test-key", baseURL: model.url, maxRetries: 0 }),
    system: "You are a test.",
    model: "claude-test",
    maxTokens: 256,
    contextWindow: 200_000,
    tools: createToolbox(["read"]),
    toolContext: { workspace: ws.dir, signal, agentId: "pickle", sessionKey: "console:loop" },
    maxMessages: 100,
    ...overrides,
  });
}

const readNotes = { toolUses: [{ name: "read", input: { path: "notes.md" } }] };

describe("runTurn", () => {
  it("reports each step to the watcher and sums the usage of its model calls", async () => {
    const usage = { input_tokens: 10, output_tokens: 5 };
    model.script({ ...readNotes, usage }, { text: "They say pickles.", chunks: 3, usage });
    const seen: string[] = [];
    let streamed = "";
    const result = await turn({
      events: {
        onModelCall: () => seen.push("model"),
        onToolCall: (call: ToolUseBlock) => seen.push(`tool ${call.name}`),
        onText: (delta) => {
          streamed += delta;
        },
      },
    });
    expect(seen).toEqual(["model", "tool read", "model"]);
    expect(streamed).toBe("They say pickles.");
    expect(result).toMatchObject({ text: "They say pickles.", modelCalls: 2 });
    expect(result.usage).toMatchObject({ input: 20, output: 10 });
  });

  it("stops a turn that keeps calling tools after maxModelCalls, with every tool_use answered", async () => {
    await model.close();
    model = await startFakeAnthropic({ defaultReply: readNotes });
    const result = await turn({ maxModelCalls: 3 });
    expect(result.modelCalls).toBe(3);
    expect(model.requests).toHaveLength(3);
    const stored = await history.loadContext(sessionId, 100);
    // go, then three tool calls each followed by its results.
    expect(stored.map((message) => message.role)).toEqual([
      "user",
      "assistant",
      "user",
      "assistant",
      "user",
      "assistant",
      "user",
    ]);
  });

  it("does not call the model once the signal is aborted", async () => {
    const controller = new AbortController();
    controller.abort(new Error("stopped"));
    await expect(
      turn({
        toolContext: {
          workspace: ws.dir,
          signal: controller.signal,
          agentId: "pickle",
          sessionKey: "console:loop",
        },
      }),
    ).rejects.toThrow();
    expect(model.requests).toHaveLength(0);
  });
});
