/**
 * The AgentWorker in-process on SQLite storage in a temp workspace: which failures are
 * retried and which fail the job at once. No model call is made by these jobs.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AgentRunner } from "../../src/agents/runner.js";
import { systemClock } from "../../src/base/clock.js";
import { silentLogger } from "../../src/base/log.js";
import { loadConfig } from "../../src/config/index.js";
import { FrontendRegistry } from "../../src/frontends/registry.js";
import { type ModelProvider, RESUME_MARKER, type Storage } from "../../src/ports/index.js";
import { AgentWorker } from "../../src/server/agent-worker.js";
import { ServerMetrics } from "../../src/server/metrics.js";
import { openSqliteStorage } from "../../src/storage/sqlite/index.js";
import { waitUntil } from "../helpers/server.js";
import { makeWorkspace, type TempWorkspace } from "../helpers/workspace.js";

const unusedProvider: ModelProvider = {
  complete: () => Promise.reject(new Error("no model call expected")),
};

let workspace: TempWorkspace;
let storage: Storage;

beforeEach(() => {
  workspace = makeWorkspace();
  storage = openSqliteStorage(loadConfig(workspace.dir, {}), systemClock);
});

afterEach(async () => {
  await storage.close();
  workspace.remove();
});

function agentWorker(overrides: { concurrency?: number; jobTimeoutMs?: number } = {}) {
  const config = loadConfig(workspace.dir, {});
  const runner = new AgentRunner({
    workspace: workspace.dir,
    config,
    agents: new Map(),
    history: storage.history,
    provider: unusedProvider,
    clock: systemClock,
  });
  return new AgentWorker({
    workerId: "test-worker",
    queue: storage.queue,
    history: storage.history,
    checkpoint: storage.checkpoint,
    runner,
    frontends: new FrontendRegistry(),
    concurrency: 1,
    jobTimeoutMs: 30_000,
    clock: systemClock,
    logger: silentLogger(),
    metrics: new ServerMetrics(),
    pollMs: 20,
    ...overrides,
  });
}

describe("AgentWorker: permanent failures", () => {
  it("fails a job whose session has no message to answer at once, without retries", async () => {
    const session = await storage.history.createSession({ key: "console:test", agentId: "pickle" });
    const job = await storage.queue.enqueue({
      agentId: "pickle",
      sessionKey: "console:test",
      sessionId: session.id,
      message: RESUME_MARKER,
      mode: "job",
      replyTo: { kind: "silent" },
      maxAttempts: 5,
    });
    const stop = new AbortController();
    const running = agentWorker().run(stop.signal);

    await waitUntil(
      async () => (await storage.queue.get(job.id))?.state === "failed",
      "the job failed",
    );
    stop.abort();
    await running;

    const failed = await storage.queue.get(job.id);
    expect(failed).toMatchObject({ state: "failed", attempts: 1 });
    expect(failed?.lastError).toContain("has no message to answer");
  });
});

describe("AgentWorker: options", () => {
  it.each([
    ["concurrency", { concurrency: 0 }],
    ["concurrency", { concurrency: Number.NaN }],
    ["jobTimeoutMs", { jobTimeoutMs: -1 }],
  ])("rejects a nonsense %s", (name, overrides) => {
    expect(() => agentWorker(overrides)).toThrow(name);
  });
});
