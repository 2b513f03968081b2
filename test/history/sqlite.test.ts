import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Clock } from "../../src/ports/index.js";
import { openDatabase } from "../../src/storage/sqlite/database.js";
import { SqliteHistoryStore } from "../../src/storage/sqlite/history.js";
import { TestClock } from "../helpers/clock.js";
import { assistantText, historyContract, userText } from "./contract.js";

type Database = ReturnType<typeof openDatabase>;

function tempDatabasePath(): { dir: string; path: string } {
  const dir = mkdtempSync(join(tmpdir(), "picklebot-history-sqlite-"));
  return { dir, path: join(dir, "picklebot.db") };
}

historyContract("sqlite", async (clock: Clock) => {
  const { dir, path } = tempDatabasePath();
  let store = new SqliteHistoryStore({ db: openDatabase(path), clock, ownsDatabase: true });
  return {
    store,
    async reopen() {
      await store.close();
      store = new SqliteHistoryStore({ db: openDatabase(path), clock, ownsDatabase: true });
      return store;
    },
    async cleanup() {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

describe("SqliteHistoryStore", () => {
  let dir: string;
  let path: string;
  let db: Database;
  let store: SqliteHistoryStore;
  const clock = new TestClock();

  beforeEach(() => {
    ({ dir, path } = tempDatabasePath());
    db = openDatabase(path);
    store = new SqliteHistoryStore({ db, clock });
  });

  afterEach(() => {
    if (db.open) db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("uses a database in WAL mode", () => {
    expect(db.pragma("journal_mode", { simple: true })).toBe("wal");
  });

  it("shows what one connection wrote to a second connection on the same file", async () => {
    const session = await store.createSession({ key: "telegram:1", agentId: "pickle" });
    await store.append(session.id, userText("hello"), { jobId: "job-1" });
    const secondDb = openDatabase(path);
    try {
      const second = new SqliteHistoryStore({ db: secondDb, clock });
      expect(await second.currentSession("telegram:1")).toEqual(await store.getSession(session.id));
      expect(await second.loadContext(session.id, 10)).toEqual([userText("hello")]);
      expect(await second.append(session.id, userText("hello"), { jobId: "job-1" })).toBe(false);
    } finally {
      secondDb.close();
    }
  });

  it("rolls appendSync back with the caller's transaction when the checkpoint fails", () => {
    const session = store.createSessionSync({ key: "telegram:1", agentId: "pickle" });
    const checkpoint = db.transaction(() => {
      store.appendSync(session.id, userText("hello"), { jobId: "job-1" });
      throw new Error("the queue refused the checkpoint");
    });
    expect(() => checkpoint.immediate()).toThrow("the queue refused the checkpoint");
    expect(store.getSessionSync(session.id)).toMatchObject({ messageCount: 0, title: null });
    expect(store.appendSync(session.id, userText("hello"), { jobId: "job-1" })).toBe(true);
  });

  it("rolls a model call's ledger row back with its message", async () => {
    const session = store.createSessionSync({ key: "telegram:1", agentId: "pickle" });
    const usage = { input: 10, output: 5, cacheRead: 0, cacheWrite: 0 };
    const step = db.transaction(() => {
      store.appendSync(session.id, assistantText("hi"), { usage, call: { model: "m" } });
      throw new Error("killed mid-step");
    });
    expect(() => step.immediate()).toThrow("killed mid-step");
    expect(await store.calls({ since: 0 })).toEqual([]);
    store.appendSync(session.id, assistantText("hi"), { usage, call: { model: "m" } });
    expect(await store.calls({ since: 0 })).toHaveLength(1);
  });

  it("commits appendSync with the caller's transaction, once per job", async () => {
    const session = store.createSessionSync({ key: "telegram:1", agentId: "pickle" });
    const checkpoint = db.transaction(() =>
      store.appendSync(session.id, userText("hello"), { jobId: "job-1" }),
    );
    expect(checkpoint.immediate()).toBe(true);
    expect(checkpoint.immediate()).toBe(false);
    expect(await store.loadContext(session.id, 10)).toEqual([userText("hello")]);
  });

  it("offers the synchronous lookups a checkpoint transaction needs", () => {
    const session = store.createSessionSync({ key: "console:main", agentId: "pickle" });
    expect(store.currentSessionSync("console:main")).toEqual(session);
    expect(store.getSessionSync(session.id)).toEqual(session);
  });

  it("leaves a shared database open when it closes", async () => {
    const session = await store.createSession({ key: "k", agentId: "pickle" });
    await store.close();
    expect(db.open).toBe(true);
    await expect(store.getSession(session.id)).rejects.toThrow(/closed/);
  });

  it("takes injected session ids, and refuses ids unsafe as file names", async () => {
    const fixed = new SqliteHistoryStore({ db, clock, newId: () => "s_fixed" });
    expect((await fixed.createSession({ key: "k", agentId: "pickle" })).id).toBe("s_fixed");
    const unsafe = new SqliteHistoryStore({ db, clock, newId: () => "../escape" });
    await expect(unsafe.createSession({ key: "k", agentId: "pickle" })).rejects.toThrow(
      /"\.\.\/escape"/,
    );
  });

  it("loads the last whole turns of a long session, and nothing of another", async () => {
    const busy = await store.createSession({ key: "busy", agentId: "pickle" });
    const quiet = await store.createSession({ key: "quiet", agentId: "pickle" });
    for (let turn = 0; turn < 50; turn++) {
      await store.append(busy.id, userText(`question ${turn}`));
      await store.append(busy.id, assistantText(`answer ${turn}`));
    }
    await store.append(quiet.id, userText("only message"));
    expect(await store.loadContext(busy.id, 4)).toEqual([
      userText("question 48"),
      assistantText("answer 48"),
      userText("question 49"),
      assistantText("answer 49"),
    ]);
  });
});
