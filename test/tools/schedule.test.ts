/**
 * The `schedule` tool as the model calls it, on the server's desk (chatSchedulesOfTurn)
 * with a memory store and a test clock: what it confirms, and each refusal.
 */
import { beforeEach, describe, expect, it } from "vitest";
import { gateTools } from "../../src/agents/approval-gate.js";
import { createScheduleTool } from "../../src/agents/tools/schedule.js";
import { chatSchedulesOfTurn } from "../../src/cron/chat-schedules.js";
import type { Tool, ToolContext } from "../../src/ports/index.js";
import { MemoryScheduleStore } from "../../src/storage/memory/schedules.js";
import { TestClock } from "../helpers/clock.js";
import { testConfig } from "../helpers/config.js";
import { newSchedule } from "../schedules/contract.js";

const CHAT = { kind: "telegram", chatId: "42" } as const;
const CONTEXT = {
  workspace: "/tmp",
  signal: new AbortController().signal,
  agentId: "main",
  sessionKey: "telegram:42",
} as ToolContext;

describe("schedule tool", () => {
  let store: MemoryScheduleStore;
  let clock: TestClock;
  beforeEach(() => {
    store = new MemoryScheduleStore();
    // Friday 2026-11-27 22:00 in Berlin, already Saturday 06:00 in Tokyo.
    clock = new TestClock("2026-11-27T21:00:00Z");
  });

  function tool(
    sessionKey = "telegram:42",
    yaml: Record<string, unknown> = {},
    replyTo: { kind: "telegram"; chatId: string } | { kind: "silent" } = CHAT,
  ): Tool {
    const config = testConfig("/tmp", {
      timezone: "Europe/Berlin",
      tools: { schedule: { max_per_chat: 2, min_interval_m: 60, ...yaml } },
    });
    return createScheduleTool(
      chatSchedulesOfTurn({ agentId: "main", sessionKey, replyTo }, { store, clock, config }),
    );
  }

  const run = (input: Record<string, unknown>, t = tool()) => t.run(input, CONTEXT);

  it("creates a one-shot reminder and confirms it as an absolute date and time with the zone", async () => {
    const answer = await run({
      action: "create",
      when: "in 1 minute",
      message: "call the dentist",
    });
    expect(answer).toMatch(
      /^Scheduled [a-z2-9]{6}: message "call the dentist" at 2026-11-27 22:01:00 Europe\/Berlin\./,
    );
    const [stored] = await store.list();
    expect(stored).toMatchObject({
      agentId: "main",
      chat: CHAT,
      kind: "message",
      text: "call the dentist",
      at: Date.parse("2026-11-27T21:01:00Z"),
      cron: null,
      timezone: "Europe/Berlin",
      state: "active",
    });
  });

  it("reads the time in the chat's person's zone from tools.schedule.time_zones, or the one named", async () => {
    const newYork = tool("telegram:42", { time_zones: { "telegram:42": "America/New_York" } });
    expect(
      await run({ action: "create", when: "tomorrow at 9:00", message: "stand-up" }, newYork),
    ).toMatch(/at 2026-11-28 09:00:00 America\/New_York/);
    expect(
      await run({
        action: "create",
        when: "tomorrow at 9:00",
        task: "news",
        timezone: "Asia/Tokyo",
      }),
    ).toMatch(/task "news" at 2026-11-29 09:00:00 Asia\/Tokyo/);
  });

  it("creates a recurring task from words and confirms its rule and next run", async () => {
    const answer = await run({ action: "create", repeat: "every weekday at 8", task: "weather?" });
    expect(answer).toMatch(
      /task "weather\?", .*\(0 8 \* \* 1-5, Europe\/Berlin\), next at 2026-11-30 08:00:00 Europe\/Berlin/,
    );
  });

  it("lists the chat's active schedules and cancels one by id, only in its own chat", async () => {
    await run({ action: "create", when: "in 2 hours", message: "tea" });
    const [made] = await store.list();
    const id = made?.id as string;
    expect(await run({ action: "list" })).toBe(
      `${id}: message "tea" at 2026-11-28 00:00:00 Europe/Berlin`,
    );
    const otherChat = tool("telegram:7", {}, { kind: "telegram", chatId: "7" });
    await expect(run({ action: "cancel", id }, otherChat)).rejects.toThrow(
      `schedule: this chat has no active schedule "${id}"; action "list" shows the ids`,
    );
    expect(await run({ action: "cancel", id })).toBe(`Cancelled ${id} (message "tea").`);
    expect(await run({ action: "list" })).toBe("This chat has no active schedules.");
    await expect(run({ action: "cancel" })).rejects.toThrow(/"id" is required to cancel/);
  });

  it("does not cancel a heartbeat: the owner turns it off; another chat's is no schedule of this one", async () => {
    const heartbeat = {
      kind: "heartbeat",
      text: "anything?",
      at: null,
      cron: "*/30 * * * *",
    } as const;
    await store.create(newSchedule("hb1", { ...heartbeat, chat: CHAT }), 10);
    await store.create(
      newSchedule("hb2", { ...heartbeat, chat: { kind: "telegram", chatId: "7" } }),
      10,
    );
    await expect(run({ action: "cancel", id: "hb1" })).rejects.toThrow(
      'schedule: "hb1" is this chat\'s heartbeat, which only the owner turns off (/heartbeat off)',
    );
    await expect(run({ action: "cancel", id: "hb2" })).rejects.toThrow(
      'schedule: this chat has no active schedule "hb2"',
    );
    expect((await store.list({ states: ["active"] })).map(({ id }) => id).sort()).toEqual([
      "hb1",
      "hb2",
    ]);
  });

  it("is refused by a deny entry of the approvals policy, like any tool, before anything is stored", async () => {
    const [gated] = gateTools([tool()], { schedule: "deny" }, undefined);
    await expect(
      gated?.run({ action: "create", when: "in 1 hour", message: "tea" }, CONTEXT),
    ).rejects.toThrow("schedule: the owner's approvals policy refuses this call (schedule: deny)");
    expect(await store.list()).toEqual([]);
  });

  describe("refuses, with an error the model can act on", () => {
    it.each([
      [{ when: "after lunch-ish", message: "x" }, /could not read "after lunch-ish" as a time/],
      [{ when: "yesterday at 9", message: "x" }, /is in the past .* give a time in the future/],
      [{ when: "2026-11-27T20:00:00Z", message: "x" }, /is in the past/],
      [
        { when: "tomorrow at 9", message: "x", timezone: "Mars/Olympus" },
        /"Mars\/Olympus" is not a time zone; use an IANA name/,
      ],
      [
        { repeat: "every 30 minutes", message: "x" },
        /"every 30 minutes" runs every 30 minutes; recurring schedules run at most every 1 hour \(tools\.schedule\.min_interval_m\)/,
      ],
      [
        { repeat: "every 10 seconds", message: "x" },
        /"every 10 seconds" runs every 10 seconds; recurring schedules run at most every 1 hour \(tools\.schedule\.min_interval_m\)/,
      ],
      [
        { repeat: "* * * * * *", message: "x" },
        /"\* \* \* \* \* \*" runs every 1 second; recurring schedules run at most every 1 hour/,
      ],
      [{ when: "now", message: "x" }, /"now" is in the past .* give a time in the future/],
      [{ when: "in 0 minutes", message: "x" }, /"in 0 minutes" is in the past/],
      [{ repeat: "every full moon", message: "x" }, /could not read repeat "every full moon"/],
      [
        { when: "in 1 hour", repeat: "every day at 8", message: "x" },
        /give "when" for a one-shot reminder or "repeat" for a recurring one \(exactly one/,
      ],
      [{ message: "x" }, /give "when" for a one-shot reminder or "repeat"/],
      [
        { when: "in 1 hour", message: "x", task: "y" },
        /give "message" \(sent verbatim when due\) or "task"/,
      ],
      [{ when: "in 1 hour" }, /give "message" .* or "task"/],
    ])("%j", async (input, error) => {
      await expect(run({ action: "create", ...input })).rejects.toThrow(error);
      expect(await store.list()).toEqual([]);
    });

    it("too many schedules in one chat", async () => {
      await run({ action: "create", when: "in 1 hour", message: "a" });
      await run({ action: "create", when: "in 2 hours", message: "b" });
      await expect(run({ action: "create", when: "in 3 hours", message: "c" })).rejects.toThrow(
        'schedule: this chat already has 2 active schedules, the most allowed (tools.schedule.max_per_chat); cancel one first (action "list" shows their ids)',
      );
    });

    it("a scheduled run, a cron run, a heartbeat tick or a subagent creating a schedule (no loops); listing still works", async () => {
      for (const key of [
        "schedule:k7m2qx:2026-11-27T21:00:00.000Z",
        "cron:daily:2026-11-27T08:00:00.000Z",
        "heartbeat:k7m2qx:2026-11-27T21:00:00.000Z",
        "subagent:1:job1:call1",
      ]) {
        await expect(
          run({ action: "create", when: "in 1 hour", message: "again" }, tool(key)),
        ).rejects.toThrow(
          /only a chat's own conversation creates schedules; this run .* may list and cancel them but not create one \(no loops\)/,
        );
      }
      expect(await run({ action: "list" }, tool("schedule:k7m2qx:2026-11-27T21:00:00.000Z"))).toBe(
        "This chat has no active schedules.",
      );
    });

    it("a conversation of no chat", async () => {
      await expect(
        run({ action: "list" }, tool("telegram:42", {}, { kind: "silent" })),
      ).rejects.toThrow(/this conversation is not a chat/);
    });
  });
});
