import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Worker } from "node:worker_threads";
import BetterSqlite from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ClaimedJob } from "../../src/ports/index.js";
import { openDatabase } from "../../src/storage/sqlite/database.js";
import { SqliteJobQueue } from "../../src/storage/sqlite/queue.js";
import { TestClock } from "../helpers/clock.js";
import { chatJob, nextRunnable, queueContract } from "./contract.js";

type Database = ReturnType<typeof openDatabase>;

function tempDatabasePath(): { dir: string; path: string } {
  const dir = mkdtempSync(join(tmpdir(), "picklebot-queue-sqlite-"));
  return { dir, path: join(dir, "picklebot.db") };
}

queueContract("sqlite", async () => {
  const { dir, path } = tempDatabasePath();
  const db = openDatabase(path);
  const clock = new TestClock();
  const queue = new SqliteJobQueue({ db, clock, pollMs: 10 });
  return {
    queue,
    clock,
    async cleanup() {
      await queue.close();
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

/** Claims and completes from a worker thread with its own connection; resolves its job ids. */
function claimFromAnotherConnection(path: string, workerId: string): Promise<string[]> {
  const worker = new Worker(new URL("./claim-worker.js", import.meta.url), {
    workerData: { path, workerId },
  });
  return new Promise((resolve, reject) => {
    worker.once("message", resolve);
    worker.once("error", reject);
  });
}

describe("SqliteJobQueue", () => {
  let dir: string;
  let path: string;
  let db: Database;
  let queue: SqliteJobQueue;
  const opened: Array<{ db: Database; queue: SqliteJobQueue }> = [];
  const clock = new TestClock();

  /** Another connection to the same file, as the CLI would open it. */
  function openAgain(): { db: Database; queue: SqliteJobQueue } {
    const other = openDatabase(path);
    const connection = { db: other, queue: new SqliteJobQueue({ db: other, clock, pollMs: 10 }) };
    opened.push(connection);
    return connection;
  }

  beforeEach(() => {
    ({ dir, path } = tempDatabasePath());
    db = openDatabase(path);
    queue = new SqliteJobQueue({ db, clock, pollMs: 10 });
  });

  afterEach(async () => {
    for (const connection of opened.splice(0)) {
      await connection.queue.close();
      if (connection.db.open) connection.db.close();
    }
    await queue.close();
    if (db.open) db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("is migrated after the history tables, so no numbered migration is skipped", () => {
    expect(existsSync(new URL("../../migrations/sqlite/001_history.sql", import.meta.url))).toBe(
      true,
    );
    expect(db.pragma("user_version", { simple: true })).toBeGreaterThanOrEqual(2);
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all();
    expect(tables).toEqual(expect.arrayContaining(["jobs", "sessions", "messages"]));
  });

  it("creates a database with small pages in WAL mode, and keeps the page size of an older one", () => {
    expect(db.pragma("page_size", { simple: true })).toBe(1024);
    expect(db.pragma("journal_mode", { simple: true })).toBe("wal");
    db.close();

    const older = tempDatabasePath();
    const created = new BetterSqlite(older.path);
    created.pragma("page_size = 4096");
    created.exec("CREATE TABLE notes (text TEXT)");
    created.close();
    db = openDatabase(older.path);
    try {
      expect(db.pragma("page_size", { simple: true })).toBe(4096);
      expect(db.pragma("journal_mode", { simple: true })).toBe("wal");
    } finally {
      db.close();
      rmSync(older.dir, { recursive: true, force: true });
    }
  });

  it("keeps queued and running jobs across a restart; recover requeues the running one", async () => {
    await queue.enqueue(chatJob("a", "was running"));
    const waiting = await queue.enqueue(chatJob("b", "was waiting", { runAt: clock.now() + 5 }));
    const [running] = (await queue.claim("host-1", 10)) as [ClaimedJob];
    await queue.close();
    db.close();

    db = openDatabase(path);
    queue = new SqliteJobQueue({ db, clock });
    expect(await queue.get(waiting.id)).toEqual(waiting);
    expect(await queue.get(running.id)).toMatchObject({ state: "running", lockedBy: "host-1" });
    expect(await queue.recover("host-1")).toBe(1);
    clock.advance(5);
    expect((await queue.claim("host-1", 10)).map((job) => job.message)).toEqual([
      "was running",
      "was waiting",
    ]);
  });

  it("wakes a listener when another connection (the CLI) enqueues into the file", async () => {
    const cli = openAgain();
    const woken = nextRunnable(queue);
    const job = await cli.queue.enqueue(chatJob("cron:daily:1", "run now", { mode: "job" }));
    await woken;
    expect(await queue.claim("server", 10)).toMatchObject([{ id: job.id, state: "running" }]);
  });

  it("never hands one job to two connections claiming at the same time", async () => {
    const total = 600;
    for (let index = 0; index < total; index += 1) {
      await queue.enqueue(chatJob(`session-${index % 60}`, `job ${index}`));
    }
    const [first, second] = await Promise.all([
      claimFromAnotherConnection(path, "thread-1"),
      claimFromAnotherConnection(path, "thread-2"),
    ]);
    const all = [...(first ?? []), ...(second ?? [])];
    expect(new Set(all).size).toBe(total);
    expect(all).toHaveLength(total);
    expect(await queue.counts()).toEqual({
      queued: 0,
      running: 0,
      waiting: 0,
      done: total,
      failed: 0,
      stopped: 0,
    });
    const attempts = db.prepare("SELECT DISTINCT attempts FROM jobs").pluck().all();
    expect(attempts).toEqual([1]);
  });

  it("commits a completion before resolving it, and applies calls in call order", async () => {
    for (const key of ["a", "b", "c"]) await queue.enqueue(chatJob(key, key));
    const [a, b, c] = (await queue.claim("w", 10)) as [ClaimedJob, ClaimedJob, ClaimedJob];
    const completions = [queue.complete(a), queue.complete(b)];
    expect(await queue.fail(b, "too late", null)).toBe(false);
    expect((await queue.get(a.id))?.state).toBe("done");
    expect(await Promise.all(completions)).toEqual([true, true]);
    const done = queue.complete(c);
    await done;
    const cli = openAgain();
    expect((await cli.queue.counts()).done).toBe(3);
  });

  it("fails a job whose row was edited into nonsense instead of handing it out", async () => {
    const job = await queue.enqueue(chatJob("s", "hello"));
    db.prepare("UPDATE jobs SET reply_to = 'not json' WHERE id = ?").run(job.id);
    expect(await queue.claim("w", 10)).toEqual([]);
    const failed = await queue.get(job.id);
    expect(failed?.state).toBe("failed");
    expect(failed?.lastError).toMatch(/^malformed job: reply_to "not json" is not a reply target/);
    expect(await queue.list({ state: "failed" })).toHaveLength(1);
  });

  it("checkpointSync is part of the caller's transaction and rolls back with it", async () => {
    await queue.enqueue(chatJob("s", "hello"));
    const [job] = (await queue.claim("w", 1)) as [ClaimedJob];
    const checkpointWithHistory = db.transaction(() => {
      queue.checkpointSync(job, "session-1");
      throw new Error("the history write failed");
    });
    expect(() => checkpointWithHistory()).toThrow("the history write failed");
    expect(await queue.get(job.id)).toMatchObject({ message: "hello", sessionId: null });
    expect(db.transaction(() => queue.checkpointSync(job, "session-1"))()).toBe(true);
    expect(await queue.get(job.id)).toMatchObject({ message: ".", sessionId: "session-1" });
  });
});
