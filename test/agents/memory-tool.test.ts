/**
 * The `memory` tool on a real SQLite store: what each action stores, and every refusal
 * the model is given (over budget, too long, a secret, a duplicate, an entry that no or
 * several entries hold), with nothing stored for any of them.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { RunMemory } from "../../src/agents/memory/conversation.js";
import { DEFAULT_MEMORY } from "../../src/agents/memory/settings.js";
import { createMemoryTool } from "../../src/agents/tools/memory.js";
import {
  AGENT_SCOPE,
  type MemoryStore,
  type Tool,
  type ToolContext,
} from "../../src/ports/index.js";
import { SqliteMemoryStore } from "../../src/storage/sqlite/memory.js";
import { TestClock } from "../helpers/clock.js";
import { onTempDatabase, type StoreHandle } from "../helpers/stores.js";

const ANA = "telegram:1001";
const BEN = "telegram:1002";

let handle: StoreHandle<MemoryStore>;
let store: MemoryStore;
let calls = 0;

beforeEach(async () => {
  handle = await onTempDatabase((db) => new SqliteMemoryStore({ db }));
  store = handle.store;
});
afterEach(() => handle.cleanup());

/** The run of a private chat with Ana, unless `overrides` say otherwise. */
function run(overrides: Partial<RunMemory> = {}): RunMemory {
  return {
    agentId: "pickle",
    settings: { ...DEFAULT_MEMORY, personChars: 100 },
    writable: true,
    person: ANA,
    writer: ANA,
    recall: null,
    ...overrides,
  };
}

function tool(memory: RunMemory = run()): Tool {
  return createMemoryTool({
    store,
    run: memory,
    sessionId: "s1",
    clock: new TestClock(),
    secrets: ["sk-configured-secret-123"],
  });
}

function context(callId = `toolu_${++calls}`): ToolContext {
  return {
    workspace: "/tmp",
    signal: new AbortController().signal,
    agentId: "pickle",
    sessionKey: "telegram:1001",
    jobId: "job-1",
    callId,
  };
}

async function person(): Promise<string> {
  return (await store.read("pickle", ANA)).text;
}

