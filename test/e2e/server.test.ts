/**
 * `picklebot server` as a child process against the fake Anthropic API: jobs enqueued by
 * `picklebot cron run` (another process), their outcomes in the queue, the history and
 * the log, and the server's HTTP endpoints and companion commands.
 */

import type { AddressInfo } from "node:net";
import { createServer } from "node:net";
import type Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Job } from "../../src/ports.js";
import { type FakeAnthropic, lastUserText, startFakeAnthropic } from "../fakes/anthropic.js";
import { runCli } from "../helpers/cli.js";
import {
  freePort,
  killAllServers,
  type LogLine,
  openWorkspaceDb,
  type ServerProcess,
  sessionMessages,
  startServer,
} from "../helpers/server.js";
import { fakeModelConfig, makeWorkspace, type TempWorkspace } from "../helpers/workspace.js";

const PROMPT = "Summarise today's pickle news.";

let fake: FakeAnthropic;
let ws: TempWorkspace;
let db: Database.Database | null = null;

beforeEach(async () => {
  fake = await startFakeAnthropic();
  ws = makeWorkspace({
    "picklebot.yaml": fakeModelConfig(fake.url),
    // Never due on its own: the tests fire it with `cron run`.
    "crons/news.yaml": `schedule: "0 0 1 1 *"\nprompt: ${PROMPT}\nenabled: false\n`,
  });
});

afterEach(async () => {
  await killAllServers();
  db?.close();
  db = null;
  await fake.close();
  ws.remove();
});

/** `picklebot <args> --workspace <ws>`; fails the test on a non-zero exit. */
async function cli(...args: string[]): Promise<string> {
  const result = await runCli([...args, "--workspace", ws.dir]);
  if (result.code !== 0) throw new Error(`picklebot ${args.join(" ")}: ${result.stderr}`);
  return result.stdout;
}

async function cronRun(id = "news"): Promise<Job> {
  return JSON.parse(await cli("cron", "run", id, "--json")) as Job;
}

async function jobFromCli(id: string): Promise<Job> {
  const jobs = JSON.parse(await cli("jobs", "--json")) as Job[];
  const job = jobs.find((candidate) => candidate.id === id);
  if (!job) throw new Error(`picklebot jobs does not list ${id}`);
  return job;
}

/** The server's log line for the end of the job's first attempt. */
async function firstOutcome(server: ServerProcess, job: Job): Promise<LogLine> {
  const [line] = await server.jobOutcomes(job.id);
  if (!line) throw new Error(`no outcome for job ${job.id}`);
  return line;
}

function messagesOf(job: Job) {
  db ??= openWorkspaceDb(ws.dir);
  if (!job.sessionId) throw new Error(`job ${job.id} has no session`);
  return sessionMessages(db, job.sessionId);
}

