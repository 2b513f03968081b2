/**
 * Tool outcomes beyond success and error, through the agent loop: retry (in place, with
 * backoff), snooze (the job parks until a time), cancel and discard (the job ends, no
 * further model call), each stored so a resumed turn ends the same way. `web_fetch`
 * against a local HTTP server shows the built-in uses: a 503 retried, a long 429 snoozed.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createAnthropicProvider } from "../../src/agents/anthropic.js";
import { runTurn, type TurnOptions, type TurnResult } from "../../src/agents/loop.js";
import { createToolbox, TOOL_RETRIES } from "../../src/agents/tools/index.js";
import {
  JobEnded,
  ParkRequest,
  ToolCancel,
  ToolDiscard,
  ToolRetry,
} from "../../src/base/errors.js";
import type { HistoryStore, Tool, ToolResultBlock } from "../../src/ports/index.js";
import { openDatabase } from "../../src/storage/sqlite/database.js";
import { SqliteHistoryStore } from "../../src/storage/sqlite/history.js";
import { type FakeAnthropic, startFakeAnthropic } from "../fakes/anthropic.js";
import { TestClock } from "../helpers/clock.js";
import { makeWorkspace, type TempWorkspace } from "../helpers/workspace.js";

let ws: TempWorkspace;
let model: FakeAnthropic;
let history: HistoryStore;
let sessionId: string;
let web: Server | null = null;

beforeEach(async () => {
  ws = makeWorkspace({});
  model = await startFakeAnthropic();
  history = new SqliteHistoryStore({
    db: openDatabase(`${ws.dir}/history/picklebot.db`),
    clock: new TestClock(),
    ownsDatabase: true,
  });
  sessionId = (await history.createSession({ key: "cron:t:1", agentId: "pickle" })).id;
  await history.append(sessionId, { role: "user", content: [{ type: "text", text: "go" }] });
});

afterEach(async () => {
  await history.close();
  await model.close();
  await new Promise((resolve) => (web ? web.close(resolve) : resolve(undefined)));
  web = null;
  ws.remove();
});

function turn(tools: Tool[], overrides: Partial<TurnOptions> = {}): Promise<TurnResult> {
  return runTurn({
    sessionId,
    history,
    provider: createAnthropicProvider({ apiKey: "test-key", baseURL: model.url, maxRetries: 0 }),
    system: "You are a test.",
    model: "claude-test",
    maxTokens: 256,
    contextWindow: 200_000,
    tools,
    toolContext: {
      workspace: ws.dir,
      signal: new AbortController().signal,
      agentId: "pickle",
      sessionKey: "cron:t:1",
      jobId: "job-1",
    },
    maxMessages: 100,
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
    await turn([tool]);
    expect(tool.runs).toBe(3);
    expect(await lastResultsBeforeReply()).toEqual([
      { type: "tool_result", tool_use_id: "toolu_act", content: "worked" },
    ]);
    expect(model.requests).toHaveLength(2);
  }, 20_000);

  it(`retry: after ${TOOL_RETRIES} retries the failure goes to the model as an error`, async () => {
    const tool = actTool(async () => {
      throw new ToolRetry("still down", { retryAfterMs: 1 });
    });
    model.script(callAct, { text: "gave up" });
    await turn([tool]);
    expect(tool.runs).toBe(TOOL_RETRIES + 1);
    const [result] = await lastResultsBeforeReply();
    expect(result).toMatchObject({ is_error: true, content: "still down (tried 4 times)" });
  }, 30_000);

  it("cancel: the job ends as failed with the tool's message, and no further model call", async () => {
    const tool = actTool(async () => {
      throw new ToolCancel("the report is already sent; nothing to do");
    });
    model.script(callAct);
    const ended = await turn([tool]).catch((thrown: unknown) => thrown);
    expect(ended).toBeInstanceOf(JobEnded);
    expect((ended as JobEnded).ending).toMatchObject({ outcome: "cancel" });
    expect(model.requests).toHaveLength(1);
    // Resumed after a crash: it ends the same way, without running the tool or the model.
    const again = await turn([tool]).catch((thrown: unknown) => thrown);
    expect((again as JobEnded).message).toBe("the report is already sent; nothing to do");
    expect(tool.runs).toBe(1);
    expect(model.requests).toHaveLength(1);
  });

  it("discard: the job ends quietly, stored so a resume discards it too", async () => {
    const tool = actTool(async () => {
      throw new ToolDiscard("nothing new since yesterday");
    });
    model.script(callAct);
    const ended = (await turn([tool]).catch((thrown: unknown) => thrown)) as JobEnded;
    expect(ended.ending).toEqual({
      type: "job_end",
      outcome: "discard",
      message: "nothing new since yesterday",
    });
    const again = (await turn([tool]).catch((thrown: unknown) => thrown)) as JobEnded;
    expect(again.ending.outcome).toBe("discard");
    expect(model.requests).toHaveLength(1);
    // The stored results stay a valid request for the conversation's next message.
    await history.append(sessionId, { role: "user", content: [{ type: "text", text: "next" }] });
    model.script({ text: "ok" });
    await turn([tool]);
    expect(model.refused).toEqual([]);
  });

  it("web_fetch: a 503 is retried in place and the page comes back", async () => {
    const site = await serve({ status: 503, headers: { "retry-after": "0" } });
    model.script(
      { toolUses: [{ id: "toolu_web", name: "web_fetch", input: { url: site.url } }] },
      { text: "read it" },
    );
    await turn(createToolbox(["web_fetch"]));
    expect(site.hits()).toBe(2);
    expect(await lastResultsBeforeReply()).toEqual([
      { type: "tool_result", tool_use_id: "toolu_web", content: "fine" },
    ]);
  }, 20_000);

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
    const parked = (await turn([...createToolbox(["web_fetch"]), tool]).catch(
      (thrown: unknown) => thrown,
    )) as ParkRequest;
    expect(parked).toBeInstanceOf(ParkRequest);
    expect(parked.wait).toEqual({ kind: "time" });
    expect(parked.until).toBeGreaterThanOrEqual(before + 3_600_000);
    expect(parked.finished).toEqual([
      { type: "tool_result", tool_use_id: "toolu_act", content: "acted" },
    ]);
    // Resumed at the time: only the snoozed call runs again.
    model.script({ text: "read it" });
    await turn([...createToolbox(["web_fetch"]), tool], { finishedResults: parked.finished });
    expect(tool.runs).toBe(1);
    expect(site.hits()).toBe(2);
  });

  it("snooze without a job to park (picklebot chat) tells the model when to try again", async () => {
    const site = await serve({ status: 429, headers: { "retry-after": "120" } });
    model.script(
      { toolUses: [{ id: "toolu_web", name: "web_fetch", input: { url: site.url } }] },
      { text: "later" },
    );
    await turn(createToolbox(["web_fetch"]), {
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
