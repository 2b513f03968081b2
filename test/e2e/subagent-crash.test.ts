/**
 * Subagents survive a SIGKILL like a plain job: the server runs as a child process
 * against the fake model, is killed at the moments that matter, and is started again.
 * Each case ends with one run of each child to its answer, one continuation of the parent,
 * and no model call made twice.
 */
import type Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Job, NewJob } from "../../src/ports/index.js";
import {
  type FakeAnthropic,
  type RecordedRequest,
  startFakeAnthropic,
} from "../fakes/anthropic.js";
import { runCli } from "../helpers/cli.js";
import {
  enqueueJob,
  killAllServers,
  openWorkspaceDb,
  type ServerProcess,
  sessionMessages,
  startServer,
} from "../helpers/server.js";
import {
  DELEGATING_PICKLE,
  delegatingModel,
  isResearcher,
  lastResults,
  RESEARCHER_AGENT,
} from "../helpers/subagents.js";
import { waitFor } from "../helpers/wait.js";
import { fakeModelConfig, makeWorkspace, type TempWorkspace } from "../helpers/workspace.js";

let fake: FakeAnthropic;
let ws: TempWorkspace;
let db: Database.Database | null = null;
/** Model requests that hang (never answered) until the server making them dies. */
let hangWhen: (request: RecordedRequest) => boolean = () => false;

beforeEach(async () => {
  hangWhen = () => false;
  const answer = delegatingModel(["brine", "dill"]);
  fake = await startFakeAnthropic({
    defaultReply: (request) => (hangWhen(request) ? { hang: true } : answer(request)),
  });
  ws = makeWorkspace({
    "picklebot.yaml": fakeModelConfig(fake.url),
    "agents/pickle/AGENT.md": DELEGATING_PICKLE,
    "agents/researcher/AGENT.md": RESEARCHER_AGENT,
  });
});

afterEach(async () => {
  await killAllServers();
  db?.close();
  db = null;
  await fake.close();
  ws.remove();
});

const PARENT: NewJob = {
  agentId: "pickle",
  sessionKey: "console:subagents",
  message: "Compare brine and dill pickles",
  mode: "chat",
  replyTo: { kind: "console" },
};

async function jobs(): Promise<Job[]> {
  const result = await runCli(["jobs", "--json", "--workspace", ws.dir]);
  if (result.code !== 0) throw new Error(`picklebot jobs: ${result.stderr}`);
  return JSON.parse(result.stdout) as Job[];
}

async function job(id: string): Promise<Job> {
  const found = (await jobs()).find((candidate) => candidate.id === id);
  if (!found) throw new Error(`picklebot jobs does not list ${id}`);
  return found;
}

async function childrenOf(parent: Job): Promise<Job[]> {
  return (await jobs()).filter((candidate) => candidate.parentId === parent.id);
}

const researcherCalls = () => fake.requests.filter(isResearcher);
const parentCalls = () => fake.requests.filter((request) => !isResearcher(request));

/** Waits for the parent's reply in the server log. */
async function reply(server: ServerProcess): Promise<string> {
  const line = await server.waitForLog((l) => l.msg === "reply" && l.frontend === "console");
  return String(line.reply);
}

/** The parent's stored conversation, as text. */
function conversation(parent: Job): string[] {
  db ??= openWorkspaceDb(ws.dir);
  if (!parent.sessionId) throw new Error(`job ${parent.id} has no session`);
  return sessionMessages(db, parent.sessionId).map((message) => `${message.role}: ${message.text}`);
}

