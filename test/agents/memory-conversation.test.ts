/**
 * Whose memory a run reads and writes (agents/memory/conversation.ts), for each kind of
 * conversation, on real SQLite stores.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { runMemoryOf } from "../../src/agents/memory/conversation.js";
import { DEFAULT_MEMORY } from "../../src/agents/memory/settings.js";
import type { MemoryStore, RecallStore } from "../../src/ports/index.js";
import { SqliteMemoryStore, SqliteRecallStore } from "../../src/storage/sqlite/memory.js";
import { onTempDatabase, type StoreHandle } from "../helpers/stores.js";

let handle: StoreHandle<{ memory: MemoryStore; recall: RecallStore }>;

beforeEach(async () => {
  handle = await onTempDatabase((db) => ({
    memory: new SqliteMemoryStore({ db }),
    recall: new SqliteRecallStore({ db }),
  }));
});
afterEach(() => handle.cleanup());

const agent = { id: "pickle", memory: DEFAULT_MEMORY };

function of(sessionKey: string, more: Record<string, unknown> = {}) {
  return runMemoryOf({ agent, sessionKey, ...more }, handle.store);
}

describe("runMemoryOf", () => {
  it("is the sender's in a private chat, through their links", async () => {
    await handle.store.memory.link("discord:55", "telegram:7", { by: "cli", at: 1 });
    const run = await of("telegram:7", { sender: { person: "telegram:7", direct: true } });
    expect(run).toEqual({
      agentId: "pickle",
      settings: DEFAULT_MEMORY,
      writable: true,
      person: "telegram:7",
      writer: "telegram:7",
      recall: { agentId: "pickle", persons: ["telegram:7", "discord:55"] },
    });
  });

  it("writes the sender's in a group, shows no one's and searches the group's sessions", async () => {
    const run = await of("telegram:-100", { sender: { person: "telegram:7", direct: false } });
    expect(run).toMatchObject({
      person: null,
      writer: "telegram:7",
      recall: { agentId: "pickle", sessionKey: "telegram:-100" },
    });
  });

  it("is the owner's in the terminal and the dashboard", async () => {
    for (const key of ["console:ana", "web:pickle:ab12cd34"]) {
      expect(await of(key)).toMatchObject({ person: "owner", writer: "owner", writable: true });
    }
  });

  it("is read-only, and no one's, for a subagent; read-only for an agent that says so", async () => {
    expect(await of("subagent:1:job-1:toolu_1")).toMatchObject({
      writable: false,
      person: null,
      writer: null,
      recall: null,
    });
    const readOnly = await runMemoryOf(
      {
        agent: { id: "pickle", memory: { ...DEFAULT_MEMORY, readOnly: true } },
        sessionKey: "console:ana",
      },
      handle.store,
    );
    expect(readOnly?.writable).toBe(false);
    expect(
      await runMemoryOf(
        { agent: { id: "x", memory: null }, sessionKey: "console:ana" },
        handle.store,
      ),
    ).toBeNull();
  });
});
