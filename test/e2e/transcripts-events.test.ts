/**
 * Transcripts and the event stream from the CLI, as a user meets them: `picklebot server`
 * as a child process against the fake model, a cron run from a shell, then `jobs show`,
 * `sessions list/show` and `events` (with and without `--follow`).
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Job, PicklebotEvent } from "../../src/ports/index.js";
import { type FakeAnthropic, startFakeAnthropic } from "../fakes/anthropic.js";
import { fanoutProcesses, isRunning, runCli, startCli } from "../helpers/cli.js";
import { killAllServers, startServer } from "../helpers/server.js";
import { waitFor } from "../helpers/wait.js";
import { fakeModelConfig, makeWorkspace, type TempWorkspace } from "../helpers/workspace.js";

const TOKEN = "events-cli-token-0123456789";

let fake: FakeAnthropic;
let ws: TempWorkspace;

beforeEach(async () => {
  fake = await startFakeAnthropic();
  ws = makeWorkspace({
    "picklebot.yaml": fakeModelConfig(fake.url),
    "crons/notes.yaml": 'schedule: "0 0 1 1 *"\nprompt: What do my notes say?\nenabled: false\n',
    "notes.md": "Buy pickles.\n",
  });
});

afterEach(async () => {
  await killAllServers();
  await fake.close();
  ws.remove();
});

const cli = (...args: string[]) => runCli([...args, "--workspace", ws.dir]);

/** Runs the cron from a shell and waits until the server has finished its job. */
async function runNotesCron(): Promise<Job> {
  fake.script(
    { toolUses: [{ name: "read", input: { path: "notes.md" }, id: "toolu_1" }] },
    { text: "Your notes say:\nbuy pickles." },
  );
  const run = await cli("cron", "run", "notes", "--json");
  expect(run.stderr).toBe("");
  const job = JSON.parse(run.stdout) as Job;
  return waitFor(async () => {
    const shown = JSON.parse((await cli("jobs", "show", job.id, "--json")).stdout) as Job;
    return shown.state === "done" && shown;
  }, "the cron's job to finish");
}

describe("transcripts from the CLI", () => {
  it("jobs show prints the reply and the session to open; sessions show prints the whole turn", async () => {
    await startServer(ws.dir);
    const job = await runNotesCron();

    const shown = await cli("jobs", "show", job.id);
    expect(shown.stdout).toContain("message      What do my notes say?");
    expect(shown.stdout).toContain("reply\n  Your notes say:\n  buy pickles.\n");
    expect(shown.stdout).toContain(`transcript   picklebot sessions show ${job.sessionId}`);
    const json = JSON.parse((await cli("jobs", "show", job.id, "--json")).stdout);
    expect(json).toMatchObject({
      reply: "Your notes say:\nbuy pickles.",
      sessionId: job.sessionId,
    });

    const transcript = await cli("sessions", "show", job.sessionId ?? "");
    expect(transcript.code).toBe(0);
    const text = transcript.stdout;
    expect(text).toContain(`session ${job.sessionId} · agent pickle · cron:notes:manual:`);
    expect(text).toContain("2 model calls");
    expect(text).toMatch(/\] user · job \S+\n {2}What do my notes say\?/);
    expect(text).toContain('  → tool read {"path":"notes.md"}');
    expect(text).toContain("    ← Buy pickles.");
    expect(text).toMatch(
      /\] assistant · job \S+ · \S+ · \d+ in \/ \d+ out tokens\n {2}Your notes say:/,
    );

    const structured = JSON.parse(
      (await cli("sessions", "show", job.sessionId ?? "", "--json")).stdout,
    );
    expect(structured.entries.map((entry: { kind: string }) => entry.kind)).toEqual([
      "user",
      "assistant",
      "assistant",
    ]);
    expect(structured.totals.calls).toBe(2);
  });

  it("sessions list filters by agent and chat, and names an agent that does not exist", async () => {
    expect((await runCli(["chat", "--workspace", ws.dir], { input: "hello\n" })).code).toBe(0);
    const all = JSON.parse((await cli("sessions", "list", "--json")).stdout) as Array<{
      key: string;
    }>;
    expect(all).toHaveLength(1);
    const key = all[0]?.key ?? "";
    expect(
      JSON.parse((await cli("sessions", "list", "--chat", key, "--json")).stdout),
    ).toHaveLength(1);
    expect(
      JSON.parse((await cli("sessions", "list", "--agent", "pickle", "--json")).stdout),
    ).toHaveLength(1);
    expect((await cli("sessions", "list", "--chat", "telegram:1")).stdout).toBe(
      "no sessions of chat telegram:1\n",
    );
    const unknown = await cli("sessions", "list", "--agent", "nobody");
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('unknown agent "nobody" (known: pickle)');
    const missing = await cli("sessions", "show", "s_nope");
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe(
      'picklebot: no session "s_nope"; list them with picklebot sessions list\n',
    );
  });
});