describe("the memory tool", () => {
  it("adds, replaces and removes entries of the person's memory and of the notes", async () => {
    const memory = tool();
    const saved = await memory.run(
      { action: "add", about: "person", text: "Cat is called Miso." },
      context(),
    );
    expect(saved).toBe(
      `Saved to the memory about the person you are answering (${ANA}): "Cat is called Miso." (19 of 100 characters used). Conversations started from now on see it.`,
    );
    await memory.run({ action: "add", about: "person", text: "Dentist on Tuesday" }, context());
    const replaced = await memory.run(
      { action: "replace", about: "person", old_text: "dentist", text: "Dentist on Friday" },
      context(),
    );
    expect(replaced).toContain('Replaced "Dentist on Tuesday" with "Dentist on Friday"');
    expect(await person()).toBe("Cat is called Miso.\n§\nDentist on Friday");
    await memory.run({ action: "remove", about: "person", old_text: "Miso" }, context());
    await memory.run({ action: "add", about: "agent", text: "Server: tater" }, context());
    expect(await person()).toBe("Dentist on Friday");
    expect((await store.read("pickle", AGENT_SCOPE)).text).toBe("Server: tater");
    // remove takes the entry's text in `text` too.
    await memory.run({ action: "remove", about: "agent", text: "tater" }, context());
    expect((await store.read("pickle", AGENT_SCOPE)).text).toBe("");
    const changes = await store.changes();
    expect(changes.map((change) => change.action)).toEqual([
      "remove",
      "add",
      "remove",
      "replace",
      "add",
      "add",
    ]);
    expect(changes[0]).toMatchObject({ by: "agent", jobId: "job-1", sessionId: "s1" });
  });

  it("writes a call once when it runs again after a crash", async () => {
    const memory = tool();
    const input = { action: "add", about: "person", text: "Cat is called Miso." };
    await memory.run(input, context("toolu_same"));
    const again = await memory.run(input, context("toolu_same"));
    expect(again).toBe(
      `Saved to the memory about the person you are answering (${ANA}): "Cat is called Miso." (this call had done it already).`,
    );
    expect(await person()).toBe("Cat is called Miso.");
    expect(await store.changes()).toHaveLength(1);
  });

  it("refuses an entry that would pass the budget, saying how full it is and what is in it", async () => {
    const memory = tool();
    await memory.run({ action: "add", about: "person", text: "a".repeat(60) }, context());
    const refusal = memory.run({ action: "add", about: "person", text: "b".repeat(40) }, context());
    await expect(refusal).rejects.toThrow(
      /is full: 60 of 100 characters used, and this change would make it 103\. Make room first: merge related entries .* Its entries: 1\. "a{60}"/,
    );
    expect(await person()).toBe("a".repeat(60));
  });

  it("refuses an entry longer than the whole memory", async () => {
    const refusal = tool().run(
      { action: "add", about: "person", text: "x".repeat(101) },
      context(),
    );
    await expect(refusal).rejects.toThrow(
      /the entry is 101 characters and the memory about .* holds 100 in all; write a shorter/,
    );
    expect(await store.list()).toEqual([]);
  });

  it("refuses a secret-looking entry, with what it looks like and what to save instead", async () => {
    const memory = tool();
    await expect(
      memory.run(
        { action: "add", about: "agent", text: "GitHub: ghp_abcdefghijklmnopqrstuvwxyz0123456789" },
        context(),
      ),
    ).rejects.toThrow(/looks like a secret \(a GitHub token\)\. .*save where to find it instead/);
    await expect(
      memory.run(
        { action: "add", about: "agent", text: "key sk-configured-secret-123" },
        context(),
      ),
    ).rejects.toThrow(/a secret of this workspace's configuration/);
    expect(await store.list()).toEqual([]);
  });

  it("refuses a duplicate, spaces and case aside", async () => {
    const memory = tool();
    await memory.run({ action: "add", about: "person", text: "Cat is called Miso." }, context());
    await expect(
      memory.run({ action: "add", about: "person", text: "  cat is  called miso. " }, context()),
    ).rejects.toThrow(/already saved in .*: "Cat is called Miso\."; nothing to add/);
    expect(await store.changes()).toHaveLength(1);
  });

  it("says when old_text picks no entry or several, listing them", async () => {
    const memory = tool();
    await memory.run({ action: "add", about: "person", text: "Cat: Miso" }, context());
    await memory.run({ action: "add", about: "person", text: "Cat food: tuna" }, context());
    await expect(
      memory.run({ action: "remove", about: "person", old_text: "dog" }, context()),
    ).rejects.toThrow(
      /no entry of .* holds "dog"; give a piece of one entry's text as "old_text"\. Its entries: 1\. "Cat: Miso"; 2\. "Cat food: tuna"/,
    );
    await expect(
      memory.run(
        { action: "replace", about: "person", old_text: "cat", text: "Cat: Momo" },
        context(),
      ),
    ).rejects.toThrow(
      /"cat" is in 2 entries of .*: 1\. "Cat: Miso"; 2\. "Cat food: tuna"; give a longer piece/,
    );
    await expect(
      memory.run({ action: "replace", about: "person", text: "Cat: Momo" }, context()),
    ).rejects.toThrow(/replace needs "old_text"/);
    await expect(memory.run({ action: "forget", about: "person" }, context())).rejects.toThrow(
      /"action"/,
    );
    expect(await person()).toBe("Cat: Miso\n§\nCat food: tuna");
  });

  it("refuses an entry holding the separator line", async () => {
    await expect(
      tool().run({ action: "add", about: "person", text: "one\n§\ntwo" }, context()),
    ).rejects.toThrow(/separates entries/);
  });

  it("refuses an entry holding a control character, such as a terminal's escape", async () => {
    await expect(
      tool().run(
        { action: "add", about: "person", text: "Cat: \u001b]0;pwned\u0007Miso" },
        context(),
      ),
    ).rejects.toThrow('"text" holds a control character (\\x1b); write plain text.');
    expect(await person()).toBe("");
  });

  it("in a group, writes the sender's own memory and never quotes it back", async () => {
    const group = tool(run({ person: null, writer: BEN }));
    await group.run({ action: "add", about: "person", text: "Ben's dog: Rex" }, context());
    expect((await store.read("pickle", BEN)).text).toBe("Ben's dog: Rex");
    expect(await person()).toBe("");
    const refusal = group.run({ action: "remove", about: "person", old_text: "cat" }, context());
    await expect(refusal).rejects.toThrow(
      /no entry of .* holds "cat"; give a piece of one entry's text as "old_text"\.$/,
    );
    const removed = await group.run(
      { action: "remove", about: "person", old_text: "Rex" },
      context(),
    );
    expect(removed).toMatch(/^Removed the entry from/);
  });

  it("says there is no person in a conversation with none", async () => {
    await expect(
      tool(run({ person: null, writer: null })).run(
        { action: "add", about: "person", text: "x" },
        context(),
      ),
    ).rejects.toThrow(/with no one person/);
  });
});

describe("a memory over its budget", () => {
  it("takes no new entry, but shorter replacements and removals toward the budget", async () => {
    const over = ["a".repeat(70), "b".repeat(70)].join("\n§\n");
    await store.update({ agentId: "pickle", scope: ANA }, { by: "cli", at: 1 }, () => ({
      text: over,
      change: { action: "link", entry: over, previous: BEN },
    }));
    const memory = tool();
    await expect(
      memory.run({ action: "add", about: "person", text: "c" }, context()),
    ).rejects.toThrow(/is full: 143 of 100 characters used/);
    // Still over (113 of 100), but smaller: allowed.
    await memory.run(
      { action: "replace", about: "person", old_text: "aaa", text: "a".repeat(40) },
      context(),
    );
    expect(await person()).toBe(`${"a".repeat(40)}\n§\n${"b".repeat(70)}`);
    await memory.run({ action: "remove", about: "person", old_text: "bbb" }, context());
    await memory.run({ action: "add", about: "person", text: "c" }, context());
    expect(await person()).toBe(`${"a".repeat(40)}\n§\nc`);
  });
});
