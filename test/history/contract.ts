/**
 * The HistoryStore contract, written once and run against every adapter
 * (test/history/sqlite.test.ts, test/history/jsonl.test.ts).
 */

import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { UserError } from "../../src/base/errors.js";
import type {
  ChatMessage,
  Clock,
  ContentBlock,
  HistoryStore,
  Session,
  TokenUsage,
  UsageLedger,
} from "../../src/ports/index.js";
import { TestClock } from "../helpers/clock.js";

/** A store under test, on storage that outlives it. */
export interface HistoryFixture {
  /** The store as first opened. */
  store: HistoryStore;
  /** Closes the current store and opens a new one on the same storage. */
  reopen(): Promise<HistoryStore>;
  /** Closes whatever is open and deletes the storage. */
  cleanup(): Promise<void>;
}

/** Opens a fresh, empty store whose times come from `clock`. */
export type HistoryFactory = (clock: Clock) => Promise<HistoryFixture>;

/** A user message with one text block. */
export function userText(text: string): ChatMessage {
  return { role: "user", content: [{ type: "text", text }] };
}

/** An assistant message with one text block. */
export function assistantText(text: string): ChatMessage {
  return { role: "assistant", content: [{ type: "text", text }] };
}

/** An assistant message calling tools, one `tool_use` per id. */
export function toolCalls(...ids: string[]): ChatMessage {
  return {
    role: "assistant",
    content: ids.map((id) => ({ type: "tool_use", id, name: "read", input: { path: `${id}.md` } })),
  };
}

/** A user message with one `tool_result` per id. */
export function toolResults(...ids: string[]): ChatMessage {
  return {
    role: "user",
    content: ids.map((id) => ({ type: "tool_result", tool_use_id: id, content: `result ${id}` })),
  };
}

/** Three turns (starts at 0, 2 and 8); the middle one calls tools twice. */
const THREE_TURNS: ChatMessage[] = [
  userText("Plan a trip to Lisbon"),
  assistantText("Sure: when?"),
  userText("What is the weather there?"),
  toolCalls("t1"),
  toolResults("t1"),
  toolCalls("t2", "t3"),
  toolResults("t2", "t3"),
  assistantText("Sunny, 24°C."),
  userText("Thanks!"),
  assistantText("You're welcome."),
];

/** Expected context length of {@link THREE_TURNS} for each `maxMessages`. */
const EXPECTED_CONTEXT_LENGTH: Record<number, number> = {
  1: 2, // the latest turn alone is longer than 1: returned whole
  2: 2,
  3: 2,
  7: 2, // a cut at 7 would start inside the tool turn
  8: 8,
  9: 8,
  10: 10,
  11: 10,
};

async function appendAll(store: HistoryStore, sessionId: string, messages: ChatMessage[]) {
  for (const message of messages) expect(await store.append(sessionId, message)).toBe(true);
}

/** Asserts what the model must never receive: a cut turn or an unpaired tool block. */
function expectWholeTurns(context: ChatMessage[]): void {
  const first = context[0];
  expect(first?.role).toBe("user");
  expect(first?.content.some((block) => block.type === "tool_result")).toBe(false);
  const blocks = context.flatMap((message) => message.content);
  const useIds = blocks.flatMap((block) => (block.type === "tool_use" ? [block.id] : []));
  const resultIds = blocks.flatMap((block) =>
    block.type === "tool_result" ? [block.tool_use_id] : [],
  );
  expect(resultIds.sort()).toEqual(useIds.sort());
}

function usage(input: number, output: number, cacheRead: number, cacheWrite: number): TokenUsage {
  return { input, output, cacheRead, cacheWrite };
}

