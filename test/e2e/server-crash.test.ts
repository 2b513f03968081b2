/**
 * What a user trusts the server for: a job survives the process being killed at the worst
 * moments, and a graceful stop lets running work finish. The server runs as a child process
 * against the fake Anthropic API; the tests read its database and its log.
 */
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import type Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Job, NewJob } from "../../src/ports/index.js";
import { type FakeAnthropic, messageText, startFakeAnthropic } from "../fakes/anthropic.js";
import { runCli } from "../helpers/cli.js";
import {
  enqueueJob,
  killAllServers,
  type LogLine,
  openWorkspaceDb,
  type ServerProcess,
  sessionMessages,
  startServer,
} from "../helpers/server.js";
import { waitFor } from "../helpers/wait.js";
import { fakeModelConfig, makeWorkspace, type TempWorkspace } from "../helpers/workspace.js";

const PROMPT = "What is on my calendar today?";
const RECOVERED = "requeued jobs left running by the previous server";

let fake: FakeAnthropic;
let ws: TempWorkspace;
let db: Database.Database | null = null;

beforeEach(async () => {
  fake = await startFakeAnthropic();
  ws = makeWorkspace({
    "picklebot.yaml": fakeModelConfig(fake.url),
    "crons/calendar.yaml": `schedule: "0 0 1 1 *"\nprompt: ${PROMPT}\nenabled: false\n`,
  });
});

afterEach(async () => {
  await killAllServers();
  db?.close();
  db = null;
  await fake.close();
  ws.remove();
});

/** A chat message typed at a terminal: its reply goes to the server log (`console`). */
function consoleJob(message: string): NewJob {
  return {
    agentId: "pickle",
    sessionKey: "console:crash-test",
    message,
    mode: "chat",
    replyTo: { kind: "console" },
  };
}

function database(): Database.Database {
  db ??= openWorkspaceDb(ws.dir);
  return db;
}

/** The job as `picklebot jobs --json` lists it. */
async function jobShow(id: string): Promise<Job> {
  const result = await runCli(["jobs", "--json", "--workspace", ws.dir]);
  if (result.code !== 0) throw new Error(`picklebot jobs: ${result.stderr}`);
  const job = (JSON.parse(result.stdout) as Job[]).find((candidate) => candidate.id === id);
  if (!job) throw new Error(`picklebot jobs does not list ${id}`);
  return job;
}

/** The log line for the end of the job's only attempt on this server. */
async function outcomeOn(server: ServerProcess, job: Job): Promise<LogLine> {
  const [line] = await server.jobOutcomes(job.id);
  if (!line) throw new Error(`no outcome for job ${job.id}`);
  return line;
}

/** The log line of a reply delivered to the console frontend. */
function deliveredReply(server: ServerProcess): Promise<LogLine> {
  return server.waitForLog((line) => line.msg === "reply" && line.frontend === "console");
}

function messagesOf(job: Job) {
  if (!job.sessionId) throw new Error(`job ${job.id} has no session`);
  return sessionMessages(database(), job.sessionId);
}

