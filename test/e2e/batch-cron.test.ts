/**
 * Batch mode for crons, end to end: `picklebot server` as a child process, a cron run with
 * `batch: true` (or `cron run --batch`), and the fake Anthropic API's Message Batches
 * routes, which the test ends when it likes. The server must send no `/v1/messages` call
 * unless a batch step falls back, and survive a SIGKILL while it submits a batch or reads
 * its result without submitting twice or losing the answer.
 */
import type Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Job } from "../../src/ports/index.js";
import { type FakeAnthropic, startFakeAnthropic } from "../fakes/anthropic.js";
import { runCli } from "../helpers/cli.js";
import {
  killAllServers,
  openWorkspaceDb,
  type ServerProcess,
  sessionMessages,
  startServer,
} from "../helpers/server.js";
import { waitFor } from "../helpers/wait.js";
import { makeWorkspace, type TempWorkspace } from "../helpers/workspace.js";

const PROMPT = "Summarise my notes.";

let fake: FakeAnthropic;
let ws: TempWorkspace;
let db: Database.Database | null = null;

function config(extra = ""): string {
  return [
    "llm:",
    "  api_key: test-key",
    `  base_url: ${fake.url}`,
    "  timeout_s: 20",
    "  batch_poll_s: 0.05",
    extra,
    "http:",
    "  port: 0",
    "",
  ].join("\n");
}

beforeEach(async () => {
  fake = await startFakeAnthropic();
  ws = makeWorkspace({
    "picklebot.yaml": config(),
    "crons/nightly.yaml": `schedule: "0 0 1 1 *"\nprompt: ${PROMPT}\nenabled: false\nbatch: true\n`,
    "crons/plain.yaml": `schedule: "0 0 1 1 *"\nprompt: ${PROMPT}\nenabled: false\n`,
    "notes.md": "Buy pickles.\n",
  });
});

afterEach(async () => {
  await killAllServers();
  db?.close();
  db = null;
  await fake.close();
  ws.remove();
});

async function cronRun(id: string, ...args: string[]): Promise<Job> {
  const result = await runCli(["cron", "run", id, "--json", ...args, "--workspace", ws.dir]);
  if (result.code !== 0) throw new Error(`picklebot cron run: ${result.stderr}`);
  return JSON.parse(result.stdout) as Job;
}

async function jobShow(id: string): Promise<Job> {
  const result = await runCli(["jobs", "--json", "--workspace", ws.dir]);
  const job = (JSON.parse(result.stdout) as Job[]).find((candidate) => candidate.id === id);
  if (!job) throw new Error(`picklebot jobs does not list ${id}`);
  return job;
}

/** The outcome of the job's `count`-th attempt on `server`. */
async function outcome(server: ServerProcess, job: Job, count: number): Promise<string> {
  const lines = await server.jobOutcomes(job.id, count, 15_000);
  return String(lines.at(-1)?.outcome);
}

/** The job's session, oldest message first. */
async function messagesOf(id: string) {
  const job = await jobShow(id);
  if (!job.sessionId) throw new Error(`job ${id} has no session`);
  db ??= openWorkspaceDb(ws.dir);
  return sessionMessages(db, job.sessionId);
}

/** Waits for batch number `count` to be created, then ends every batch. */
async function endBatch(count: number): Promise<void> {
  await waitFor(() => fake.batches.created.length >= count, `batch ${count} is created`);
  fake.batches.endBatches();
}

