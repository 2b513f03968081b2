/**
 * The MemoryStore and RecallStore suite, written once as a function of a factory so every
 * backend (SQLite, PostgreSQL) runs the same cases. The search cases store messages
 * through the backend's own history store, as the server does.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { UserError } from "../../src/base/errors.js";
import { memoryEntries, memoryText } from "../../src/base/memory-text.js";
import {
  AGENT_SCOPE,
  type ChatMessage,
  type HistoryStore,
  type MemoryEditor,
  type MemoryOrigin,
  type MemoryStore,
  type RecallStore,
  type SessionMemory,
} from "../../src/ports/index.js";
import type { StoreHandle } from "../helpers/stores.js";

/** The stores of one backend on one database. */
export interface MemoryStores {
  memory: MemoryStore;
  recall: RecallStore;
  history: HistoryStore;
}

const ANA = "telegram:1001";
const BEN = "telegram:1002";

/** An editor adding `entry` at the end. */
function adding(entry: string): MemoryEditor {
  return (current) => ({
    text: memoryText([...memoryEntries(current), entry]),
    change: { action: "add", entry, previous: null },
  });
}

function byAgent(at: number, call?: { sessionId: string; callId: string }): MemoryOrigin {
  return { by: "agent", at, jobId: "job-1", ...call };
}

function said(role: ChatMessage["role"], text: string): ChatMessage {
  return { role, content: [{ type: "text", text }] };
}

