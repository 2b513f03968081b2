/**
 * `picklebot server` as a child process against the fake Anthropic API: jobs enqueued by
 * `picklebot cron run` (another process), their outcomes in the queue, the history and
 * the log, and the server's HTTP endpoints and companion commands.
 */

import { readFileSync, statSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { createServer } from "node:net";
import { join } from "node:path";
import type Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Job } from "../../src/ports/index.js";
import { type FakeAnthropic, lastUserText, startFakeAnthropic } from "../fakes/anthropic.js";
import { runCli, startCli } from "../helpers/cli.js";
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

    const metrics = await (await server.fetch("/metrics")).text();
    expect(metrics).toContain('picklebot_jobs_processed_total{outcome="done"} 1');
    expect(metrics).toMatch(/picklebot_llm_tokens_total\{type="output"\} [1-9]/);
    expect(metrics).toMatch(/picklebot_tokens_total\{agent="pickle",kind="output"\} [1-9]/);
    expect(metrics).toMatch(/picklebot_cost_usd_total\{agent="pickle"\} 0\.\d*[1-9]/);
  });

  it("rides out a model call that stays rate-limited: retried without spending an attempt", async () => {
    // The SDK retries a 429 twice inside one attempt; three exhaust the attempt.
    const limited = { error: { status: 429, retryAfterS: 0 } };
    fake.script(limited, limited, limited, { text: "Sorry for the wait." });
    const server = await startServer(ws.dir);
    const enqueued = await cronRun();

    const outcomes = await server.jobOutcomes(enqueued.id, 2);
    expect(outcomes).toEqual([
      expect.objectContaining({ outcome: "retry", attempts: 1 }),
      expect.objectContaining({ outcome: "done", attempts: 1 }),
    ]);

    expect(fake.requests).toHaveLength(4);
    const job = await jobFromCli(enqueued.id);
    expect(job).toMatchObject({ state: "done", attempts: 1 });
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

  it("names picklebot.yml, or the default, as the source of an http.port in use", async () => {
    const blocker = createServer();
    const inUse = await new Promise<number>((resolve, reject) => {
      blocker.once("error", reject).listen(0, "127.0.0.1", () => {
        resolve((blocker.address() as AddressInfo).port);
      });
    });
    // The default port: held by us, or already held by something else on this host.
    const defaultBlocker = createServer();
    await new Promise<void>((resolve) => {
      defaultBlocker.once("error", () => resolve()).listen(8787, "127.0.0.1", resolve);
    });
    try {
      ws.remove();
      ws = makeWorkspace({ "agents/pickle/AGENT.md": "You are pickle.\n" });
      const noFile = await runCli(["server", "--workspace", ws.dir], {
        timeoutMs: 15_000,
        env: { ANTHROPIC_API_KEY: "test-key" },
      });
      expect(noFile.stderr).toContain(
        "picklebot: the default http.port 8787 is already in use on 127.0.0.1; " +
          "set a free http.port in picklebot.yaml, or http.enabled: false there\n",
      );
      expect(noFile.stderr).not.toContain("8787 in picklebot.yaml");
      expect(noFile.code).toBe(1);

      ws.write("picklebot.yml", fakeModelConfig(fake.url).replace("port: 0", `port: ${inUse}`));
      const yml = await runCli(["server", "--workspace", ws.dir], { timeoutMs: 15_000 });
      expect(yml.stderr).toContain(
        `picklebot: http.port ${inUse} in picklebot.yml is already in use on 127.0.0.1; choose another port or set http.enabled: false\n`,
      );
      expect(yml.code).toBe(1);
    } finally {
      await new Promise((resolve) => blocker.close(resolve));
      if (defaultBlocker.listening) await new Promise((resolve) => defaultBlocker.close(resolve));
    }
  });

  it("keeps a generated dashboard token out of the log and of output that is not a terminal", async () => {
    const server = await startServer(ws.dir);
    const file = join(ws.dir, "history", "http-token");
    const token = readFileSync(file, "utf8").trim();
    expect(token.length).toBeGreaterThanOrEqual(16);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const output = `${server.stderr}${JSON.stringify(server.logs)}${server.otherOutput.join("\n")}`;
    expect(output).not.toContain(token);
    const [notice] = server.linesMatching((line) => line.msg.includes("access token"));
    expect(notice?.msg).toContain(`generated the dashboard's access token and kept it in ${file}`);
    expect(notice?.msg).toContain("run picklebot dashboard in a terminal");
    expect(notice?.msg).toContain(`cat ${file}`);
  });

  it("refuses to start when bindings names an agent the workspace does not have", async () => {
    ws.write(
      "picklebot.yaml",
      fakeModelConfig(fake.url, "bindings:\n  - chat: telegram:42\n    agent: coder\n"),
    );
    const result = await runCli(["server", "--workspace", ws.dir], { timeoutMs: 15_000 });
    expect(result.stderr).toContain(
      'picklebot.yaml: bindings[0].agent: unknown agent "coder" (known: pickle); name one of those or create agents/coder/AGENT.md.',
    );
    expect(result.code).toBe(1);
  });

  it("answers /healthz with every worker's state", async () => {
    const server = await startServer(ws.dir);
    const response = await server.fetch("/healthz");
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("application/json");
    const report = (await response.json()) as { workers: { name: string }[] };
    expect(report).toMatchObject({
      healthy: true,
      // Alone with its SQLite storage, the server is always the leader.
      leader: true,
      queue: { queued: 0, running: 0, waiting: 0, done: 0, failed: 0, stopped: 0 },
    });
    const workers = [...report.workers].sort((a, b) => a.name.localeCompare(b.name));
    const running = { state: "running", restarts: 0, lastError: null, since: expect.any(Number) };
    expect(workers).toEqual([
      { name: "agent", ...running },
      { name: "batch-poller", ...running },
      { name: "chat-heartbeats", ...running },
      { name: "cron", ...running },
      { name: "definitions", ...running },
      { name: "leader", ...running },
      { name: "queue-depth", ...running },
      { name: "retention", ...running },
      { name: "schedules", ...running },
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
    expect(status.queue).toEqual({
      queued: 0,
      running: 0,
      waiting: 0,
      done: 1,
      failed: 0,
      stopped: 0,
    });
    expect(status.sessions).toHaveLength(1);

    const text = await cli("status");
    expect(text).toContain(`server     running (pid ${server.pid})`);
    expect(text).toContain("worker   agent: running, 0 restarts");
    expect(text).toContain("queue      0 queued, 0 running, 0 waiting, 1 done, 0 failed");
    expect(text).toMatch(/\nbash {7}(bwrap \(bubblewrap [\d.]+\), network off|unavailable: )/);
    expect(status.bash).toMatch(/^(bwrap|unavailable)/);
  });
});

describe("picklebot server with a broken AGENT.md (fail closed)", () => {
  it("starts, fails the default agent's cron job with the error, and lists it in /healthz and status", async () => {
    const port = await freePort();
    ws.write("picklebot.yaml", fakeModelConfig(fake.url).replace("port: 0", `port: ${port}`));
    ws.write("agents/pickle/AGENT.md", "---\nname: Narrow\ntools: [read]\n---\nOnly read.\n");
    const server = await startServer(ws.dir);
    const enqueued = await cronRun();
    expect(await firstOutcome(server, enqueued)).toMatchObject({ outcome: "failed" });
    const job = await jobFromCli(enqueued.id);
    expect(job).toMatchObject({ state: "failed", attempts: 1 });
    expect(job.lastError).toMatch(/agent "pickle" is broken .*description: missing/);
    expect(fake.requests).toHaveLength(0);

    const response = await server.fetch("/healthz");
    const health = (await response.json()) as {
      healthy: boolean;
      unhealthy: string[];
      brokenAgents: { id: string; error: string }[];
      bash: string;
    };
    expect(response.status).toBe(503);
    expect(health.healthy).toBe(false);
    expect(health.unhealthy).toEqual([
      expect.stringMatching(/^the default agent "pickle" is broken: .*description: missing/),
    ]);
    expect(health.bash).toMatch(/^bwrap \(bubblewrap [\d.]+\), network off/);
    expect(health.brokenAgents).toEqual([
      { id: "pickle", error: expect.stringContaining("description: missing") },
    ]);
    const status = JSON.parse(await cli("status", "--json"));
    expect(status.brokenAgents).toEqual(health.brokenAgents);
    expect(status.server.health.brokenAgents).toEqual(health.brokenAgents);
    const text = await cli("status");
    expect(text).toMatch(
      /agent {6}pickle: BROKEN, its jobs fail until fixed: .*description: missing/,
    );
  });
});

describe("picklebot server, operated from the command line", () => {
  it("sums itself up at start-up and warns that no API key is set; jobs then fail saying so", async () => {
    ws.write("picklebot.yaml", `llm:\n  base_url: ${fake.url}\nhttp:\n  port: 0\n`);
    ws.write("agents/scribe/AGENT.md", "---\nname: Scribe\ndescription: Writes\n---\nYou write.\n");
    ws.write("crons/daily.yaml", `schedule: "0 8 * * *"\nprompt: Good morning.\n`);
    const server = await startServer(ws.dir);

    const summary = await server.waitForLog("picklebot server started");
    expect(summary).toMatchObject({
      workspace: ws.dir,
      queue: "sqlite",
      history: `sqlite (${join(ws.dir, "history")})`,
      agents: "pickle, scribe",
      buses: "none (enable telegram or discord or slack in picklebot.yaml)",
    });
    expect(summary.crons).toMatch(
      /^daily \(scheduled, next \d{4}-\d\d-\d\d 08:00:00 [\w/+-]+\); news \(disabled, next -\)$/,
    );
    expect(summary.http).toMatch(
      /^http:\/\/127\.0\.0\.1:\d+ \(dashboard \/, \/healthz, \/metrics, \/events\)$/,
    );
    const warning = await server.waitForLog((line) => line.msg.startsWith("no model API key"));
    expect(warning.level).toBe(40);
    expect(warning.msg).toContain("ANTHROPIC_API_KEY");

    const enqueued = await cronRun();
    expect(await firstOutcome(server, enqueued)).toMatchObject({ outcome: "failed", attempts: 1 });
    expect((await jobFromCli(enqueued.id)).lastError).toContain("No Anthropic API key");
    expect(fake.requests).toHaveLength(0);
  });

  it("warns at start-up about a model without a price, and refuses its calls under a budget", async () => {
    ws.write(
      "agents/local/AGENT.md",
      "---\nname: Local\ndescription: Runs on a local model\nmodel: mystery-model\nbudget: {daily_usd: 1}\n---\nYou help.\n",
    );
    ws.write(
      "crons/local.yaml",
      'schedule: "0 0 1 1 *"\nagent: local\nprompt: hi\nenabled: false\n',
    );
    const server = await startServer(ws.dir);

    const warning = await server.waitForLog((line) => line.model === "mystery-model");
    expect(warning).toMatchObject({ level: 40, agents: ["local"] });
    expect(warning.msg).toBe(
      'model "mystery-model" (agent local) has no price: its calls count as $0; a budget ' +
        'applies to local, so its model calls are refused; add "mystery-model: {input: …, ' +
        'output: …, cache_read: …, cache_write: …}" under llm.prices in picklebot.yaml (USD per ' +
        "million tokens; 0 for a free model)",
    );
    // The default agent's model (llm.model) has a price: one warning only.
    expect(server.linesMatching((line) => typeof line.model === "string")).toHaveLength(1);

    const enqueued = await cronRun("local");
    expect(await firstOutcome(server, enqueued)).toMatchObject({ outcome: "failed", attempts: 1 });
    expect((await jobFromCli(enqueued.id)).lastError).toMatch(
      /^agent "local" calls model "mystery-model", which has no price, so its budget cannot hold it/,
    );
    expect(fake.requests).toHaveLength(0);
  });

  it("requeues a failed job with `jobs retry --json`, which the running server then finishes", async () => {
    fake.script({ error: { status: 400 } }, { text: "Second time lucky." });
    const server = await startServer(ws.dir);
    const enqueued = await cronRun();
    expect(await firstOutcome(server, enqueued)).toMatchObject({ outcome: "failed" });

    const retried = JSON.parse(await cli("jobs", "retry", enqueued.id, "--json")) as Job;
    expect(retried).toMatchObject({ id: enqueued.id, state: "queued", attempts: 0 });
    const outcomes = await server.jobOutcomes(enqueued.id, 2);
    expect(outcomes[1]).toMatchObject({ outcome: "done", attempts: 1 });
    const job = await jobFromCli(enqueued.id);
    expect(job.state).toBe("done");
    // It resumed from history: the prompt is there once.
    expect(messagesOf(job)).toEqual([
      { role: "user", text: PROMPT, jobId: job.id },
      { role: "assistant", text: "Second time lucky.", jobId: null },
    ]);

    const again = await runCli(["jobs", "retry", enqueued.id, "--workspace", ws.dir]);
    expect(again.code).toBe(1);
    expect(again.stderr).toBe(
      `picklebot: job ${enqueued.id} is done; only failed jobs, and running jobs no server runs, can be retried\n`,
    );
  });

  it("restarts the agent worker after the database stayed locked, and /metrics counts it", async () => {
    const server = await startServer(ws.dir);
    // Another process holds the write lock past the busy timeout: the worker's claim fails.
    const locker = openWorkspaceDb(ws.dir);
    locker.exec("BEGIN IMMEDIATE");
    try {
      const crash = await server.waitForLog("worker crashed", 20_000);
      expect(crash).toMatchObject({ worker: "agent", error: "database is locked" });
    } finally {
      locker.exec("COMMIT");
      locker.close();
    }

    fake.script({ text: "Back on my feet." });
    const enqueued = await cronRun();
    expect(await firstOutcome(server, enqueued)).toMatchObject({ outcome: "done" });
    const metrics = await (await server.fetch("/metrics")).text();
    expect(metrics).toContain('picklebot_worker_restarts_total{worker="agent"} 1');
    const health = (await (await server.fetch("/healthz")).json()) as {
      workers: { name: string }[];
    };
    expect(health.workers.find((worker) => worker.name === "agent")).toMatchObject({
      state: "running",
      restarts: 1,
      lastError: "database is locked",
    });
  });

  it("answers --help on every command, and each takes --json", async () => {
    const commands = [
      ["server"],
      ["cron", "list"],
      ["cron", "run"],
      ["jobs"],
      ["jobs", "show"],
      ["jobs", "retry"],
      ["status"],
      ["sessions"],
      ["sessions", "compact"],
    ];
    for (const command of commands) {
      const result = await runCli([...command, "--help"]);
      expect(result.code, command.join(" ")).toBe(0);
      expect(result.stdout).toContain(`Usage: picklebot ${command.join(" ")} [options]`);
      expect(result.stdout, command.join(" ")).toContain("--json");
    }
  });

  it("logs JSON lines on a terminal with --json", async () => {
    const args = ["server", "--json", "--workspace", ws.dir];
    const terminal = startCli(args, { terminal: true });
    let screen = "";
    terminal.stdout?.on("data", (chunk: Buffer) => (screen += chunk));
    const started = await new Promise<LogLine>((resolve, reject) => {
      terminal.on("close", () => reject(new Error(`the server stopped:\n${screen}`)));
      terminal.stdout?.on("data", () => {
        const line = screen.split(/\r?\n/).find((text) => text.includes("server started"));
        if (line) resolve(JSON.parse(line) as LogLine);
      });
    });
    expect(started).toMatchObject({ msg: "picklebot server started", level: 30 });
    process.kill(Number(started.pid), "SIGKILL");
    await new Promise((resolve) => terminal.on("close", resolve));
  });
});

function never(): never {
  throw new Error("missing value");
}