describe("subagents across a SIGKILL", () => {
  it("killed while a child runs and the parent waits: the child runs again, the parent continues once", async () => {
    // The researcher's first call on "dill" hangs: that child is running when the kill comes.
    let dillCalls = 0;
    hangWhen = (request) =>
      isResearcher(request) && JSON.stringify(request.body).includes("dill") && ++dillCalls === 1;
    const first = await startServer(ws.dir);
    const parent = await enqueueJob(ws.dir, PARENT);
    await waitFor(async () => (await job(parent.id)).state === "waiting", "the parent parks");
    await waitFor(() => dillCalls === 1, "the dill researcher is called");
    await waitFor(
      async () => (await childrenOf(parent)).some((child) => child.state === "done"),
      "the brine child is done",
    );
    await first.kill();

    const second = await startServer(ws.dir);
    expect(await reply(second)).toBe("answer: found: brine | found: dill");
    const children = await childrenOf(parent);
    expect(children.map((child) => child.state).sort()).toEqual(["done", "done"]);
    // Brine ran once; dill twice (the first call died with the process); the parent twice:
    // its call, and its one continuation, which got the brine answer kept from before.
    expect(
      researcherCalls().map((request) => JSON.stringify(request.body).includes("dill")),
    ).toEqual(expect.arrayContaining([true, true, false]));
    expect(researcherCalls()).toHaveLength(3);
    expect(parentCalls()).toHaveLength(2);
    expect(conversation(await job(parent.id))).toEqual([
      "user: Compare brine and dill pickles",
      "assistant: [tool_use][tool_use]",
      "user: [tool_result][tool_result]",
      "assistant: answer: found: brine | found: dill",
    ]);
  });

  it("killed while the parent is parked and no worker runs it: it is still waiting after the restart, and wakes when its child ends", async () => {
    let release = false;
    hangWhen = (request) => isResearcher(request) && !release;
    const first = await startServer(ws.dir);
    const parent = await enqueueJob(ws.dir, PARENT);
    await waitFor(async () => (await job(parent.id)).state === "waiting", "the parent parks");
    await first.kill();

    release = true;
    const second = await startServer(ws.dir);
    expect(await reply(second)).toBe("answer: found: brine | found: dill");
    expect(parentCalls()).toHaveLength(2);
    expect((await job(parent.id)).state).toBe("done");
  });

  it("killed right after the children ended, during the parent's continuation: it resumes without running a child again", async () => {
    // The parent's continuation (its request with the tool results) hangs the first time.
    let continuations = 0;
    hangWhen = (request) =>
      !isResearcher(request) && lastResults(request).length > 0 && ++continuations === 1;
    const first = await startServer(ws.dir);
    const parent = await enqueueJob(ws.dir, PARENT);
    await waitFor(() => continuations === 1, "the parent continues after its children");
    await first.kill();

    const second = await startServer(ws.dir);
    expect(await reply(second)).toBe("answer: found: brine | found: dill");
    expect(researcherCalls()).toHaveLength(2);
    // Its call, the continuation that died, and the one that answered.
    expect(parentCalls()).toHaveLength(3);
    expect((await childrenOf(parent)).map((child) => child.attempts)).toEqual([1, 1]);
  });
});

describe("picklebot jobs cancel", () => {
  it("stops a waiting parent and its running child from a shell; refuses what it cannot stop", async () => {
    hangWhen = isResearcher;
    const server = await startServer(ws.dir);
    const parent = await enqueueJob(ws.dir, PARENT);
    await waitFor(async () => (await job(parent.id)).state === "waiting", "the parent parks");
    const shown = await runCli(["jobs", "show", parent.id, "--workspace", ws.dir]);
    expect(shown.stdout).toMatch(/state +waiting for 2 subagent jobs/);
    expect(shown.stdout).toMatch(/subagent job +\w+ \(researcher, running\)/);

    const cancelled = await runCli(["jobs", "cancel", parent.id, "--workspace", ws.dir]);
    expect(cancelled).toMatchObject({ code: 0 });
    expect(cancelled.stdout).toContain(`job ${parent.id} will stop`);
    await waitFor(async () => (await job(parent.id)).state === "stopped", "the parent stops");
    await waitFor(
      async () => (await childrenOf(parent)).every((child) => child.state === "stopped"),
      "its children stop",
    );
    expect((await job(parent.id)).lastError).toBe("stopped by the user");
    const reply = await server.waitForLog((line) => line.msg === "reply failed");
    expect(reply.error).toBe("Stopped.");

    const again = await runCli(["jobs", "cancel", parent.id, "--workspace", ws.dir]);
    expect(again.code).toBe(1);
    expect(again.stderr).toBe(
      `picklebot: job ${parent.id} is stopped; only queued and waiting jobs can be cancelled\n`,
    );
    const unknown = await runCli(["jobs", "cancel", "nope", "--workspace", ws.dir]);
    expect(unknown.stderr).toBe('picklebot: no job "nope"; list them with picklebot jobs\n');
  });
});
