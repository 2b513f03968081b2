/**
 * Before a summary forgets (issue 28, item 5), in-process (the worker, the runner and
 * SQLite storage as the server builds them; the fake model): a compaction first gives the
 * agent one model call, offered only the `memory` tool, to save what matters; its fact
 * lands in memory and in the next session's prompt; the summary keeps the latest turns
 * verbatim; an agent without a writable memory gets no save call.
 */
import { afterEach, describe, expect, it } from "vitest";
import { MEMORY_SAVE_MAX_TOKENS } from "../../src/agents/compaction.js";
import type { Job, NewJob } from "../../src/ports/index.js";
import {
  isMemorySaveCall,
  isSummaryCall,
  messageText,
  type RecordedRequest,
} from "../fakes/anthropic.js";
import { CHAT_ID, CHAT_KEY, type Core, openCore } from "../helpers/core.js";
import { systemOf } from "../helpers/subagents.js";

const ANA = `telegram:${CHAT_ID}`;
const ANA_SENDS = { sender: { person: ANA, direct: true } };
const DENTIST = "Ana's dentist appointment is on Tuesday.";

let core: Core;

afterEach(() => core.close());

async function started(files: Record<string, string> = {}): Promise<Core> {
  core = await openCore({ queue: "sqlite", files });
  core.start();
  return core;
}

async function run(message: string, overrides: Partial<NewJob> = {}): Promise<Job> {
  const job = await core.enqueue(message, { ...ANA_SENDS, ...overrides });
  return core.waitForJob(job.id, (done) => done.state === "done");
}

/** `/compact`, as the chat sends it. */
function compact(): Promise<Job> {
  return run("/compact", { task: "compact" });
}

const toolNames = (request: RecordedRequest) =>
  (request.body.tools ?? []).map((tool) => String(tool.name));

describe("the memory save before a summary", () => {
  it("makes one call offered only `memory` before the summary; its fact is in memory and in the next session's prompt", async () => {
    await started();
    await run("my dentist appointment is on Tuesday");
    core.model.script(
      { toolUses: [{ name: "memory", input: { action: "add", about: "person", text: DENTIST } }] },
      { text: "Notes: Ana has a dentist appointment." },
    );
    const job = await compact();

    const [, save, summary, ...more] = core.model.requests;
    expect(more).toEqual([]);
    expect(isMemorySaveCall(save as RecordedRequest)).toBe(true);
    expect(toolNames(save as RecordedRequest)).toEqual(["memory"]);
    expect(save?.body.max_tokens).toBe(MEMORY_SAVE_MAX_TOKENS);
    // It sees what is about to be summarised, and what memory holds now.
    const seen = (save?.body.messages ?? []).map((message) => messageText(message)).join("\n");
    expect(seen).toContain("my dentist appointment is on Tuesday");
    expect(systemOf(save as RecordedRequest)).toContain("## About the person you are answering");
    expect(isSummaryCall(summary as RecordedRequest)).toBe(true);
    expect(toolNames(summary as RecordedRequest)).toEqual([]);

    expect((await core.storage.memory.read("pickle", ANA)).text).toBe(DENTIST);
    const [change] = await core.storage.memory.changes({ agentId: "pickle", scope: ANA });
    expect(change).toMatchObject({ action: "add", entry: DENTIST, by: "agent", jobId: job.id });
    expect(change?.callId).toMatch(/\S/);

    await core.storage.history.createSession({ key: CHAT_KEY, agentId: "pickle" });
    await run("when is my dentist?");
    const next = core.model.requests.at(-1) as RecordedRequest;
    expect(next.body.messages).toHaveLength(1);
    expect(systemOf(next)).toContain(DENTIST);
  });

  it("keeps the latest turns word for word after the summary, starting with the person's message", async () => {
    await started();
    for (const said of ["first", "second", "third"]) await run(said);
    core.model.script({ text: "Nothing to save." }, { text: "Notes: they counted to three." });
    await compact();
    await run("fourth");

    const sent = (core.model.requests.at(-1) as RecordedRequest).body.messages;
    expect(sent.map((message) => [message.role, messageText(message)])).toEqual([
      [
        "user",
        "(Summary of the earlier conversation, which is no longer shown in full:)\nNotes: they counted to three.second",
      ],
      ["assistant", "ok"],
      ["user", "third"],
      ["assistant", "ok"],
      ["user", "fourth"],
    ]);
    expect(core.platform.texts(CHAT_ID)).toContain(
      "Compacted: 2 messages summarised, the last 4 kept as they were, context ~0k → ~0k tokens.",
    );
  });

  it("goes on to the summary when the save call fails, saving nothing", async () => {
    await started();
    await run("my dentist appointment is on Tuesday");
    core.model.script(
      { error: { status: 400, message: "save refused" } },
      { text: "Notes: a dentist appointment." },
    );
    await compact();
    expect(
      core.model.requests.map((request) => [isMemorySaveCall(request), isSummaryCall(request)]),
    ).toEqual([
      [false, false],
      [true, false],
      [false, true],
    ]);
    expect(core.platform.texts(CHAT_ID).at(-1)).toMatch(/^Compacted: 2 messages summarised/);
    expect((await core.storage.memory.read("pickle", ANA)).text).toBe("");
  });

  it.each([
    ["memory: false", "memory: false"],
    ["read-only memory", "memory: {read_only: true}"],
    ["a policy that asks before `memory`", "approvals:\n  memory: ask"],
  ])("makes no save call for an agent with %s", async (_what, field) => {
    await started({
      "agents/pickle/AGENT.md": `---\nname: Pickle\ndescription: Brine\n${field}\n---\nYou pickle.`,
    });
    await run("my dentist appointment is on Tuesday");
    core.model.script({ text: "Notes: a dentist appointment." });
    await compact();
    expect(core.model.requests.filter(isMemorySaveCall)).toEqual([]);
    expect(core.model.requests.filter(isSummaryCall)).toHaveLength(1);
    expect((await core.storage.memory.read("pickle", ANA)).text).toBe("");
  });
});