/** Runs every HistoryStore behaviour against the stores `makeStore` opens. */
export function historyContract(name: string, makeStore: HistoryFactory): void {
  describe(`HistoryStore contract: ${name}`, () => {
    let clock: TestClock;
    let fixture: HistoryFixture;
    let store: HistoryStore;

    beforeEach(async () => {
      clock = new TestClock();
      fixture = await makeStore(clock);
      store = fixture.store;
    });

    afterEach(async () => {
      await fixture.cleanup();
    });

    it("creates a session that getSession returns as created", async () => {
      const created = await store.createSession({ key: "telegram:42", agentId: "pickle" });
      expect(created).toEqual({
        id: expect.any(String),
        key: "telegram:42",
        agentId: "pickle",
        title: null,
        createdAt: clock.now(),
        updatedAt: clock.now(),
        messageCount: 0,
        usage: usage(0, 0, 0, 0),
        model: null,
      } satisfies Session);
      expect(await store.getSession(created.id)).toEqual(created);
    });

    it("keeps the named model a session is created with or set to, across a reopen", async () => {
      const chosen = await store.createSession({ key: "k", agentId: "pickle", model: "haiku" });
      expect(chosen.model).toBe("haiku");
      const plain = await store.createSession({ key: "j", agentId: "pickle" });
      await store.setSessionModel(plain.id, "backup");
      await store.setSessionModel(chosen.id, null);
      store = await fixture.reopen();
      expect((await store.getSession(plain.id))?.model).toBe("backup");
      expect((await store.getSession(chosen.id))?.model).toBeNull();
      await expect(store.setSessionModel("s_missing", "x")).rejects.toThrow(
        /not in the history store/,
      );
    });

    it("gives every session its own id", async () => {
      const first = await store.createSession({ key: "k", agentId: "pickle" });
      const second = await store.createSession({ key: "k", agentId: "pickle" });
      expect(second.id).not.toBe(first.id);
    });

    it("answers null for a session or key it does not have", async () => {
      expect(await store.getSession("s_missing")).toBeNull();
      expect(await store.currentSession("telegram:404")).toBeNull();
    });

    it("makes the newest session of a key its current session", async () => {
      const old = await store.createSession({ key: "telegram:42", agentId: "pickle" });
      clock.advance(1000);
      const other = await store.createSession({ key: "discord:7", agentId: "pickle" });
      expect((await store.currentSession("telegram:42"))?.id).toBe(old.id);
      clock.advance(1000);
      const renewed = await store.createSession({ key: "telegram:42", agentId: "pickle" });
      expect((await store.currentSession("telegram:42"))?.id).toBe(renewed.id);
      expect((await store.currentSession("discord:7"))?.id).toBe(other.id);
    });

    it("makes the later of two sessions created in the same millisecond current", async () => {
      await store.createSession({ key: "console:main", agentId: "pickle" });
      const later = await store.createSession({ key: "console:main", agentId: "pickle" });
      expect((await store.currentSession("console:main"))?.id).toBe(later.id);
    });

    it("lists sessions newest first, by key, up to a limit", async () => {
      const ids: string[] = [];
      for (const key of ["a", "b", "a", "c", "a"]) {
        ids.push((await store.createSession({ key, agentId: "pickle" })).id);
        clock.advance(10);
      }
      const listedIds = async (options?: { key?: string; limit?: number }) =>
        (await store.listSessions(options)).map((session) => session.id);
      expect(await listedIds()).toEqual([...ids].reverse());
      expect(await listedIds({ key: "a" })).toEqual([ids[4], ids[2], ids[0]]);
      expect(await listedIds({ limit: 2 })).toEqual([ids[4], ids[3]]);
      expect(await listedIds({ key: "a", limit: 1 })).toEqual([ids[4]]);
      expect(await listedIds({ key: "nobody" })).toEqual([]);
    });

    it("lists at most 20 sessions by default", async () => {
      for (let count = 0; count < 23; count++) {
        await store.createSession({ key: `cron:daily:${count}`, agentId: "pickle" });
        clock.advance(1);
      }
      const listed = await store.listSessions();
      expect(listed).toHaveLength(20);
      expect(listed[0]?.key).toBe("cron:daily:22");
    });

    it("titles a session with the first line of its first user text", async () => {
      const session = await store.createSession({ key: "k", agentId: "pickle" });
      await store.append(session.id, toolResults("orphan"));
      expect((await store.getSession(session.id))?.title).toBeNull();
      await store.append(session.id, userText("  \n  Plan my week  \nwith all the details"));
      await store.append(session.id, userText("Something else entirely"));
      expect((await store.getSession(session.id))?.title).toBe("Plan my week");
    });

    it("cuts a long title to 80 characters", async () => {
      const session = await store.createSession({ key: "k", agentId: "pickle" });
      await store.append(session.id, userText("x".repeat(200)));
      expect((await store.getSession(session.id))?.title).toBe("x".repeat(80));
    });

    it("keeps text, tool_use and tool_result blocks exactly as appended", async () => {
      const session = await store.createSession({ key: "k", agentId: "pickle" });
      const toolUse: ContentBlock = {
        type: "tool_use",
        id: "toolu_01",
        name: "write",
        input: {
          path: "notes/🥒.md",
          content: 'a "quoted"\nline',
          meta: { tags: ["x", 1, null, true] },
        },
      };
      const messages: ChatMessage[] = [
        userText('Write "this"\n\twith tabs, ünïcode and 🥒'),
        { role: "assistant", content: [{ type: "text", text: "On it." }, toolUse] },
        {
          role: "user",
          content: [
            { type: "tool_result", tool_use_id: "toolu_01", content: "disk full", is_error: true },
          ],
        },
        toolCalls("toolu_02"),
        toolResults("toolu_02"),
        assistantText(""),
      ];
      await appendAll(store, session.id, messages);
      expect(await store.loadContext(session.id, 100)).toStrictEqual(messages);
    });

    it("appends a job's message once, however often the job retries", async () => {
      const session = await store.createSession({ key: "k", agentId: "pickle" });
      expect(await store.append(session.id, userText("hello"), { jobId: "job-1" })).toBe(true);
      expect(await store.append(session.id, userText("hello"), { jobId: "job-1" })).toBe(false);
      expect(await store.loadContext(session.id, 10)).toEqual([userText("hello")]);
      expect((await store.getSession(session.id))?.messageCount).toBe(1);
    });

    it("reads every message of a session for a transcript, compacted ones included, with time and job", async () => {
      const session = await store.createSession({ key: "k", agentId: "pickle" });
      const start = clock.now();
      await store.append(session.id, userText("first"), { jobId: "job-1" });
      clock.advance(1000);
      await store.append(session.id, assistantText("one"));
      const point: ChatMessage = {
        role: "user",
        content: [{ type: "compaction", summary: "They said first.", replaces: 2 }],
      };
      await store.append(session.id, point);
      await store.append(session.id, userText("second"), { jobId: "job-2" });
      expect(await store.messages(session.id)).toEqual([
        { ...userText("first"), at: start, jobId: "job-1" },
        { ...assistantText("one"), at: start + 1000, jobId: null },
        { ...point, at: start + 1000, jobId: null },
        { ...userText("second"), at: start + 1000, jobId: "job-2" },
      ]);
      expect(await store.messages("no-such-session")).toEqual([]);
    });

    it("appends messages without a job id every time", async () => {
      const session = await store.createSession({ key: "k", agentId: "pickle" });
      await appendAll(store, session.id, [userText("again"), userText("again")]);
      expect(await store.loadContext(session.id, 10)).toHaveLength(2);
    });

    it("scopes job ids to their session", async () => {
      const first = await store.createSession({ key: "a", agentId: "pickle" });
      const second = await store.createSession({ key: "b", agentId: "pickle" });
      expect(await store.append(first.id, userText("hi"), { jobId: "job-1" })).toBe(true);
      expect(await store.append(second.id, userText("hi"), { jobId: "job-1" })).toBe(true);
    });

    it("sums token usage and counts messages, updating updatedAt", async () => {
      const session = await store.createSession({ key: "k", agentId: "pickle" });
      clock.advance(5000);
      await store.append(session.id, userText("hi"));
      await store.append(session.id, toolCalls("t1"), { usage: usage(100, 20, 5, 1) });
      await store.append(session.id, toolResults("t1"));
      clock.advance(5000);
      await store.append(session.id, assistantText("done"), { usage: usage(150, 30, 100, 0) });
      const updated = await store.getSession(session.id);
      expect(updated?.usage).toEqual(usage(250, 50, 105, 1));
      expect(updated?.messageCount).toBe(4);
      expect(updated?.createdAt).toBe(session.createdAt);
      expect(updated?.updatedAt).toBe(session.createdAt + 10_000);
    });

    it("records each model call in the usage ledger with its message, and only those", async () => {
      const ledger = store as HistoryStore & UsageLedger;
      const chat = await store.createSession({ key: "telegram:7", agentId: "pickle" });
      const cron = await store.createSession({ key: "cron:news:1", agentId: "scout" });
      const start = clock.now();
      await store.append(chat.id, userText("hi"), { jobId: "job-1" });
      clock.advance(1000);
      const call = { model: "claude-sonnet-4-5", jobId: "job-1" };
      const oneHourWrite = { ...usage(100, 20, 5, 3), cacheWrite1h: 2, webSearches: 3 };
      await store.append(chat.id, toolCalls("t1"), { usage: oneHourWrite, call });
      await store.append(chat.id, toolResults("t1"));
      clock.advance(1000);
      const batch = { model: "claude-haiku-4-5", batch: true };
      await store.append(cron.id, assistantText("news"), { usage: usage(7, 3, 0, 0), call: batch });
      await store.append(chat.id, assistantText("old"), { usage: usage(1, 1, 0, 0) });
      expect(await ledger.calls({ since: start })).toEqual([
        {
          at: start + 1000,
          agentId: "pickle",
          sessionId: chat.id,
          sessionKey: "telegram:7",
          jobId: "job-1",
          model: "claude-sonnet-4-5",
          batch: false,
          ...oneHourWrite,
        },
        {
          at: start + 2000,
          agentId: "scout",
          sessionId: cron.id,
          sessionKey: "cron:news:1",
          jobId: null,
          model: "claude-haiku-4-5",
          batch: true,
          ...usage(7, 3, 0, 0),
        },
        expect.objectContaining({ at: start + 2000, model: "unknown", jobId: null }),
      ]);
      expect(await ledger.calls({ since: start + 1500, sessionId: chat.id })).toHaveLength(1);
      expect(await ledger.calls({ since: start, until: start + 1500 })).toHaveLength(1);
      const reopened = (await fixture.reopen()) as HistoryStore & UsageLedger;
      expect(await reopened.calls({ since: start })).toHaveLength(3);
    });

    it("rejects an append to a session it does not have, naming the session", async () => {
      const appending = store.append("s_missing", userText("hi"));
      await expect(appending).rejects.toThrow(UserError);
      await expect(store.append("s_missing", userText("hi"))).rejects.toThrow(/"s_missing"/);
    });

    it("loads an empty context for an empty or unknown session", async () => {
      const session = await store.createSession({ key: "k", agentId: "pickle" });
      expect(await store.loadContext(session.id, 10)).toEqual([]);
      expect(await store.loadContext("s_missing", 10)).toEqual([]);
    });

    it("cuts the context only at turn starts, keeping tool pairs whole", async () => {
      const session = await store.createSession({ key: "k", agentId: "pickle" });
      await appendAll(store, session.id, THREE_TURNS);
      for (const [max, length] of Object.entries(EXPECTED_CONTEXT_LENGTH)) {
        const context = await store.loadContext(session.id, Number(max));
        expect(context, `maxMessages ${max}`).toEqual(THREE_TURNS.slice(-length));
        expectWholeTurns(context);
      }
    });

    it("returns a turn longer than maxMessages whole", async () => {
      const session = await store.createSession({ key: "k", agentId: "pickle" });
      const longTurn = [userText("Read all my notes")];
      for (const id of ["n1", "n2", "n3", "n4"]) longTurn.push(toolCalls(id), toolResults(id));
      longTurn.push(assistantText("Read them all."));
      await appendAll(store, session.id, [userText("hi"), assistantText("hello"), ...longTurn]);
      for (const max of [1, 2, 3, 8]) {
        expect(await store.loadContext(session.id, max), `maxMessages ${max}`).toEqual(longTurn);
      }
    });

    it("starts the context at the turns a compaction point keeps, and nothing earlier", async () => {
      const session = await store.createSession({ key: "k", agentId: "pickle" });
      // The last two turns, then the memory save stored before the point.
      const kept = THREE_TURNS.slice(2);
      const save: ChatMessage = {
        role: "assistant",
        content: [{ type: "memory_save", calls: [] }],
      };
      const point: ChatMessage = {
        role: "user",
        content: [{ type: "compaction", summary: "Earlier turns.", replaces: 2, keeps: 9 }],
      };
      await appendAll(store, session.id, [...THREE_TURNS, save, point, userText("next")]);
      expect(await store.loadContext(session.id, 200)).toEqual([
        ...kept,
        save,
        point,
        userText("next"),
      ]);
      // max_messages still wins: the context starts at the latest turn start it allows.
      expect(await store.loadContext(session.id, 3)).toEqual([point, userText("next")]);
    });

    it("ends the context with tool calls still waiting for results", async () => {
      const session = await store.createSession({ key: "k", agentId: "pickle" });
      const turn = [userText("list my files"), toolCalls("t1")];
      await appendAll(store, session.id, [userText("hi"), assistantText("hello"), ...turn]);
      expect(await store.loadContext(session.id, 2)).toEqual(turn);
      expect(await store.loadContext(session.id, 4)).toHaveLength(4);
    });

    it("keeps the messages of each session apart", async () => {
      const first = await store.createSession({ key: "telegram:1", agentId: "pickle" });
      const second = await store.createSession({ key: "telegram:2", agentId: "pickle" });
      await store.append(first.id, userText("first question"));
      await store.append(second.id, userText("second question"));
      await store.append(first.id, assistantText("first answer"));
      await store.append(second.id, assistantText("second answer"));
      expect(await store.loadContext(first.id, 10)).toEqual([
        userText("first question"),
        assistantText("first answer"),
      ]);
      expect(await store.loadContext(second.id, 10)).toEqual([
        userText("second question"),
        assistantText("second answer"),
      ]);
    });

    it("keeps sessions, messages, titles, usage and job ids across close and reopen", async () => {
      const older = await store.createSession({ key: "telegram:1", agentId: "pickle" });
      clock.advance(1000);
      const newer = await store.createSession({ key: "telegram:1", agentId: "helper" });
      await store.append(newer.id, userText("Remember me"), { jobId: "job-9" });
      await store.append(newer.id, assistantText("I will."), { usage: usage(10, 5, 0, 2) });
      const before = await store.listSessions();

      store = await fixture.reopen();

      expect(await store.listSessions()).toEqual(before);
      expect((await store.currentSession("telegram:1"))?.id).toBe(newer.id);
      expect(await store.getSession(older.id)).toEqual(older);
      const reopened = await store.getSession(newer.id);
      expect(reopened).toMatchObject({ title: "Remember me", messageCount: 2, agentId: "helper" });
      expect(reopened?.usage).toEqual(usage(10, 5, 0, 2));
      expect(await store.append(newer.id, userText("Remember me"), { jobId: "job-9" })).toBe(false);
      expect(await store.append(newer.id, userText("Still there?"))).toBe(true);
      expect(await store.loadContext(newer.id, 10)).toEqual([
        userText("Remember me"),
        assistantText("I will."),
        userText("Still there?"),
      ]);
    });
  });
}