describe("picklebot server, killed and stopped", () => {
  it("finishes a job after a SIGKILL during its model call, with the message stored once", async () => {
    fake.script({ hang: true }, { text: "Lunch with Ada at noon." });
    const first = await startServer(ws.dir);
    const enqueued = await enqueueJob(ws.dir, consoleJob(PROMPT));
    await waitFor(() => fake.requests.length === 1, "the model is called");

    // The checkpoint was committed before the call: the message is history, the job is ".".
    const inFlight = await jobShow(enqueued.id);
    expect(inFlight).toMatchObject({ state: "running", message: ".", attempts: 1 });
    expect(messagesOf(inFlight)).toEqual([{ role: "user", text: PROMPT, jobId: enqueued.id }]);

    await first.kill();
    const second = await startServer(ws.dir);
    // Requeued at start-up, not after some lease expired.
    expect(second.linesMatching(RECOVERED)).toEqual([expect.objectContaining({ recovered: 1 })]);

    expect(await outcomeOn(second, enqueued)).toMatchObject({ outcome: "done", attempts: 2 });
    expect((await deliveredReply(second)).reply).toBe("Lunch with Ada at noon.");
    expect(fake.requests).toHaveLength(2);
    // The model saw the prompt once, not once per attempt.
    const sent = fake.requests[1]?.body.messages ?? [];
    expect(sent.map((message) => [message.role, messageText(message)])).toEqual([["user", PROMPT]]);
    const job = await jobShow(enqueued.id);
    expect(job).toMatchObject({ state: "done", attempts: 2 });
    expect(job.errors).toEqual([expect.objectContaining({ attempt: 1 })]);
    expect(job.errors[0]?.message).toMatch(/^interrupted/);
    expect(messagesOf(job)).toEqual([
      { role: "user", text: PROMPT, jobId: enqueued.id },
      { role: "assistant", text: "Lunch with Ada at noon.", jobId: null },
    ]);
  });

  it("redelivers a stored reply without a second model call when the job was never acknowledged", async () => {
    fake.script({ text: "Dentist at 3 pm." }, { text: "a second, unwanted answer" });
    const first = await startServer(ws.dir);
    const enqueued = await enqueueJob(ws.dir, consoleJob(PROMPT));
    expect(await outcomeOn(first, enqueued)).toMatchObject({ outcome: "done", attempts: 1 });
    await first.kill();
    // The moment between storing the reply and acknowledging the job is too short to hit
    // with a signal, so recreate what a SIGKILL there leaves: the same rows, the job still
    // running under this host's lock.
    const unacknowledged = database()
      .prepare(
        `UPDATE jobs SET state = 'running', locked_by = ?, locked_at = updated_at,
           lock_token = 'held-by-the-killed-process'
         WHERE id = ? AND state = 'done' AND message = '.'`,
      )
      .run(hostname(), enqueued.id);
    expect(unacknowledged.changes).toBe(1);

    const second = await startServer(ws.dir);
    expect(second.linesMatching(RECOVERED)).toEqual([expect.objectContaining({ recovered: 1 })]);
    expect(await outcomeOn(second, enqueued)).toMatchObject({ outcome: "done", attempts: 2 });
    expect((await deliveredReply(second)).reply).toBe("Dentist at 3 pm.");
    expect(fake.requests).toHaveLength(1);
    const job = await jobShow(enqueued.id);
    expect(job.state).toBe("done");
    expect(messagesOf(job)).toEqual([
      { role: "user", text: PROMPT, jobId: enqueued.id },
      { role: "assistant", text: "Dentist at 3 pm.", jobId: null },
    ]);
  });

  it("lets a running job finish on SIGTERM, takes no new one, and exits 0", async () => {
    let release: () => void = () => {};
    const resume = new Promise<void>((resolve) => (release = resolve));
    fake.script({ text: "Finished despite the SIGTERM.", pauseAfterChunks: 1, resume });
    const server = await startServer(ws.dir);
    const running = await cronRun();
    await waitFor(() => fake.requests.length === 1, "the model is called");

    server.signal("SIGTERM");
    await server.waitForLog((line) => line.msg.startsWith("shutting down"));
    const later = await cronRun();
    release();
    expect(await server.exited).toEqual({ code: 0, signal: null });

    const done = await outcomeOn(server, running);
    expect(done).toMatchObject({ outcome: "done", attempts: 1 });
    const stopped = await server.waitForLog("picklebot server stopped");
    expect(server.logs.indexOf(done)).toBeLessThan(server.logs.indexOf(stopped));
    const job = await jobShow(running.id);
    expect(job).toMatchObject({ state: "done", attempts: 1 });
    expect(messagesOf(job).at(-1)).toEqual({
      role: "assistant",
      text: "Finished despite the SIGTERM.",
      jobId: null,
    });
    // Enqueued during the shutdown: left for the next start.
    expect(await jobShow(later.id)).toMatchObject({ state: "queued", attempts: 0 });
    expect(fake.requests).toHaveLength(1);
  });

  it("exits at once on a second Ctrl+C and finishes the interrupted job at the next start", async () => {
    fake.script({ hang: true }, { text: "Picked up again." });
    const first = await startServer(ws.dir);
    const enqueued = await enqueueJob(ws.dir, consoleJob(PROMPT));
    await waitFor(() => fake.requests.length === 1, "the model is called");

    first.signal("SIGINT");
    await first.waitForLog((line) => line.msg.startsWith("shutting down"));
    first.signal("SIGINT");
    expect(await first.exited).toEqual({ code: 130, signal: null });
    expect(first.linesMatching((line) => line.msg.startsWith("forced exit"))).toHaveLength(1);

    const second = await startServer(ws.dir);
    expect(second.linesMatching(RECOVERED)).toEqual([expect.objectContaining({ recovered: 1 })]);
    expect(await outcomeOn(second, enqueued)).toMatchObject({ outcome: "done", attempts: 2 });
    expect((await deliveredReply(second)).reply).toBe("Picked up again.");
  });
});