describe("picklebot events", () => {
  it("prints a job's life from the buffer, and follows new events live", async () => {
    await startServer(ws.dir);
    const first = await runNotesCron();
    const buffered = await cli("events", "--json", "--type", "job.*");
    expect(buffered.code).toBe(0);
    const events = buffered.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as PicklebotEvent)
      .filter((event) => "jobId" in event && event.jobId === first.id);
    // Enqueued by another process (the shell): the server's stream starts at the claim.
    expect(events.map((event) => event.type)).toEqual([
      "job.started",
      "job.checkpointed",
      "job.done",
    ]);

    const readable = await cli("events", "--type", "tool.*");
    expect(readable.stdout).toMatch(/tool\.started\s+read pickle call toolu_1/);

    const follower = startCli(["events", "--follow", "--json", "--workspace", ws.dir]);
    let output = "";
    follower.stdout?.on("data", (chunk: Buffer) => {
      output += chunk.toString();
    });
    await waitFor(() => output.includes('"job.done"'), "the buffered events");
    const second = await runNotesCron();
    await waitFor(
      () =>
        output.includes(`"type":"job.done","jobId":"${second.id}"`) || output.includes(second.id),
      "the live job's events",
    );
    follower.kill("SIGKILL");
    const live = output
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as PicklebotEvent);
    expect(
      live.filter((event) => "jobId" in event && event.jobId === second.id).length,
    ).toBeGreaterThan(0);
  });

  it("serves live clients from a fan-out process that a SIGKILLed server takes along", async () => {
    const server = await startServer(ws.dir);
    const stream = await server.fetch("/events");
    const reader = stream.body?.getReader();
    if (!reader) throw new Error("no body");
    expect(new TextDecoder().decode((await reader.read()).value)).toContain(": connected");
    const [fanout] = await waitFor(() => {
      const found = fanoutProcesses(server.pid);
      return found.length === 1 && found;
    }, "the server's fan-out process");
    await runNotesCron();
    let text = "";
    while (!text.includes("event: job.done"))
      text += new TextDecoder().decode((await reader.read()).value);

    await server.kill();
    await waitFor(() => !isRunning(fanout ?? 0), "the fan-out process to exit with the server");
    for (let read = await reader.read().catch(() => ({ done: true })); !read.done; ) {
      read = await reader.read().catch(() => ({ done: true }));
    }
  });

  it("--follow goes on where it was when the fan-out process is killed", async () => {
    const server = await startServer(ws.dir);
    const follower = startCli(["events", "--follow", "--json", "--workspace", ws.dir]);
    let output = "";
    follower.stdout?.on("data", (chunk: Buffer) => {
      output += chunk.toString();
    });
    const [fanout] = await waitFor(() => {
      const found = fanoutProcesses(server.pid);
      return found.length === 1 && found;
    }, "the server's fan-out process");
    process.kill(fanout ?? 0, "SIGKILL");
    const job = await runNotesCron();
    await waitFor(
      () => output.includes(`"type":"job.done","jobId":"${job.id}"`),
      "the follower to print the job's end",
    );
    follower.kill("SIGKILL");
    const seqs = output
      .trim()
      .split("\n")
      .map((line) => (JSON.parse(line) as PicklebotEvent).seq);
    expect(new Set(seqs).size).toBe(seqs.length);
  });

  it("sends http.token, which a server with a token asks of every client", async () => {
    ws.write(
      "picklebot.yaml",
      fakeModelConfig(fake.url).replace("http:\n", `http:\n  token: ${TOKEN}\n`),
    );
    const server = await startServer(ws.dir);
    const anonymous = await fetch(`${server.httpUrl}/events?follow=false`);
    expect(anonymous.status).toBe(401);
    await runNotesCron();

    const events = await cli("events", "--json", "--type", "job.done");

    expect(events.code).toBe(0);
    expect(events.stdout).toContain('"type":"job.done"');
  });

  it("says when no server runs, and refuses a type that matches nothing", async () => {
    const none = await cli("events");
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(
      /^picklebot: no picklebot server answers at http:\/\/127\.0\.0\.1:0; start one with picklebot server/,
    );
    const bad = await cli("events", "--type", "jobs.*");
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain("--type jobs.* matches no event type; types are job.enqueued,");
  });
});
