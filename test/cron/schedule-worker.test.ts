/**
 * The ScheduleWorker on a test clock, with the real SQLite stores: messages reach the
 * outbox once per occurrence, tasks the queue once, across restarts, DST changes and
 * downtime.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ScheduleWorker } from "../../src/cron/schedule-worker.js";
import type { NewSchedule, ScheduleStore } from "../../src/ports/index.js";
import { MemoryJobQueue } from "../../src/storage/memory/queue.js";
import { SqliteOutboxStore } from "../../src/storage/sqlite/outbox.js";
import { SqliteScheduleStore } from "../../src/storage/sqlite/schedules.js";
import { TestClock } from "../helpers/clock.js";
import { recordingLogger } from "../helpers/log.js";
import { onTempDatabase, type StoreHandle } from "../helpers/stores.js";

const CHAT = { kind: "telegram", chatId: "42" } as const;

interface Stores {
  schedules: ScheduleStore;
  outbox: SqliteOutboxStore;
}

function schedule(id: string, overrides: Partial<NewSchedule>): NewSchedule {
  return {
    id,
    agentId: "main",
    chat: CHAT,
    createdBy: "agent main",
    kind: "message",
    text: "call the dentist",
    at: null,
    cron: null,
    timezone: "Europe/Berlin",
    createdAt: 0,
    ...overrides,
  };
}

describe("ScheduleWorker", () => {
  let handle: StoreHandle<Stores>;
  let clock: TestClock;
  let queue: MemoryJobQueue;
  beforeEach(async () => {
    handle = await onTempDatabase((db) => ({
      schedules: new SqliteScheduleStore({ db }),
      outbox: new SqliteOutboxStore({ db }),
    }));
    clock = new TestClock("2027-03-25T12:00:00Z");
    queue = new MemoryJobQueue({ clock });
  });
  afterEach(() => handle.cleanup());

  /** A worker on the stores as they are now (a new one is a restart). */
  function worker(stores: Stores = handle.store, pollMs = 10_000) {
    return new ScheduleWorker({
      pollMs,
      store: stores.schedules,
      queue,
      outbox: stores.outbox,
      clock,
      logger: recordingLogger().logger,
      maxAttempts: 3,
    });
  }

  /** Outbox entries of the chat, as [key, text]. */
  async function delivered(stores: Stores = handle.store): Promise<string[]> {
    const entries = await stores.outbox.due("telegram", Number.MAX_SAFE_INTEGER, 100);
    return entries.map((entry) => `${entry.dedupeKey} ${entry.text}`);
  }

  it("puts a one-shot message in the outbox once, at its time, and marks it done", async () => {
    const at = Date.parse("2027-03-25T12:01:00Z");
    await handle.store.schedules.create(schedule("r1", { at, createdAt: clock.now() }), 10);
    expect(await worker(handle.store, 3_600_000).fireDue()).toBe(at);
    expect(await delivered()).toEqual([]);
    clock.set(at);
    await worker().fireDue();
    await worker().fireDue();
    expect(await delivered()).toEqual([`schedule:r1:${at} call the dentist`]);
    expect((await handle.store.schedules.get("r1"))?.state).toBe("done");
  });

  it("after a crash between sending and recording, sends again under the same key: one entry", async () => {
    const at = Date.parse("2027-03-25T12:01:00Z");
    const stores = handle.store;
    await stores.schedules.create(schedule("r1", { at }), 10);
    // The send of the first run happened; its record did not (the process died).
    await stores.outbox.submit(
      { dedupeKey: `schedule:r1:${at}`, platform: "telegram", chatId: "42" },
      "call the dentist",
      at,
    );
    clock.set(at + 30_000);
    const restarted = await handle.reopen();
    await worker(restarted).fireDue();
    expect(await delivered(restarted)).toEqual([`schedule:r1:${at} call the dentist`]);
    expect((await restarted.schedules.get("r1"))?.state).toBe("done");
  });

  it("fires a recurring reminder at 08:00 in the person's zone every day across the spring DST change", async () => {
    await handle.store.schedules.create(
      schedule("daily", { cron: "0 8 * * *", createdAt: clock.now() }),
      10,
    );
    // Occurrence by occurrence from Thursday to Tuesday, as the timer would wake the worker:
    // Berlin moves its clocks on Sunday 28 March.
    const end = Date.parse("2027-03-30T12:00:00Z");
    while (clock.now() < end) clock.set(await worker(handle.store, 86_400_000 * 2).fireDue());
    const fired = (await delivered()).map((line) =>
      new Date(Number(line.split(/[: ]/)[2])).toISOString(),
    );
    expect(fired).toEqual([
      "2027-03-26T07:00:00.000Z",
      "2027-03-27T07:00:00.000Z",
      "2027-03-28T06:00:00.000Z",
      "2027-03-29T06:00:00.000Z",
      "2027-03-30T06:00:00.000Z",
    ]);
  });

  it("fires a recurring reminder once on the night New York's clocks fall back, whose 01:30 happens twice", async () => {
    clock.set("2027-11-06T12:00:00Z");
    await handle.store.schedules.create(
      schedule("night", {
        cron: "30 1 * * *",
        timezone: "America/New_York",
        createdAt: clock.now(),
      }),
      10,
    );
    const end = Date.parse("2027-11-08T12:00:00Z");
    while (clock.now() < end) clock.set(await worker(handle.store, 86_400_000 * 2).fireDue());
    const fired = (await delivered()).map((line) =>
      new Date(Number(line.split(/[: ]/)[2])).toISOString(),
    );
    // 01:30 EDT on Sunday (the first copy), then 01:30 EST on Monday.
    expect(fired).toEqual(["2027-11-07T05:30:00.000Z", "2027-11-08T06:30:00.000Z"]);
  });

  it("after downtime, a recurring schedule fires its latest missed occurrence once, not the backlog", async () => {
    await handle.store.schedules.create(
      schedule("daily", { cron: "0 8 * * *", createdAt: clock.now() }),
      10,
    );
    clock.set("2027-03-29T09:30:00Z");
    await worker().fireDue();
    await worker().fireDue();
    expect(await delivered()).toEqual([
      `schedule:daily:${Date.parse("2027-03-29T06:00:00Z")} call the dentist`,
    ]);
  });

  it("a one-shot reminder missed while the server was down arrives late, once", async () => {
    const at = Date.parse("2027-03-25T13:00:00Z");
    await handle.store.schedules.create(schedule("r1", { at }), 10);
    clock.set("2027-03-26T09:00:00Z");
    await worker().fireDue();
    expect(await delivered()).toEqual([`schedule:r1:${at} call the dentist`]);
  });

  it("a task runs as a job in a fresh session whose reply goes to the chat; a second fire stores no second job", async () => {
    const at = Date.parse("2027-03-25T12:05:00Z");
    await handle.store.schedules.create(
      schedule("t1", { at, kind: "task", text: "check the pool's opening hours" }),
      10,
    );
    clock.set(at);
    await worker().fireDue();
    await handle.store.schedules.recordFired("t1", 0, { done: false });
    await worker().fireDue();
    const jobs = await queue.list();
    expect(jobs).toHaveLength(1);
    expect(jobs[0]).toMatchObject({
      agentId: "main",
      sessionKey: "schedule:t1:2027-03-25T12:05:00.000Z",
      mode: "job",
      replyTo: CHAT,
    });
    expect(jobs[0]?.message).toMatch(/check the pool's opening hours$/);
    expect(await delivered()).toEqual([]);
  });

  it("leaves a heartbeat to the ChatHeartbeatWorker: no job, no message, no tick recorded", async () => {
    const { schedules } = handle.store;
    await schedules.create(
      {
        id: "hb1",
        agentId: "main",
        chat: { kind: "telegram", chatId: "42" },
        createdBy: "7",
        kind: "heartbeat",
        text: "anything new?",
        at: null,
        cron: "* * * * *",
        timezone: "UTC",
        createdAt: clock.now(),
      },
      10,
    );
    clock.advance(5 * 60_000);
    await worker().fireDue();
    expect(await queue.list()).toEqual([]);
    expect(await delivered()).toEqual([]);
    expect((await schedules.get("hb1"))?.lastFiredAt).toBeNull();
  });

  it("a cancelled schedule does not fire", async () => {
    const at = Date.parse("2027-03-25T12:01:00Z");
    await handle.store.schedules.create(schedule("r1", { at }), 10);
    await handle.store.schedules.cancel("r1", clock.now());
    clock.set(at);
    await worker().fireDue();
    expect(await delivered()).toEqual([]);
  });

  it("a schedule cancelled after the worker listed it is not sent", async () => {
    const at = Date.parse("2027-03-25T12:01:00Z");
    const { schedules, outbox } = handle.store;
    await schedules.create(schedule("r1", { at }), 10);
    const listed = await schedules.list({ states: ["active"] });
    await schedules.cancel("r1", clock.now());
    const stale: ScheduleStore = {
      create: (made, max) => schedules.create(made, max),
      get: (id) => schedules.get(id),
      list: async () => listed,
      cancel: (id, now) => schedules.cancel(id, now),
      recordFired: (id, at, options) => schedules.recordFired(id, at, options),
    };
    clock.set(at);
    await worker({ schedules: stale, outbox }).fireDue();
    expect(await delivered()).toEqual([]);
  });

  it("run() sleeps until the next occurrence on its timers and stops on abort", async () => {
    const at = Date.parse("2027-03-25T12:00:30Z");
    await handle.store.schedules.create(schedule("r1", { at }), 10);
    const running = new ScheduleWorker({
      store: handle.store.schedules,
      queue,
      outbox: handle.store.outbox,
      clock,
      timers: clock,
      logger: recordingLogger().logger,
      maxAttempts: 3,
    });
    const stop = new AbortController();
    const done = running.run(stop.signal);
    const settle = async () => {
      for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
    };
    await settle();
    await clock.advanceTo(at, settle);
    expect(await delivered()).toEqual([`schedule:r1:${at} call the dentist`]);
    stop.abort();
    await done;
  });
});
