/**
 * Distributed mode as a user runs it: three `picklebot server` processes (from dist/), each
 * on its own workspace, sharing one PostgreSQL database and the fake model. Processes are
 * SIGKILLed and their connections terminated for real; the tests read the database.
 */

import { setTimeout as sleep } from "node:timers/promises";
import type pg from "pg";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { Job, NewJob } from "../../src/ports/index.js";
import type { PostgresJobQueue } from "../../src/storage/postgres/queue.js";
import { type FakeAnthropic, lastUserText, startFakeAnthropic } from "../fakes/anthropic.js";
import { isAlive, runCli } from "../helpers/cli.js";
import {
  admin,
  type ClusterDatabase,
  clusterYaml,
  currentLeader,
  openClusterDatabase,
  postgresSkipReason,
  type TestDatabase,
} from "../helpers/postgres.js";
import { killAllServers, type ServerProcess, startServer } from "../helpers/server.js";
import { waitFor } from "../helpers/wait.js";
import { fakeModelConfig, makeWorkspace, type TempWorkspace } from "../helpers/workspace.js";

const skipReason = await postgresSkipReason();

const CODER_AGENT = `---
name: Coder
description: Writes code
tools: [read]
---
You write code.
`;

describe.skipIf(skipReason !== null)("picklebot server ×3 on one PostgreSQL database", () => {
  let database: TestDatabase;
  let pool: pg.Pool;
  let producer: PostgresJobQueue;
  let fake: FakeAnthropic;
  const workspaces: TempWorkspace[] = [];

  let cluster: ClusterDatabase | undefined;

  beforeAll(async () => {
    cluster = await openClusterDatabase("cluster");
    ({ database, pool, producer } = cluster);
  });

  afterAll(() => cluster?.close());

  beforeEach(async () => {
    await pool.query(
      "TRUNCATE jobs, sessions, messages, cron_state, instances, leases RESTART IDENTITY",
    );
    fake = await startFakeAnthropic({
      defaultReply: (request) => ({ text: `re: ${lastUserText(request)}` }),
    });
  });

  afterEach(async () => {
    await killAllServers();
    await fake.close();
    for (const workspace of workspaces.splice(0)) workspace.remove();
  });

  /** Starts one server process named `id`, with extra agents and files in its workspace. */
  async function startInstance(
    id: string,
    options: { agents?: string[]; files?: Record<string, string> } = {},
  ): Promise<ServerProcess> {
    const config = fakeModelConfig(fake.url, clusterYaml(database.url));
    const files: Record<string, string> = { "picklebot.yaml": config, ...options.files };
    for (const agent of options.agents ?? []) files[`agents/${agent}/AGENT.md`] = CODER_AGENT;
    const workspace = makeWorkspace(files);
    workspaces.push(workspace);
    return startServer(workspace.dir, { env: { PICKLEBOT_INSTANCE_ID: id } });
  }

  function job(sessionKey: string, message: string, overrides: Partial<NewJob> = {}): NewJob {
    return {
      agentId: "pickle",
      sessionKey,
      message,
      mode: "chat",
      replyTo: { kind: "silent" },
      ...overrides,
    };
  }

  async function jobRow(id: string): Promise<Job> {
    return (await producer.get(id)) as Job;
  }

  const leader = () => currentLeader(pool);
  const leaderLease = async () => {
    const { rows } = await pool.query<{ holder: string; acquired_at: Date; expires_at: Date }>(
      "SELECT holder, acquired_at, expires_at FROM leases WHERE name = 'leader'",
    );
    return rows[0] as { holder: string; acquired_at: Date; expires_at: Date };
  };

  async function allDone(total: number, timeoutMs: number): Promise<void> {
    await waitFor(
      async () => (await producer.counts()).done === total,
      `${total} jobs done`,
      timeoutMs,
    );
  }

  /**
   * "job done" log lines of every process, by job id, once at least `total` were written:
   * a process logs the outcome just after committing it, so the database may be ahead.
   */
  async function doneLines(
    servers: ServerProcess[],
    total: number,
  ): Promise<Map<string, string[]>> {
    const collect = () => {
      const byJob = new Map<string, string[]>();
      for (const server of servers) {
        for (const line of server.linesMatching((entry) => entry.outcome === "done")) {
          const id = String(line.job);
          byJob.set(id, [...(byJob.get(id) ?? []), String(server.pid)]);
        }
      }
      return byJob;
    };
    const written = () => [...collect().values()].reduce((sum, pids) => sum + pids.length, 0);
    await waitFor(() => written() >= total, `${total} "job done" lines`);
    return collect();
  }

  /** The user messages of a session key's current session, oldest first. */
  async function userMessages(sessionKey: string): Promise<string[]> {
    const { rows } = await pool.query<{ content: string }>(
      `SELECT m.content FROM messages m JOIN sessions s ON s.id = m.session_id
       WHERE s.key = $1 AND m.role = 'user' ORDER BY m.seq`,
      [sessionKey],
    );
    return rows.map((row) => (JSON.parse(row.content) as { text: string }[])[0]?.text ?? "");
  }

  it("runs 500 jobs of 50 sessions exactly once, keeping each session's order", async () => {
    const servers = [
      await startInstance("node-a"),
      await startInstance("node-b"),
      await startInstance("node-c"),
    ];
    const jobs: Job[] = [];
    for (let index = 0; index < 500; index += 1) {
      jobs.push(await producer.enqueue(job(`console:s${index % 50}`, `m${index}`)));
    }
    await allDone(500, 120_000);

    const done = await doneLines(servers, 500);
    expect(done.size).toBe(500);
    expect([...done.values()].every((pids) => pids.length === 1)).toBe(true);
    const stored = await producer.list({ limit: 1000 });
    expect(stored.every((entry) => entry.state === "done" && entry.attempts === 1)).toBe(true);
    for (let session = 0; session < 50; session += 1) {
      const expected = Array.from({ length: 10 }, (_, turn) => `m${session + turn * 50}`);
      expect(await userMessages(`console:s${session}`)).toEqual(expected);
    }
    const asked = fake.requests.map((request) => lastUserText(request));
    expect(new Set(asked).size).toBe(500);
    expect(asked).toHaveLength(500);
  });

  it("rescues the jobs of a non-leader killed mid-job and completes them elsewhere", async () => {
    const first = await startInstance("node-a");
    await waitFor(async () => (await leader()) === "node-a", "node-a leads");
    const others = [
      await startInstance("node-b", { agents: ["coder"] }),
      await startInstance("node-c", { agents: ["coder"] }),
    ];
    let release: () => void = () => undefined;
    const resume = new Promise<void>((resolve) => {
      release = resolve;
    });
    // The first model call stalls mid-stream; the retry gets the default (echo) reply.
    fake.script({ text: "first attempt never finishes", chunks: 3, pauseAfterChunks: 1, resume });
    const slow = await producer.enqueue(job("console:slow", "slow work", { agentId: "coder" }));
    await waitFor(() => fake.requests.length >= 1, "the model call of the first attempt");
    const owner = (await jobRow(slow.id)).lockedBy;
    const victim = others.find((server) => workspaceOwner(server) === owner) as ServerProcess;
    expect(victim).toBeDefined();
    await victim.kill();
    release();

    const survivor = others.find((server) => server !== victim) as ServerProcess;
    await waitFor(async () => (await jobRow(slow.id)).state === "done", "the job done", 20_000);
    const finished = await jobRow(slow.id);
    expect(finished.attempts).toBe(2);
    expect(finished.errors[0]?.message).toMatch(/interrupted/);
    // The outcome is logged just after its commit, so the line may trail the database.
    const doneHere = () =>
      survivor.linesMatching((line) => line.job === slow.id && line.outcome === "done");
    await waitFor(() => doneHere().length > 0, "the survivor logs the job done");
    expect(doneHere()).toHaveLength(1);
    await first.waitForLog(
      "removed instances whose heartbeat expired; requeued their running jobs",
    );
    const { rows } = await pool.query<{ id: string }>("SELECT id FROM instances ORDER BY id");
    expect(rows.map((row) => row.id)).toEqual([
      "node-a",
      survivor === others[0] ? "node-b" : "node-c",
    ]);
    expect(await userMessages("console:slow")).toEqual(["slow work"]);
  });

  /** The instance id a server process was started with. */
  function workspaceOwner(server: ServerProcess): string | undefined {
    const started = server.logs.find((line) => line.msg === "picklebot server started");
    return typeof started?.instance === "string" ? started.instance : undefined;
  }

  it("never lets a process claim jobs of an agent it does not have", async () => {
    const plain = [await startInstance("plain-1"), await startInstance("plain-2")];
    const coderJobs: Job[] = [];
    const pickleJobs: Job[] = [];
    for (let index = 0; index < 10; index += 1) {
      coderJobs.push(
        await producer.enqueue(job(`console:c${index}`, `code ${index}`, { agentId: "coder" })),
      );
      pickleJobs.push(await producer.enqueue(job(`console:p${index}`, `chat ${index}`)));
    }
    await allDone(10, 30_000);
    for (const coderJob of coderJobs) {
      expect(await jobRow(coderJob.id)).toMatchObject({ state: "queued", attempts: 0 });
    }

    const coder = await startInstance("coder-1", { agents: ["coder"] });
    await allDone(20, 30_000);
    const done = await doneLines([...plain, coder], 20);
    for (const coderJob of coderJobs) expect(done.get(coderJob.id)).toEqual([String(coder.pid)]);
    const status = JSON.parse(
      (await runCli(["status", "--json", "--workspace", workspaces[0]?.dir ?? ""])).stdout,
    );
    const agentsOf = Object.fromEntries(
      status.cluster.instances.map((row: { id: string; agents: string[] }) => [row.id, row.agents]),
    );
    expect(agentsOf).toEqual({
      "coder-1": ["coder", "pickle"],
      "plain-1": ["pickle"],
      "plain-2": ["pickle"],
    });
  });

  it("refuses a second live process with the same instance id, saying how to fix it", async () => {
    await startInstance("twin");
    const workspace = makeWorkspace({
      "picklebot.yaml": fakeModelConfig(
        fake.url,
        `queue:\n  backend: postgres\n  url: ${database.url}\nhistory:\n  backend: postgres\n`,
      ),
    });
    workspaces.push(workspace);
    const second = await runCli(["server", "--workspace", workspace.dir], {
      env: { PICKLEBOT_INSTANCE_ID: "twin" },
    });
    expect(second.code).toBe(1);
    expect(second.stderr).toContain('instance id "twin" is in use by pid');
    expect(second.stderr).toContain("PICKLEBOT_INSTANCE_ID");
  });

  it("finishes its running job on SIGTERM before it deregisters", async () => {
    const server = await startInstance("leaving");
    let release: () => void = () => undefined;
    const resume = new Promise<void>((resolve) => {
      release = resolve;
    });
    fake.script({ text: "done at last", chunks: 3, pauseAfterChunks: 1, resume });
    const running = await producer.enqueue(job("console:bye", "one more thing"));
    await waitFor(() => fake.requests.length >= 1, "the model call");
    server.signal("SIGTERM");
    await server.waitForLog((line) => String(line.msg).startsWith("shutting down"));
    const { rows } = await pool.query("SELECT id FROM instances");
    expect(rows.map((row) => row.id)).toEqual(["leaving"]);
    release();
    expect(await server.exited).toEqual({ code: 0, signal: null });
    expect(await jobRow(running.id)).toMatchObject({ state: "done", attempts: 1 });
    expect((await pool.query("SELECT id FROM instances")).rows).toEqual([]);
    expect(await leader()).toBeNull();
  });

  it("elects a new leader within the lease TTL when the leader is killed; crons fire once per occurrence", async () => {
    const cron = { "crons/tick.yaml": 'schedule: "* * * * *"\nprompt: tick\ncatch_up: true\n' };
    const servers = [
      await startInstance("node-a", { files: cron }),
      await startInstance("node-b", { files: cron }),
      await startInstance("node-c", { files: cron }),
    ];
    const cronJobs = async () =>
      (await producer.list({ limit: 100 })).filter((entry) =>
        entry.sessionKey.startsWith("cron:tick:"),
      );
    await waitFor(
      async () => (await cronJobs()).some((entry) => entry.state === "done"),
      "a tick",
      75_000,
    );
    const oldLeader = await leader();
    const victim = servers.find((server) => workspaceOwner(server) === oldLeader) as ServerProcess;
    await victim.kill();
    const lastLease = await leaderLease();

    await waitFor(async () => ![null, oldLeader].includes(await leader()), "a new leader", 60_000);
    // Never two leaders: the new lease begins once the dead leader's last one has run out.
    expect(lastLease.holder).toBe(oldLeader);
    expect((await leaderLease()).acquired_at.getTime()).toBeGreaterThanOrEqual(
      lastLease.expires_at.getTime(),
    );

    await waitFor(
      async () => (await cronJobs()).filter((entry) => entry.state === "done").length >= 2,
      "a tick under the new leader",
      75_000,
    );
    const ticks = await cronJobs();
    const occurrences = ticks.map((entry) => entry.sessionKey).sort();
    expect(new Set(occurrences).size).toBe(occurrences.length);
    const minutes = occurrences.map((key) => Date.parse(key.slice("cron:tick:".length)));
    for (let index = 1; index < minutes.length; index += 1) {
      expect((minutes[index] as number) - (minutes[index - 1] as number)).toBe(60_000);
    }
    expect(fake.requests.filter((request) => lastUserText(request) === "tick")).toHaveLength(
      ticks.filter((entry) => entry.attempts > 0).length,
    );
  }, 180_000);

  it("reconnects after its connections are terminated mid-run, losing no job", async () => {
    const servers = [
      await startInstance("node-a"),
      await startInstance("node-b"),
      await startInstance("node-c"),
    ];
    const total = 200;
    for (let index = 0; index < total; index += 1) {
      await producer.enqueue(job(`console:s${index % 20}`, `m${index}`));
      if (index % 50 === 25) await terminatePicklebotConnections();
    }
    await waitFor(async () => (await producer.counts()).done >= 100, "half the jobs", 60_000);
    expect(await terminatePicklebotConnections()).toBeGreaterThan(0);
    await allDone(total, 90_000);

    expect((await producer.counts()).failed).toBe(0);
    for (let session = 0; session < 20; session += 1) {
      const expected = Array.from({ length: 10 }, (_, turn) => `m${session + turn * 20}`);
      expect(await userMessages(`console:s${session}`)).toEqual(expected);
    }
    const late = await producer.enqueue(job("console:late", "after the storm"));
    await waitFor(async () => (await jobRow(late.id)).state === "done", "a later job", 20_000);
    for (const server of servers) {
      const health = await (await fetch(`${server.httpUrl}/healthz`)).json();
      expect(health).toMatchObject({ healthy: true });
    }
  }, 180_000);

  it("lives through a database that is down for seconds: no process exits, work resumes", async () => {
    const servers = [await startInstance("node-a"), await startInstance("node-b")];
    const first = await producer.enqueue(job("console:before", "before the outage"));
    await waitFor(async () => (await jobRow(first.id)).state === "done", "a first job", 20_000);
    // As a restart looks from outside: connections dropped, new ones refused, for longer
    // than the /metrics queue-depth refresh (5 s) and the retries of a dropped connection.
    const allow = (yes: boolean) =>
      admin((client) => client.query(`ALTER DATABASE ${database.name} ALLOW_CONNECTIONS ${yes}`));
    await allow(false);
    try {
      await terminatePicklebotConnections();
      await sleep(7_000);
    } finally {
      await allow(true);
    }
    for (const server of servers) expect(isAlive(server.pid), server.pid.toString()).toBe(true);
    const later = await producer.enqueue(job("console:after", "after the outage"));
    await waitFor(async () => (await jobRow(later.id)).state === "done", "a later job", 60_000);
    for (const server of servers) expect(isAlive(server.pid)).toBe(true);
  }, 120_000);

  /** Terminates every connection the picklebot processes hold; resolves how many. */
  async function terminatePicklebotConnections(): Promise<number> {
    const { rows } = await pool.query<{ terminated: boolean }>(
      `SELECT pg_terminate_backend(pid) AS terminated FROM pg_stat_activity
       WHERE datname = current_database() AND application_name LIKE 'picklebot%'
         AND pid <> pg_backend_pid()`,
    );
    return rows.filter((row) => row.terminated).length;
  }
});
