/**
 * The agent loop (runTurn) on its own: SQLite history on a temp file, the real Anthropic SDK
 * against the fake API, the real toolbox. The resume states are shown through the
 * AgentWorker in test/server/agent-worker.test.ts.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { runTurn, type TurnOptions, type TurnResult } from "../../src/agents/loop.js";
import { createAnthropicProvider } from "../../src/agents/providers/anthropic.js";
import { createToolbox, TOOL_RETRIES } from "../../src/agents/tools/index.js";
import {
  JobEnded,
  ParkRequest,
  ToolCancel,
  ToolDiscard,
  ToolRetry,
} from "../../src/base/errors.js";
import type { HistoryStore, Tool, ToolResultBlock, ToolUseBlock } from "../../src/ports/index.js";
import { openDatabase } from "../../src/storage/sqlite/database.js";
import { SqliteHistoryStore } from "../../src/storage/sqlite/history.js";
import { type FakeAnthropic, startFakeAnthropic } from "../fakes/anthropic.js";
import { TestClock } from "../helpers/clock.js";
import { makeWorkspace, type TempWorkspace } from "../helpers/workspace.js";

let ws: TempWorkspace;
let model: FakeAnthropic;
let history: HistoryStore;
let sessionId: string;
/** The history's clock, and the tools' retries wait on it (without waiting). */
let clock: TestClock;
/** A web server some tests start (web_fetch's retry and snooze). */
let web: Server | null = null;

beforeEach(async () => {
  ws = makeWorkspace({ "notes.md": "pickles\n" });
  model = await startFakeAnthropic();
  clock = new TestClock();
  history = new SqliteHistoryStore({
    db: openDatabase(`${ws.dir}/history/picklebot.db`),
    clock,
    ownsDatabase: true,
  });
  sessionId = (await history.createSession({ key: "console:loop", agentId: "pickle" })).id;
  await history.append(sessionId, { role: "user", content: [{ type: "text", text: "go" }] });
});

