/**
 * The memory save before a summary survives the server being killed (issue 28, item 5):
 * `picklebot server` (the built CLI) as a child process against the fake Anthropic API,
 * SIGKILLed during the save call and then during the summary call that follows it. The
 * test reads the workspace's database and what the fake was asked.
 */
import type Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { NewJob } from "../../src/ports/index.js";
import {
  type FakeAnthropic,
  type FakeReply,
  isMemorySaveCall,
  isSummaryCall,
  type RecordedRequest,
  startFakeAnthropic,
} from "../fakes/anthropic.js";
import { runCli } from "../helpers/cli.js";
import {
  enqueueJob,
  killAllServers,
  openWorkspaceDb,
  sessionMessages,
  startServer,
} from "../helpers/server.js";
import { waitFor } from "../helpers/wait.js";
import { fakeModelConfig, makeWorkspace, type TempWorkspace } from "../helpers/workspace.js";

const KEY = "console:memory-save";

let fake: FakeAnthropic;
let ws: TempWorkspace;
let db: Database.Database | null = null;
/** Save and summary calls the fake model was asked, so far. */
let asked = { saves: 0, summaries: 0 };

/**
 * The fake model: its first save call and its first summary call never answer (the
 * server is killed during them); a later save call saves an entry naming its number, so
 * a second save call that succeeded would leave a second entry.
 */
function model(request: RecordedRequest): FakeReply {
  if (isMemorySaveCall(request)) {
    asked.saves += 1;
    if (asked.saves === 1) return { hang: true };
    const text = `The dentist appointment is on Tuesday (save call ${asked.saves}).`;
    return { toolUses: [{ name: "memory", input: { action: "add", about: "agent", text } }] };
  }
  if (isSummaryCall(request)) {
    asked.summaries += 1;
    return asked.summaries === 1 ? { hang: true } : { text: "Notes: a dentist appointment." };
  }
  return { text: "Noted." };
}

beforeEach(async () => {
  asked = { saves: 0, summaries: 0 };
  fake = await startFakeAnthropic({ defaultReply: model });
  ws = makeWorkspace({ "picklebot.yaml": fakeModelConfig(fake.url) });
});

afterEach(async () => {
  await killAllServers();
  db?.close();
  db = null;
  await fake.close();
  ws.remove();
});

function consoleJob(message: string, task?: NewJob["task"]): NewJob {
  return {
    agentId: "pickle",
    sessionKey: KEY,
    message,
    mode: "chat",
    replyTo: { kind: "console" },
    ...(task === undefined ? {} : { task }),
  };
}

function database(): Database.Database {
  db ??= openWorkspaceDb(ws.dir);
  return db;
}

/** The agent's notes, and how many changes were recorded for them. */
function notes(): { text: string | undefined; changes: number } {
  const row = database()
    .prepare("SELECT text FROM memories WHERE agent_id = 'pickle' AND scope = 'agent'")
    .get() as { text: string } | undefined;
  const changes = database()
    .prepare("SELECT count(*) AS n FROM memory_changes WHERE agent_id = 'pickle'")
    .get() as { n: number };
  return { text: row?.text, changes: changes.n };
}

describe("the memory save before a summary, killed", () => {
  it("writes its entry once, and is not asked again once it answered, whatever SIGKILL hits", async () => {
    const first = await startServer(ws.dir);
    const said = await enqueueJob(ws.dir, consoleJob("my dentist appointment is on Tuesday"));
    await first.jobOutcomes(said.id);
    const compact = await enqueueJob(ws.dir, consoleJob("/compact", "compact"));

    // Killed during the save call: nothing was saved, so it is asked again.
    await waitFor(() => asked.saves === 1, "the first save call");
    await first.kill();
    expect(notes()).toEqual({ text: undefined, changes: 0 });

    // Killed during the summary call, after the save call answered and its entry was written.
    const second = await startServer(ws.dir);
    await waitFor(() => asked.summaries === 1, "the summary call after the save");
    await second.kill();
    const saved = "The dentist appointment is on Tuesday (save call 2).";
    expect(notes()).toEqual({ text: saved, changes: 1 });

    // The stored save is run again (writing nothing), then only the summary is asked again.
    const third = await startServer(ws.dir);
    expect(await third.jobOutcomes(compact.id)).toEqual([
      expect.objectContaining({ outcome: "done" }),
    ]);
    expect(fake.requests.filter(isMemorySaveCall)).toHaveLength(2);
    expect(fake.requests.filter(isSummaryCall)).toHaveLength(2);
    expect(notes()).toEqual({ text: saved, changes: 1 });
    const sessionId = String(
      database().prepare("SELECT session_id FROM jobs WHERE id = ?").pluck().get(said.id),
    );
    expect(sessionMessages(database(), sessionId).map((message) => message.text)).toEqual([
      "my dentist appointment is on Tuesday",
      "Noted.",
      "[memory_save]",
      "[compaction]",
    ]);
    // The transcript shows the save, its call and the summary.
    const shown = await runCli(["sessions", "show", sessionId, "--workspace", ws.dir]);
    expect(shown.stdout).toMatch(/── before the summary, 1 memory calls · [\w.-]+ · [\d,]+ in/);
    expect(shown.stdout).toContain(
      `→ tool memory {"action":"add","about":"agent","text":"${saved}"}`,
    );
    expect(shown.stdout).toContain("── compaction: summary of 3 messages");
  });
});