/** Runs the memory contract against a factory. */
export function memoryContract(name: string, open: () => Promise<StoreHandle<MemoryStores>>): void {
  describe(`MemoryStore and RecallStore contract: ${name}`, () => {
    let handle: StoreHandle<MemoryStores>;
    let memory: MemoryStore;
    let recall: RecallStore;
    let history: HistoryStore;
    beforeEach(async () => {
      handle = await open();
      ({ memory, recall, history } = handle.store);
    });
    afterEach(() => handle.cleanup());

    describe("memories", () => {
      it("reads a memory never written as empty", async () => {
        expect(await memory.read("pickle", AGENT_SCOPE)).toEqual({
          agentId: "pickle",
          scope: AGENT_SCOPE,
          text: "",
          updatedAt: null,
        });
        expect(await memory.list()).toEqual([]);
      });

      it("stores what the editor decides from the current text, with its change", async () => {
        await memory.update({ agentId: "pickle", scope: ANA }, byAgent(10), adding("Cat: Miso"));
        const seen: string[] = [];
        const result = await memory.update(
          { agentId: "pickle", scope: ANA },
          byAgent(20, { sessionId: "s1", callId: "toolu_1" }),
          (current) => {
            seen.push(current);
            return adding("Dentist on Tuesday")(current);
          },
        );
        expect(seen).toEqual(["Cat: Miso"]);
        expect(result).toMatchObject({
          status: "applied",
          text: "Cat: Miso\n§\nDentist on Tuesday",
          change: {
            agentId: "pickle",
            scope: ANA,
            action: "add",
            entry: "Dentist on Tuesday",
            previous: null,
            by: "agent",
            jobId: "job-1",
            sessionId: "s1",
            callId: "toolu_1",
            at: 20,
          },
        });
        expect(await memory.read("pickle", ANA)).toEqual({
          agentId: "pickle",
          scope: ANA,
          text: "Cat: Miso\n§\nDentist on Tuesday",
          updatedAt: 20,
        });
        expect(await memory.read("other", ANA)).toMatchObject({ text: "" });
      });

      it("stores nothing when the editor refuses", async () => {
        const result = await memory.update(
          { agentId: "pickle", scope: AGENT_SCOPE },
          byAgent(10),
          () => ({ refused: "too long" }),
        );
        expect(result).toEqual({ status: "refused", reason: "too long" });
        expect(await memory.list()).toEqual([]);
        expect(await memory.changes()).toEqual([]);
      });

      it("writes a tool call's change once, after a restart too", async () => {
        const call = { sessionId: "s1", callId: "toolu_1" };
        const first = await memory.update(
          { agentId: "pickle", scope: AGENT_SCOPE },
          byAgent(10, call),
          adding("The server is called tater"),
        );
        memory = (await handle.reopen()).memory;
        let called = false;
        const again = await memory.update(
          { agentId: "pickle", scope: AGENT_SCOPE },
          byAgent(11, call),
          (current) => {
            called = true;
            return adding("The server is called tater")(current);
          },
        );
        expect(called).toBe(false);
        expect(again).toEqual({
          status: "repeated",
          change: (first as { change: unknown }).change,
        });
        expect((await memory.read("pickle", AGENT_SCOPE)).text).toBe("The server is called tater");
        expect(await memory.changes()).toHaveLength(1);
        // The same call id in another session is another call.
        const other = await memory.update(
          { agentId: "pickle", scope: AGENT_SCOPE },
          byAgent(12, { sessionId: "s2", callId: "toolu_1" }),
          adding("It runs Debian"),
        );
        expect(other.status).toBe("applied");
      });

      it("loses no change when many are made at once", async () => {
        const entries = Array.from({ length: 12 }, (_, i) => `Fact ${i}`);
        await Promise.all(
          entries.map((entry, i) =>
            memory.update(
              { agentId: "pickle", scope: AGENT_SCOPE },
              byAgent(i, { sessionId: "s1", callId: `call-${i}` }),
              adding(entry),
            ),
          ),
        );
        const stored = memoryEntries((await memory.read("pickle", AGENT_SCOPE)).text);
        expect(stored.sort()).toEqual([...entries].sort());
      });

      it("removes the memory when its text becomes empty", async () => {
        await memory.update({ agentId: "pickle", scope: ANA }, byAgent(1), adding("Cat: Miso"));
        await memory.update({ agentId: "pickle", scope: ANA }, { by: "cli", at: 2 }, () => ({
          text: "",
          change: { action: "clear", entry: null, previous: "Cat: Miso" },
        }));
        expect(await memory.read("pickle", ANA)).toMatchObject({ text: "", updatedAt: null });
        expect(await memory.list()).toEqual([]);
        expect((await memory.changes()).map((change) => change.action)).toEqual(["clear", "add"]);
      });

      it("lists memories by agent and scope, and changes newest first by agent and scope", async () => {
        await memory.update({ agentId: "pickle", scope: BEN }, byAgent(1), adding("b"));
        await memory.update({ agentId: "coder", scope: AGENT_SCOPE }, byAgent(2), adding("c"));
        await memory.update({ agentId: "pickle", scope: ANA }, byAgent(3), adding("a"));
        await memory.update({ agentId: "pickle", scope: AGENT_SCOPE }, byAgent(4), adding("n"));
        const listed = (await memory.list()).map((m) => `${m.agentId}/${m.scope}`);
        expect(listed).toEqual(["coder/agent", "pickle/agent", `pickle/${ANA}`, `pickle/${BEN}`]);
        expect((await memory.list("coder")).map((m) => m.text)).toEqual(["c"]);
        expect((await memory.changes()).map((c) => c.entry)).toEqual(["n", "a", "c", "b"]);
        expect((await memory.changes({ agentId: "pickle" })).map((c) => c.entry)).toEqual([
          "n",
          "a",
          "b",
        ]);
        expect((await memory.changes({ scope: ANA })).map((c) => c.entry)).toEqual(["a"]);
        expect((await memory.changes({ limit: 1 })).map((c) => c.entry)).toEqual(["n"]);
      });
    });

    describe("links", () => {
      const DISCORD = "discord:80351110224678912";

      it("merges the linked key's memories into the other's, and reads them through the link", async () => {
        await memory.update({ agentId: "pickle", scope: ANA }, byAgent(1), adding("Cat: Miso"));
        await memory.update({ agentId: "pickle", scope: DISCORD }, byAgent(2), adding("Cat: Miso"));
        await memory.update({ agentId: "pickle", scope: DISCORD }, byAgent(3), adding("Likes tea"));
        await memory.update({ agentId: "coder", scope: DISCORD }, byAgent(4), adding("Uses vim"));
        const link = await memory.link(DISCORD, ANA, { by: "cli", at: 5 });
        expect(link).toEqual({ person: DISCORD, linkedTo: ANA, at: 5 });
        expect((await memory.read("pickle", DISCORD)).text).toBe("Cat: Miso\n§\nLikes tea");
        expect(await memory.read("pickle", DISCORD)).toMatchObject({ scope: ANA });
        expect((await memory.read("coder", ANA)).text).toBe("Uses vim");
        expect((await memory.list()).map((m) => `${m.agentId}/${m.scope}`)).toEqual([
          `coder/${ANA}`,
          `pickle/${ANA}`,
        ]);
        const linked = await memory.changes({ scope: ANA });
        expect(linked.filter((c) => c.action === "link").map((c) => [c.entry, c.previous])).toEqual(
          [
            ["Likes tea", DISCORD],
            ["Uses vim", DISCORD],
          ],
        );
        // Writes through the link land in the shared memory.
        await memory.update({ agentId: "pickle", scope: DISCORD }, byAgent(6), adding("Dentist"));
        expect((await memory.read("pickle", ANA)).text).toBe("Cat: Miso\n§\nLikes tea\n§\nDentist");
        expect(await memory.links()).toEqual([{ person: DISCORD, linkedTo: ANA, at: 5 }]);
      });

      it("keeps links one step deep, refuses a loop, and unlinks", async () => {
        await memory.link(BEN, ANA, { by: "cli", at: 1 });
        await memory.link(DISCORD, BEN, { by: "cli", at: 2 });
        expect(await memory.links()).toEqual([
          { person: DISCORD, linkedTo: ANA, at: 2 },
          { person: BEN, linkedTo: ANA, at: 1 },
        ]);
        await expect(memory.link(ANA, BEN, { by: "cli", at: 3 })).rejects.toThrow(UserError);
        await expect(memory.link(ANA, ANA, { by: "cli", at: 3 })).rejects.toThrow(UserError);
        // Linking the target elsewhere moves the keys linked to it along.
        await memory.link(ANA, "owner", { by: "cli", at: 4 });
        expect((await memory.links()).map((l) => [l.person, l.linkedTo])).toEqual([
          [DISCORD, "owner"],
          [ANA, "owner"],
          [BEN, "owner"],
        ]);
        expect(await memory.unlink(BEN)).toBe(true);
        expect(await memory.unlink(BEN)).toBe(false);
        expect((await memory.links()).map((l) => l.person)).toEqual([DISCORD, ANA]);
      });
    });

    describe("sessions' memory", () => {
      const record = (overrides: Partial<SessionMemory> = {}): SessionMemory => ({
        sessionId: "s1",
        sessionKey: "telegram:1001",
        agentId: "pickle",
        person: ANA,
        snapshot: "Cat: Miso",
        takenAt: 100,
        ...overrides,
      });

      it("keeps the first snapshot until a retake, and a person once known", async () => {
        expect(await recall.session("s1")).toBeNull();
        expect(await recall.snapshot(record({ person: null }))).toEqual(record({ person: null }));
        const second = await recall.snapshot(record({ snapshot: "changed", takenAt: 200 }));
        expect(second).toEqual(record());
        expect(await recall.session("s1")).toEqual(record());
        await recall.retake("s1");
        expect(await recall.session("s1")).toEqual(record({ snapshot: null, takenAt: null }));
        const retaken = await recall.snapshot(
          record({ snapshot: "new", takenAt: 300, person: BEN }),
        );
        expect(retaken).toEqual(record({ snapshot: "new", takenAt: 300 }));
      });

      it("names a chat's person from its newest session that has one", async () => {
        expect(await recall.personOf("telegram:1001")).toBeNull();
        await recall.snapshot(record({ sessionId: "s1", takenAt: 1 }));
        await recall.snapshot(record({ sessionId: "s2", person: null, takenAt: 3 }));
        expect(await recall.personOf("telegram:1001")).toBe(ANA);
        await recall.snapshot(record({ sessionId: "s3", person: BEN, takenAt: 5 }));
        expect(await recall.personOf("telegram:1001")).toBe(BEN);
      });
    });

    describe("search", () => {
      /** A session of `agentId` with `person`, holding `texts` (user, assistant, …). */
      async function conversation(
        key: string,
        person: string | null,
        texts: string[],
        agentId = "pickle",
      ): Promise<string> {
        const session = await history.createSession({ key, agentId });
        await recall.snapshot({
          sessionId: session.id,
          sessionKey: key,
          agentId,
          person,
          snapshot: "",
          takenAt: 1,
        });
        for (const [i, text] of texts.entries()) {
          await history.append(session.id, said(i % 2 === 0 ? "user" : "assistant", text));
        }
        return session.id;
      }

      it("finds a person's older message by its words, stemmed, with its session and place", async () => {
        const old = await conversation("telegram:1001", ANA, [
          "Let's plan the garden for spring",
          "Tomatoes by the fence, beans along the path.",
        ]);
        await conversation("telegram:1001", ANA, ["What's the weather?", "Sunny."]);
        const hits = await recall.search({
          scope: { agentId: "pickle", persons: [ANA] },
          text: "what did we say about gardening?",
        });
        expect(hits).toHaveLength(1);
        expect(hits[0]).toMatchObject({
          sessionId: old,
          sessionKey: "telegram:1001",
          seq: 1,
          role: "user",
        });
        expect(hits[0]?.snippet).toContain("[garden]");
        expect(hits[0]?.at).toBeGreaterThan(0);
      });

      it("never reads another person's, another agent's or, by key, another chat's sessions", async () => {
        await conversation("telegram:1002", BEN, ["My garden is tiny"]);
        await conversation("telegram:1001", ANA, ["My garden is big"], "coder");
        await conversation("telegram:-100", null, ["The group's garden"]);
        const ana = await recall.search({
          scope: { agentId: "pickle", persons: [ANA] },
          text: "garden",
        });
        expect(ana).toEqual([]);
        const ben = await recall.search({
          scope: { agentId: "pickle", persons: [BEN, ANA] },
          text: "garden",
        });
        expect(ben.map((hit) => hit.snippet)).toEqual(["My [garden] is tiny"]);
        const group = await recall.search({
          scope: { agentId: "pickle", sessionKey: "telegram:-100" },
          text: "garden",
        });
        expect(group.map((hit) => hit.sessionKey)).toEqual(["telegram:-100"]);
      });

      it("indexes what was said, not tool calls or their outputs", async () => {
        const session = await conversation("console:ana", "owner", ["Look up the recipe"]);
        await history.append(session, {
          role: "assistant",
          content: [{ type: "tool_use", id: "t1", name: "read", input: { path: "pancake.md" } }],
        });
        await history.append(session, {
          role: "user",
          content: [{ type: "tool_result", tool_use_id: "t1", content: "pancake flour eggs" }],
        });
        await history.append(session, said("assistant", "Found the pancake recipe."));
        const scope = { agentId: "pickle", persons: ["owner"] };
        expect(await recall.search({ scope, text: "flour" })).toEqual([]);
        const hits = await recall.search({ scope, text: "pancake" });
        expect(hits.map((hit) => hit.seq)).toEqual([4]);
      });

      it("ranks messages with more of the words first, and keeps to the limit", async () => {
        await conversation("console:ana", "owner", [
          "garden",
          "garden tomatoes",
          "garden",
          "garden",
          "garden",
          "garden",
          "garden",
        ]);
        const scope = { agentId: "pickle", persons: ["owner"] };
        const hits = await recall.search({ scope, text: "garden tomatoes" });
        expect(hits).toHaveLength(5);
        expect(hits[0]?.seq).toBe(2);
        expect(await recall.search({ scope, text: "garden", limit: 2 })).toHaveLength(2);
        expect(await recall.search({ scope, text: "garden", limit: 500 })).toHaveLength(7);
      });

      it("takes any text as a query: quotes, operators and no words at all", async () => {
        await conversation("console:ana", "owner", ['He said "NEAR" AND OR * ( garden']);
        const scope = { agentId: "pickle", persons: ["owner"] };
        expect(await recall.search({ scope, text: '"garden" AND (OR) * -x NEAR:' })).toHaveLength(
          1,
        );
        expect(await recall.search({ scope, text: "?! … ***" })).toEqual([]);
      });
    });
  });
}