describe("picklebot server", () => {
  it("runs a job enqueued by `cron run`: one model call with the prompt, done, reply in history", async () => {
    fake.script({ text: "Pickle prices are up 3% today." });
    const server = await startServer(ws.dir);
    const enqueued = await cronRun();
    expect(enqueued.state).toBe("queued");

    const line = await firstOutcome(server, enqueued);
    expect(line).toMatchObject({
      msg: "job done",
      outcome: "done",
      job: enqueued.id,
      session: enqueued.sessionKey,
      agent: "pickle",
      attempts: 1,
      durationMs: expect.any(Number),
    });
    // One outcome line per job.
    expect(server.linesMatching((l) => l.job === enqueued.id && "outcome" in l)).toHaveLength(1);

    expect(fake.requests).toHaveLength(1);
    expect(lastUserText(fake.requests[0] ?? never())).toBe(PROMPT);
    const job = await jobFromCli(enqueued.id);
    expect(job).toMatchObject({ state: "done", attempts: 1, message: ".", lastError: null });
    expect(messagesOf(job)).toEqual([
      { role: "user", text: PROMPT, jobId: job.id },
      { role: "assistant", text: "Pickle prices are up 3% today.", jobId: null },
    ]);

    const metrics = await (await fetch(`${server.httpUrl}/metrics`)).text();
    expect(metrics).toContain('picklebot_jobs_processed_total{outcome="done"} 1');
    expect(metrics).toMatch(/picklebot_llm_tokens_total\{type="output"\} [1-9]/);
  });

  it("retries a job whose model call stays rate-limited, and finishes it on attempt 2", async () => {
    // The SDK retries a 429 twice inside one attempt; three exhaust the attempt.
    const limited = { error: { status: 429, retryAfterS: 0 } };
    fake.script(limited, limited, limited, { text: "Sorry for the wait." });
    const server = await startServer(ws.dir);
    const enqueued = await cronRun();

    const outcomes = await server.jobOutcomes(enqueued.id, 2);
    expect(outcomes).toEqual([
      expect.objectContaining({ outcome: "retry", attempts: 1 }),
      expect.objectContaining({ outcome: "done", attempts: 2 }),
    ]);

    expect(fake.requests).toHaveLength(4);
    const job = await jobFromCli(enqueued.id);
    expect(job).toMatchObject({ state: "done", attempts: 2 });
    expect(job.errors).toHaveLength(1);
    expect(job.errors[0]).toMatchObject({ attempt: 1 });
    expect(job.errors[0]?.message).toContain("status 429");
    // The retry continued the same session: the prompt is in it once.
    expect(messagesOf(job)).toEqual([
      { role: "user", text: PROMPT, jobId: job.id },
      { role: "assistant", text: "Sorry for the wait.", jobId: null },
    ]);
  });

  it("fails a job at once on a 400 and shows it in `jobs --state failed`", async () => {
    const apiMessage = "messages.0.content: text content blocks must be non-empty";
    fake.script({ error: { status: 400, message: apiMessage } }, { text: "never sent" });
    const server = await startServer(ws.dir);
    const enqueued = await cronRun();

    expect(await firstOutcome(server, enqueued)).toMatchObject({ outcome: "failed", attempts: 1 });
    expect(fake.requests).toHaveLength(1);

    const table = await cli("jobs", "--state", "failed");
    const row = table.split("\n").find((text) => text.startsWith(enqueued.id));
    expect(row).toMatch(/ failed +pickle +cron:news:manual:\S+ +1\/5 /);
    expect(row).toContain("The Anthropic API answered with status 400");

    const failed = JSON.parse(await cli("jobs", "--state", "failed", "--json")) as Job[];
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatchObject({ id: enqueued.id, state: "failed", attempts: 1 });
    expect(failed[0]?.lastError).toContain(apiMessage);
    expect(failed[0]?.errors).toHaveLength(1);
  });

  it("refuses a second server on the same workspace", async () => {
    const first = await startServer(ws.dir);
    const second = await runCli(["server", "--workspace", ws.dir], { timeoutMs: 15_000 });
    expect(second.code).toBe(1);
    expect(second.stderr).toMatch(
      /^picklebot: another picklebot server \(pid \d+\) is already running/,
    );
    expect(second.stderr).toContain(`(pid ${first.pid})`);
    expect(second.stderr).not.toContain("    at ");
    // The first server is unharmed and still takes work.
    fake.script({ text: "still here" });
    expect(await firstOutcome(first, await cronRun())).toMatchObject({ outcome: "done" });
  });

  it("refuses to start on an http.port already in use, without taking any job", async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve));
    try {
      const { port } = blocker.address() as AddressInfo;
      ws.write("picklebot.yaml", fakeModelConfig(fake.url).replace("port: 0", `port: ${port}`));
      const waiting = await cronRun();
      const result = await runCli(["server", "--workspace", ws.dir], { timeoutMs: 15_000 });
      expect(result.stderr).toBe(
        `picklebot: http.port ${port} in picklebot.yaml is already in use on 127.0.0.1; choose another port or set http.enabled: false\n`,
      );
      expect(result.code).toBe(1);
      expect(await jobFromCli(waiting.id)).toMatchObject({ state: "queued", attempts: 0 });
      expect(fake.requests).toHaveLength(0);
    } finally {
      await new Promise((resolve) => blocker.close(resolve));
    }
  });

  it("answers /healthz with every worker's state", async () => {
    const server = await startServer(ws.dir);
    const response = await fetch(`${server.httpUrl}/healthz`);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("application/json");
    const report = (await response.json()) as { workers: { name: string }[] };
    expect(report).toMatchObject({
      healthy: true,
      // Alone with its SQLite storage, the server is always the leader.
      leader: true,
      queue: { queued: 0, running: 0, done: 0, failed: 0 },
    });
    const workers = [...report.workers].sort((a, b) => a.name.localeCompare(b.name));
    const running = { state: "running", restarts: 0, lastError: null, since: expect.any(Number) };
    expect(workers).toEqual([
      { name: "agent", ...running },
      { name: "cron", ...running },
      { name: "leader", ...running },
    ]);
  });

  it("lets `picklebot status` see the running server, its workers and the queue", async () => {
    const port = await freePort();
    ws.write("picklebot.yaml", fakeModelConfig(fake.url).replace("port: 0", `port: ${port}`));
    const server = await startServer(ws.dir);
    expect(await firstOutcome(server, await cronRun())).toMatchObject({ outcome: "done" });

    const status = JSON.parse(await cli("status", "--json"));
    expect(status.server).toMatchObject({ running: true, pid: server.pid });
    expect(status.server.health).toMatchObject({ healthy: true });
    expect(status.queue).toEqual({ queued: 0, running: 0, done: 1, failed: 0 });
    expect(status.sessions).toHaveLength(1);

    const text = await cli("status");
    expect(text).toContain(`server     running (pid ${server.pid})`);
    expect(text).toContain("worker   agent: running, 0 restarts");
    expect(text).toContain("queue      0 queued, 0 running, 1 done, 0 failed");
  });
});

function never(): never {
  throw new Error("missing value");
}
