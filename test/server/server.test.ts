/**
 * PicklebotServer in-process, in SQLite mode: the composition of storage, workers, leader
 * and HTTP endpoint, against the fake Anthropic API (no subprocess).
 */
import { hostname } from "node:os";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createAnthropicProvider } from "../../src/agents/providers/anthropic.js";
import { systemClock } from "../../src/base/clock.js";
import { UserError } from "../../src/base/errors.js";
import type { Config } from "../../src/config/index.js";
import type { Job } from "../../src/ports/index.js";
import { PicklebotServer } from "../../src/server/server.js";
import { openStorage } from "../../src/storage/index.js";
import {
  type FakeAnthropic,
  lastUserText,
  requestAt,
  startFakeAnthropic,
} from "../fakes/anthropic.js";
import { testConfig } from "../helpers/config.js";
import { recordingLogger } from "../helpers/log.js";
import { waitFor } from "../helpers/wait.js";
import { makeWorkspace, type TempWorkspace } from "../helpers/workspace.js";

/** The HTTP endpoint's access token (`http.token`). */
const HTTP_TOKEN = "server-test-token-0123456789";

let ws: TempWorkspace;
let model: FakeAnthropic;
let config: Config;
const servers: PicklebotServer[] = [];

beforeEach(async () => {
  ws = makeWorkspace();
  model = await startFakeAnthropic();
  config = testConfig(ws.dir, {
    llm: { api_key: "test-key", base_url: model.url },
    http: { enabled: true, host: "127.0.0.1", port: 0, token: HTTP_TOKEN },
  });
});

afterEach(async () => {
  for (const server of servers.splice(0)) await server.stop();
  await model.close();
  ws.remove();
});

async function startServer(): Promise<PicklebotServer> {
  const server = await PicklebotServer.start({
    workspace: ws.dir,
    config,
    agents: new Map(),
    provider: createAnthropicProvider({ apiKey: "test-key", baseURL: model.url, maxRetries: 0 }),
    logger: recordingLogger().logger,
  });
  servers.push(server);
  return server;
}

async function stopServer(server: PicklebotServer): Promise<void> {
  servers.splice(servers.indexOf(server), 1);
  await server.stop();
}

function consoleJob(message: string) {
  return {
    agentId: "pickle",
    sessionKey: "console:main",
    message,
    mode: "chat" as const,
    replyTo: { kind: "console" as const },
  };
}

async function waitUntilDone(server: PicklebotServer, id: string): Promise<Job> {
  return waitFor(async () => {
    const job = await server.queue.get(id);
    return job?.state === "done" ? job : null;
  }, `job ${id} done`);
}

describe("PicklebotServer (SQLite mode)", () => {
  it("runs a job from its queue, leads alone, and reports every worker on /healthz", async () => {
    const server = await startServer();
    expect(server.isLeader).toBe(true);
    const job = await server.queue.enqueue(consoleJob("hello"));
    await waitUntilDone(server, job.id);
    expect(lastUserText(requestAt(model, 0))).toBe("hello");

    const response = await fetch(`http://${server.httpAddress}/healthz`, {
      headers: { authorization: `Bearer ${HTTP_TOKEN}` },
    });
    const health = (await response.json()) as {
      healthy: boolean;
      leader: boolean;
      workers: Array<{ name: string }>;
    };
    expect(response.status).toBe(200);
    expect(health).toMatchObject({ healthy: true, leader: true });
    expect(health.workers.map((worker) => worker.name).sort()).toEqual([
      "agent",
      "batch-poller",
      "chat-heartbeats",
      "cron",
      "leader",
      "queue-depth",
      "retention",
      "schedules",
    ]);
  });

  it("refuses a second server on the same workspace, and starts again after a stop", async () => {
    const first = await startServer();
    await expect(startServer()).rejects.toBeInstanceOf(UserError);
    await stopServer(first);
    const second = await startServer();
    expect(second.isLeader).toBe(true);
  });

  it("requeues at start-up the jobs its host left running, and finishes them", async () => {
    const storage = await openStorage(config, systemClock);
    const left = await storage.queue.enqueue(consoleJob("interrupted"));
    await storage.queue.claim(hostname(), 1);
    await storage.close();

    const server = await startServer();
    const done = await waitUntilDone(server, left.id);
    expect(done.attempts).toBe(2);
  });
});