describe("batch mode for crons", () => {
  it("runs a batch: true cron through the batch endpoints with no /v1/messages call", async () => {
    fake.script({ text: "You should buy pickles." });
    const server = await startServer(ws.dir);
    const job = await cronRun("nightly");
    expect(job.batch).toBe(true);

    expect(await outcome(server, job, 1)).toBe("parked");
    expect(await jobShow(job.id)).toMatchObject({
      state: "waiting",
      waitingFor: { kind: "batch", batchIds: [fake.batches.created[0]?.id] },
    });
    await endBatch(1);
    expect(await outcome(server, job, 2)).toBe("done");

    expect(fake.requests).toHaveLength(0);
    expect(fake.batches.created).toHaveLength(1);
    const [item] = fake.batches.created[0]?.items ?? [];
    expect(item?.custom_id).toMatch(/^pb_/);
    expect(item?.params.stream).toBeUndefined();
    expect(await messagesOf(job.id)).toEqual([
      { role: "user", text: PROMPT, jobId: job.id },
      { role: "assistant", text: "You should buy pickles.", jobId: null },
    ]);
    // The ledger marks the call as a batch call, priced at half the list price.
    const usage = await runCli(["usage", "--by", "cron", "--json", "--workspace", ws.dir]);
    const report = JSON.parse(usage.stdout) as {
      lines: Array<{ calls: number }>;
      total: { usd: number };
    };
    expect(report.lines).toEqual([expect.objectContaining({ key: "nightly", calls: 1 })]);
    const db = openWorkspaceDb(ws.dir);
    try {
      expect(db.prepare("SELECT batch FROM usage").pluck().all()).toEqual([1]);
    } finally {
      db.close();
    }
  });

  it("continues a tool call in a new batch; cron run --batch batches a plain cron", async () => {
    fake.script(
      { toolUses: [{ name: "read", input: { path: "notes.md" } }] },
      { text: "Your notes say: buy pickles." },
    );
    const server = await startServer(ws.dir);
    const job = await cronRun("plain", "--batch");
    await endBatch(1);
    await endBatch(2);
    expect(await outcome(server, job, 3)).toBe("done");

    expect(fake.requests).toHaveLength(0);
    expect(fake.batches.created).toHaveLength(2);
    const ids = fake.batches.created.map((batch) => batch.items[0]?.custom_id);
    expect(new Set(ids).size).toBe(2);
    expect(await messagesOf(job.id)).toEqual([
      { role: "user", text: PROMPT, jobId: job.id },
      { role: "assistant", text: "[tool_use]", jobId: null },
      { role: "user", text: "[tool_result]", jobId: null },
      { role: "assistant", text: "Your notes say: buy pickles.", jobId: null },
    ]);
  });

  it("makes the steps after batch_max_steps at full price", async () => {
    ws.write("picklebot.yaml", config("  batch_max_steps: 1"));
    fake.script(
      { toolUses: [{ name: "read", input: { path: "notes.md" } }] },
      { text: "At full price." },
    );
    const server = await startServer(ws.dir);
    const job = await cronRun("nightly");
    await endBatch(1);
    expect(await outcome(server, job, 2)).toBe("done");

    expect(fake.batches.created).toHaveLength(1);
    expect(fake.requests).toHaveLength(1);
    expect((await messagesOf(job.id)).at(-1)?.text).toBe("At full price.");
  });

  it("falls back to one normal call for an errored and for an expired item", async () => {
    fake.script({ error: { status: 500 } }, { text: "After the error." });
    const server = await startServer(ws.dir);
    const errored = await cronRun("nightly");
    await endBatch(1);
    expect(await outcome(server, errored, 2)).toBe("done");
    expect(fake.requests).toHaveLength(1);
    expect((await messagesOf(errored.id)).at(-1)?.text).toBe("After the error.");

    fake.script({ text: "After the expiry." });
    const expired = await cronRun("nightly");
    await waitFor(() => fake.batches.created.length === 2, "the second batch is created");
    fake.batches.endBatches({ expire: true });
    expect(await outcome(server, expired, 2)).toBe("done");
    expect(fake.requests).toHaveLength(2);
    expect(fake.batches.created).toHaveLength(2);
    expect((await messagesOf(expired.id)).at(-1)?.text).toBe("After the expiry.");
  });

  it("submits once after a SIGKILL while the batch was being created", async () => {
    fake.script({ text: "Submitted once." });
    const release = fake.batches.holdCreates();
    const first = await startServer(ws.dir);
    const job = await cronRun("nightly");
    await waitFor(() => fake.batches.created.length === 1, "the batch is created");
    // The API created the batch; the server dies before it learns the batch's id.
    await first.kill();
    release();
    expect((await jobShow(job.id)).batchStep).toMatchObject({ batchId: null, steps: 1 });

    const second = await startServer(ws.dir);
    expect(await outcome(second, job, 1)).toBe("parked");
    fake.batches.endBatches();
    expect(await outcome(second, job, 2)).toBe("done");

    expect(fake.batches.created).toHaveLength(1);
    expect(fake.requests).toHaveLength(0);
    expect(await messagesOf(job.id)).toEqual([
      { role: "user", text: PROMPT, jobId: job.id },
      { role: "assistant", text: "Submitted once.", jobId: null },
    ]);
  });

  it("keeps the answer after a SIGKILL while the result was being read", async () => {
    fake.script({ text: "Read once." });
    const first = await startServer(ws.dir);
    const job = await cronRun("nightly");
    expect(await outcome(first, job, 1)).toBe("parked");
    const release = fake.batches.holdResults();
    fake.batches.endBatches();
    await waitFor(
      () => fake.batches.calls.some((call) => call.endsWith("/results")),
      "the result is requested",
    );
    await first.kill();
    release();

    const second = await startServer(ws.dir);
    expect(await outcome(second, job, 1)).toBe("done");

    expect(fake.batches.created).toHaveLength(1);
    expect(fake.requests).toHaveLength(0);
    expect(await messagesOf(job.id)).toEqual([
      { role: "user", text: PROMPT, jobId: job.id },
      { role: "assistant", text: "Read once.", jobId: null },
    ]);
  });
});