afterEach(async () => {
  await history.close();
  await model.close();
  await new Promise((resolve) => (web ? web.close(resolve) : resolve(undefined)));
  web = null;
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
    sleep: clock.sleep,
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

/** A turn of a queue job (it can park) with these tools. */
function jobTurn(tools: Tool[], overrides: Partial<TurnOptions> = {}): Promise<TurnResult> {
  return turn({
    tools,
    toolContext: {
      workspace: ws.dir,
      signal: new AbortController().signal,
      agentId: "pickle",
      sessionKey: "cron:t:1",
      jobId: "job-1",
    },
    ...overrides,
  });
}

/** A tool named `act` whose runs do what `run` says, counted. */
function actTool(run: (count: number) => Promise<string>): Tool & { runs: number } {
  const tool = {
    runs: 0,
    spec: { name: "act", description: "acts", input_schema: { type: "object" as const } },
    run: async () => {
      tool.runs += 1;
      return run(tool.runs);
    },
  };
  return tool;
}

const callAct = { toolUses: [{ id: "toolu_act", name: "act", input: {} }] };

/** Serves `answers` in order (status and headers), then 200 "fine". */
async function serve(...answers: Array<{ status: number; headers?: Record<string, string> }>) {
  let hits = 0;
  web = createServer((_request, response) => {
    const answer = answers[hits++] ?? { status: 200 };
    response.writeHead(answer.status, { "content-type": "text/plain", ...answer.headers });
    response.end(answer.status === 200 ? "fine" : "busy");
  });
  await new Promise<void>((resolve) => web?.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(web.address() as AddressInfo).port}/page`;
  return { url, hits: () => hits };
}

describe("tool outcomes", () => {
  it("retry: runs the call again after a backoff without asking the model", async () => {
    const tool = actTool(async (n) => {
      if (n < 3) throw new ToolRetry("flaky");
      return "worked";
    });
    model.script(callAct, { text: "done" });
    await jobTurn([tool]);
    expect(tool.runs).toBe(3);
    expect(await lastResultsBeforeReply()).toEqual([
      { type: "tool_result", tool_use_id: "toolu_act", content: "worked" },
    ]);
    expect(model.requests).toHaveLength(2);
    // 1 s, then 2 s, each ±20%.
    expect(clock.slept).toHaveLength(2);
    expect(clock.slept[0]).toBeGreaterThanOrEqual(800);
    expect(clock.slept[0]).toBeLessThanOrEqual(1200);
    expect(clock.slept[1]).toBeGreaterThanOrEqual(1600);
    expect(clock.slept[1]).toBeLessThanOrEqual(2400);
  });

  it(`retry: after ${TOOL_RETRIES} retries the failure goes to the model as an error`, async () => {
    const tool = actTool(async () => {
      throw new ToolRetry("still down", { retryAfterMs: 1 });
    });
    model.script(callAct, { text: "gave up" });
    await jobTurn([tool]);
    expect(tool.runs).toBe(TOOL_RETRIES + 1);
    const [result] = await lastResultsBeforeReply();
    expect(result).toMatchObject({ is_error: true, content: "still down (tried 4 times)" });
    expect(clock.slept).toHaveLength(TOOL_RETRIES);
  });

  it("cancel: the job ends as failed with the tool's message, and no further model call", async () => {
    const tool = actTool(async () => {
      throw new ToolCancel("the report is already sent; nothing to do");
    });
    model.script(callAct);
    const ended = await jobTurn([tool]).catch((thrown: unknown) => thrown);
    expect(ended).toBeInstanceOf(JobEnded);
    expect((ended as JobEnded).ending).toMatchObject({ outcome: "cancel" });
    expect(model.requests).toHaveLength(1);
    // Resumed after a crash: it ends the same way, without running the tool or the model.
    const again = await jobTurn([tool]).catch((thrown: unknown) => thrown);
    expect((again as JobEnded).message).toBe("the report is already sent; nothing to do");
    expect(tool.runs).toBe(1);
    expect(model.requests).toHaveLength(1);
  });

  it("discard: the job ends quietly, stored so a resume discards it too", async () => {
    const tool = actTool(async () => {
      throw new ToolDiscard("nothing new since yesterday");
    });
    model.script(callAct);
    const ended = (await jobTurn([tool]).catch((thrown: unknown) => thrown)) as JobEnded;
    expect(ended.ending).toEqual({
      type: "job_end",
      outcome: "discard",
      message: "nothing new since yesterday",
    });
    const again = (await jobTurn([tool]).catch((thrown: unknown) => thrown)) as JobEnded;
    expect(again.ending.outcome).toBe("discard");
    expect(model.requests).toHaveLength(1);
    // The stored results stay a valid request for the conversation's next message.
    await history.append(sessionId, { role: "user", content: [{ type: "text", text: "next" }] });
    model.script({ text: "ok" });
    await jobTurn([tool]);
    expect(model.refused).toEqual([]);
  });

  it("web_fetch: a 503 is retried in place and the page comes back", async () => {
    const site = await serve({ status: 503, headers: { "retry-after": "0" } });
    model.script(
      { toolUses: [{ id: "toolu_web", name: "web_fetch", input: { url: site.url } }] },
      { text: "read it" },
    );
    await jobTurn(createToolbox(["web_fetch"], { fetchPrivateAddresses: true }));
    expect(site.hits()).toBe(2);
    expect(clock.slept).toHaveLength(1);
    expect(await lastResultsBeforeReply()).toEqual([
      {
        type: "tool_result",
        tool_use_id: "toolu_web",
        content: expect.stringMatching(
          /<untrusted-content source="[^"]+">\nfine\n<\/untrusted-content>$/,
        ),
      },
    ]);
  });

  it("web_fetch: a 429 asking for an hour snoozes the job until then, keeping the other calls' results", async () => {
    const site = await serve({ status: 429, headers: { "retry-after": "3600" } });
    model.script({
      toolUses: [
        { id: "toolu_web", name: "web_fetch", input: { url: site.url } },
        { id: "toolu_act", name: "act", input: {} },
      ],
    });
    const tool = actTool(async () => "acted");
    const before = Date.now();
    const parked = (await jobTurn([
      ...createToolbox(["web_fetch"], { fetchPrivateAddresses: true }),
      tool,
    ]).catch((thrown: unknown) => thrown)) as ParkRequest;
    expect(parked).toBeInstanceOf(ParkRequest);
    expect(parked.wait).toEqual({ kind: "time" });
    expect(parked.until).toBeGreaterThanOrEqual(before + 3_600_000);
    expect(parked.finished).toEqual([
      { type: "tool_result", tool_use_id: "toolu_act", content: "acted" },
    ]);
    // Resumed at the time: only the snoozed call runs again.
    model.script({ text: "read it" });
    await jobTurn([...createToolbox(["web_fetch"], { fetchPrivateAddresses: true }), tool], {
      finishedResults: parked.finished,
    });
    expect(tool.runs).toBe(1);
    expect(site.hits()).toBe(2);
  });

  it("snooze without a job to park (picklebot chat) tells the model when to try again", async () => {
    const site = await serve({ status: 429, headers: { "retry-after": "120" } });
    model.script(
      { toolUses: [{ id: "toolu_web", name: "web_fetch", input: { url: site.url } }] },
      { text: "later" },
    );
    await jobTurn(createToolbox(["web_fetch"], { fetchPrivateAddresses: true }), {
      toolContext: {
        workspace: ws.dir,
        signal: new AbortController().signal,
        agentId: "pickle",
        sessionKey: "console:t",
      },
    });
    const [result] = await lastResultsBeforeReply();
    expect(result?.is_error).toBe(true);
    expect(result?.content).toMatch(/answered HTTP 429.*try again after \d{4}-/);
  });
});

/** The results of the turn's tool calls (the message before the final reply). */
async function lastResultsBeforeReply(): Promise<ToolResultBlock[]> {
  const stored = await history.loadContext(sessionId, 100);
  const withResults = stored.filter((message) =>
    message.content.some((block) => block.type === "tool_result"),
  );
  return (withResults.at(-1)?.content ?? []).filter(
    (block): block is ToolResultBlock => block.type === "tool_result",
  );
}
