/**
 * The ScheduleStore suite, written once as a function of a factory so every adapter
 * (SQLite, PostgreSQL, memory) runs the same cases.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { NewSchedule, ScheduleStore } from "../../src/ports/index.js";
import type { StoreHandle } from "../helpers/stores.js";

const CHAT = { kind: "telegram", chatId: "42" } as const;
const OTHER_CHAT = { kind: "discord", chatId: "7" } as const;

/** A one-shot reminder of {@link CHAT}, made at `createdAt`. */
export function newSchedule(id: string, overrides: Partial<NewSchedule> = {}): NewSchedule {
  return {
    id,
    agentId: "main",
    chat: CHAT,
    createdBy: "1001",
    kind: "message",
    text: "call the dentist",
    at: 60_000,
    cron: null,
    timezone: "Europe/Berlin",
    createdAt: 1000,
    ...overrides,
  };
}

/** Runs the ScheduleStore contract against a factory. */
export function scheduleContract(
  name: string,
  open: () => Promise<StoreHandle<ScheduleStore>>,
): void {
  describe(`ScheduleStore contract: ${name}`, () => {
    let handle: StoreHandle<ScheduleStore>;
    let schedules: ScheduleStore;
    beforeEach(async () => {
      handle = await open();
      schedules = handle.store;
    });
    afterEach(() => handle.cleanup());

    it("stores a one-shot and a recurring schedule and reads them back after a reopen", async () => {
      const once = await schedules.create(newSchedule("r1"), 10);
      const weekly = newSchedule("r2", {
        at: null,
        cron: "0 8 * * 1-5",
        kind: "task",
        createdAt: 2000,
      });
      await schedules.create(weekly, 10);
      expect(once).toEqual({
        ...newSchedule("r1"),
        state: "active",
        lastFiredAt: null,
        cancelledAt: null,
      });
      const reopened = await handle.reopen();
      expect(await reopened.get("r2")).toEqual({
        ...weekly,
        state: "active",
        lastFiredAt: null,
        cancelledAt: null,
      });
      expect((await reopened.list()).map((schedule) => schedule.id)).toEqual(["r1", "r2"]);
      expect(await reopened.get("nope")).toBeNull();
    });

    it("stores a heartbeat (kind heartbeat, recurring) and records its ticks", async () => {
      const heartbeat = newSchedule("h1", {
        kind: "heartbeat",
        text: "anything new?",
        at: null,
        cron: "*/30 * * * *",
      });
      expect(await schedules.create(heartbeat, 10)).toMatchObject({ kind: "heartbeat" });
      expect(await schedules.recordFired("h1", 1_800_000, { done: false })).toBe(true);
      expect(await schedules.recordFired("h1", 1_800_000, { done: false })).toBe(false);
      expect(await schedules.get("h1")).toMatchObject({ state: "active", lastFiredAt: 1_800_000 });
    });

    it("refuses a schedule over the chat's limit of active ones, and counts only that chat's active ones", async () => {
      expect(await schedules.create(newSchedule("a"), 2)).not.toBeNull();
      expect(await schedules.create(newSchedule("b"), 2)).not.toBeNull();
      expect(await schedules.create(newSchedule("c"), 2)).toBeNull();
      expect(await schedules.get("c")).toBeNull();
      expect(await schedules.create(newSchedule("d", { chat: OTHER_CHAT }), 2)).not.toBeNull();
      await schedules.cancel("a", 5000);
      expect(await schedules.create(newSchedule("e"), 2)).not.toBeNull();
    });

    it("leaves the chat's heartbeat out of its limit of active reminders", async () => {
      const heartbeat = { kind: "heartbeat", at: null, cron: "*/30 * * * *" } as const;
      expect(
        await schedules.create(newSchedule("h", heartbeat), Number.MAX_SAFE_INTEGER),
      ).not.toBeNull();
      expect(await schedules.create(newSchedule("a"), 2)).not.toBeNull();
      expect(await schedules.create(newSchedule("b"), 2)).not.toBeNull();
      expect(await schedules.create(newSchedule("c"), 2)).toBeNull();
    });

    it("two creators racing for the last slot store one schedule", async () => {
      const results = await Promise.all([
        schedules.create(newSchedule("x"), 1),
        schedules.create(newSchedule("y"), 1),
      ]);
      expect(results.filter((result) => result !== null)).toHaveLength(1);
      expect(await schedules.list({ chat: CHAT })).toHaveLength(1);
    });

    it("lists by chat and by state", async () => {
      await schedules.create(newSchedule("a"), 10);
      await schedules.create(newSchedule("b", { chat: OTHER_CHAT }), 10);
      await schedules.create(newSchedule("c", { createdAt: 3000 }), 10);
      await schedules.cancel("c", 4000);
      expect((await schedules.list({ chat: CHAT })).map((s) => s.id)).toEqual(["a", "c"]);
      expect((await schedules.list({ states: ["active"] })).map((s) => s.id)).toEqual(["a", "b"]);
      expect(
        (await schedules.list({ chat: CHAT, states: ["cancelled"] })).map((s) => [
          s.id,
          s.cancelledAt,
        ]),
      ).toEqual([["c", 4000]]);
    });

    it("cancels an active schedule once, and only from its own chat when a chat is given", async () => {
      await schedules.create(newSchedule("a"), 10);
      expect(await schedules.cancel("a", 5000, OTHER_CHAT)).toBeNull();
      const cancelled = await schedules.cancel("a", 5000, CHAT);
      expect(cancelled).toMatchObject({ id: "a", state: "cancelled", cancelledAt: 5000 });
      expect(await schedules.cancel("a", 6000)).toBeNull();
      expect(await schedules.cancel("missing", 6000)).toBeNull();
    });

    it("records a fired occurrence once; an older or equal one, or a cancelled schedule, changes nothing", async () => {
      await schedules.create(newSchedule("w", { at: null, cron: "* * * * *" }), 10);
      expect(await schedules.recordFired("w", 120_000, { done: false })).toBe(true);
      expect(await schedules.recordFired("w", 120_000, { done: false })).toBe(false);
      expect(await schedules.recordFired("w", 60_000, { done: false })).toBe(false);
      expect(await schedules.recordFired("w", 180_000, { done: false })).toBe(true);
      expect((await schedules.get("w"))?.lastFiredAt).toBe(180_000);
      await schedules.cancel("w", 200_000);
      expect(await schedules.recordFired("w", 240_000, { done: false })).toBe(false);
    });

    it("marks a one-shot schedule done when its occurrence fires; it then fires no more", async () => {
      await schedules.create(newSchedule("o"), 10);
      expect(await schedules.recordFired("o", 60_000, { done: true })).toBe(true);
      expect(await schedules.get("o")).toMatchObject({ state: "done", lastFiredAt: 60_000 });
      expect(await schedules.recordFired("o", 120_000, { done: true })).toBe(false);
      expect(await schedules.list({ states: ["active"] })).toEqual([]);
    });

    it("records concurrent fires of one occurrence once", async () => {
      await schedules.create(newSchedule("o"), 10);
      const results = await Promise.all([
        schedules.recordFired("o", 60_000, { done: true }),
        schedules.recordFired("o", 60_000, { done: true }),
      ]);
      expect(results.filter(Boolean)).toHaveLength(1);
    });
  });
}