describe("picklebot server, jobs left running under another host name", () => {
  /** A job as a server on another host (a recreated container, a restored backup) left it. */
  async function orphanedJob(host: string): Promise<Job> {
    const job = await enqueueJob(ws.dir, consoleJob(PROMPT));
    database()
      .prepare("UPDATE jobs SET state = 'running', locked_by = ?, attempts = 1 WHERE id = ?")
      .run(host, job.id);
    return job;
  }

  it("requeues them at start-up: the workspace lock proves no other server runs them", async () => {
    fake.script({ text: "Lunch with Ada at noon." });
    const job = await orphanedJob("container-4f2a91");
    const server = await startServer(ws.dir);
    expect(server.linesMatching(RECOVERED)).toEqual([expect.objectContaining({ recovered: 1 })]);
    expect(await outcomeOn(server, job)).toMatchObject({ outcome: "done", attempts: 2 });
  });

  it("jobs retry requeues one while no server runs, and refuses while one does", async () => {
    const job = await orphanedJob("old-laptop");
    const retried = await runCli(["jobs", "retry", job.id, "--workspace", ws.dir]);
    expect(retried.stdout).toContain(`requeued job ${job.id}`);
    expect(retried.code).toBe(0);
    expect(await jobShow(job.id)).toMatchObject({ state: "queued", lockedBy: null });

    fake.script({ hang: true });
    const server = await startServer(ws.dir);
    await waitFor(() => fake.requests.length === 1, "the model is called");
    const refused = await runCli(["jobs", "retry", job.id, "--workspace", ws.dir]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(
      `job ${job.id} is running and another picklebot server (pid ${server.pid})`,
    );
    expect((await jobShow(job.id)).state).toBe("running");
  });
});

describe("picklebot server, job_timeout_s", () => {
  it("aborts a model call and then a bash command that outlive the attempt, and retries the job", async () => {
    ws.write("picklebot.yaml", fakeModelConfig(fake.url, "workers:\n  job_timeout_s: 1\n"));
    ws.write(
      "agents/pickle/AGENT.md",
      "---\nname: Pickle\ndescription: Runs commands\ntools: [bash]\n---\nYou run commands.\n",
    );
    // The first run records its pid and outlives the attempt; the rerun returns at once.
    const command =
      "if [ -e sleeper.pid ]; then echo rerun; else echo $$ > sleeper.pid; exec sleep 60.25; fi";
    fake.script(
      { hang: true },
      { toolUses: [{ name: "bash", input: { command } }] },
      { text: "The command ran." },
    );
    const server = await startServer(ws.dir);
    const enqueued = await enqueueJob(ws.dir, consoleJob(PROMPT));

    const outcomes = await server.jobOutcomes(enqueued.id, 3, 20_000);
    expect(outcomes.map((line) => [line.outcome, line.attempts])).toEqual([
      ["retry", 1],
      ["retry", 2],
      ["done", 3],
    ]);
    const job = await jobShow(enqueued.id);
    expect(job.errors.map((error) => error.message)).toEqual([
      "timed out after 1 s",
      "timed out after 1 s",
    ]);
    // The abort reached the command: its process is gone, not left sleeping. (Under the
    // sandbox the pid it wrote is one of its own namespace, so look for it by name.)
    expect(existsSync(join(ws.dir, "sleeper.pid"))).toBe(true);
    await waitFor(() => !isRunning("sleep 60.25"), "the sleeping command is killed");
    expect(fake.requests).toHaveLength(3);
    expect(messagesOf(job).map((message) => message.text)).toEqual([
      PROMPT,
      "[tool_use]",
      "[tool_result]",
      "The command ran.",
    ]);
  });
});

async function cronRun(): Promise<Job> {
  const result = await runCli(["cron", "run", "calendar", "--json", "--workspace", ws.dir]);
  if (result.code !== 0) throw new Error(`picklebot cron run: ${result.stderr}`);
  return JSON.parse(result.stdout) as Job;
}

/** True while a process whose command line holds `pattern` runs (pgrep -f). */
function isRunning(pattern: string): boolean {
  try {
    execFileSync("pgrep", ["-f", pattern]);
    return true;
  } catch {
    return false;
  }
}
