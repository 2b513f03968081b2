/**
 * Storage errors are classified where the driver makes them: a database that cannot be
 * used right now (SQLite locked, PostgreSQL refused or dropped) throws a retryable
 * StorageUnavailableError wrapping the driver's error, with its message; a statement that
 * fails for its own reasons throws the driver's error as it is.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { StorageUnavailableError } from "../../src/base/errors.js";
import { newPool, openPostgres, withClient } from "../../src/storage/postgres/database.js";
import { openDatabase } from "../../src/storage/sqlite/database.js";
import { SqliteJobQueue } from "../../src/storage/sqlite/queue.js";
import { postgresSkipReason, useMigratedDatabase } from "../helpers/postgres.js";

const aJob = {
  agentId: "pickle",
  sessionKey: "telegram:42",
  message: "hello",
  mode: "chat" as const,
  replyTo: { kind: "telegram" as const, chatId: "42" },
};

describe("SQLite", () => {
  let dir: string;
  let db: Database.Database;
  let locker: Database.Database;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "picklebot-unavailable-"));
    db = openDatabase(join(dir, "picklebot.db"));
    db.pragma("busy_timeout = 0");
    locker = new Database(join(dir, "picklebot.db"));
  });

  afterAll(() => {
    db.close();
    locker.close();
    rmSync(dir, { recursive: true, force: true });
  });

  function whileLocked<T>(work: () => T): T {
    locker.exec("BEGIN IMMEDIATE");
    try {
      return work();
    } finally {
      locker.exec("COMMIT");
    }
  }

  it("a write while another connection holds the lock: unavailable, retryable, the driver's message", () => {
    const thrown = whileLocked(() => catching(() => db.exec("CREATE TABLE t (x)")));
    expect(thrown).toBeInstanceOf(StorageUnavailableError);
    expect(thrown).toMatchObject({
      message: "database is locked",
      retryable: true,
      context: { backend: "sqlite", code: "SQLITE_BUSY" },
      cause: expect.objectContaining({ name: "SqliteError", code: "SQLITE_BUSY" }),
    });
  });

  it("reaches the store's caller from a prepared statement and from a transaction", async () => {
    const queue = new SqliteJobQueue({ db });
    locker.exec("BEGIN IMMEDIATE");
    try {
      await expect(queue.enqueue(aJob)).rejects.toBeInstanceOf(StorageUnavailableError);
      const insert = db.prepare("INSERT INTO cron_state (cron_id, first_seen_at) VALUES (?, 1)");
      expect(catching(() => insert.run("news"))).toBeInstanceOf(StorageUnavailableError);
      const twice = db.transaction(() => insert.run("news"));
      expect(catching(() => twice.immediate())).toBeInstanceOf(StorageUnavailableError);
    } finally {
      locker.exec("COMMIT");
    }
    expect((await queue.enqueue(aJob)).state).toBe("queued");
  });

  it("a statement that fails for its own reasons throws the driver's error", () => {
    const insert = db.prepare("INSERT INTO cron_state (cron_id, first_seen_at) VALUES (?, 1)");
    insert.run("once");
    const thrown = catching(() => insert.run("once"));
    expect(thrown).not.toBeInstanceOf(StorageUnavailableError);
    expect(thrown).toMatchObject({ name: "SqliteError", code: "SQLITE_CONSTRAINT_PRIMARYKEY" });
  });
});

describe("PostgreSQL, refused", () => {
  it("a pool's query and connect on a port nobody listens on: unavailable, retryable", async () => {
    const pool = newPool({ connectionString: "postgres://picklebot@127.0.0.1:1/none" });
    try {
      const query = await pool.query("SELECT 1").catch((error: unknown) => error);
      expect(query).toBeInstanceOf(StorageUnavailableError);
      expect(query).toMatchObject({
        retryable: true,
        context: { backend: "postgres", code: "ECONNREFUSED" },
      });
      const connect = await pool.connect().catch((error: unknown) => error);
      expect(connect).toBeInstanceOf(StorageUnavailableError);
    } finally {
      await pool.end();
    }
  });
});

const skipReason = await postgresSkipReason();

describe.skipIf(skipReason !== null)("PostgreSQL, running", () => {
  const database = useMigratedDatabase("unavailable");

  it("a connection terminated under a statement: unavailable, with pg's message", async () => {
    const pool = await openPostgres({ url: database().url, poolSize: 2 });
    try {
      const thrown = await withClient(pool, async (client) => {
        const { rows } = await client.query<{ pid: number }>("SELECT pg_backend_pid() AS pid");
        await database().query("SELECT pg_terminate_backend($1)", [rows[0]?.pid]);
        await client.query("SELECT pg_sleep(0.1)");
      }).catch((error: unknown) => error);
      expect(thrown).toBeInstanceOf(StorageUnavailableError);
      // pg says "terminated" when the kill lands under the statement, and "not queryable"
      // when it lands first; the test cannot choose which, the user is told either way.
      expect((thrown as Error).message).toMatch(/terminat|not queryable/i);
      // The pool goes on with a new connection.
      expect((await pool.query("SELECT 1 AS one")).rows).toEqual([{ one: 1 }]);
    } finally {
      await pool.end();
    }
  });

  it("a statement that fails for its own reasons throws pg's error", async () => {
    const pool = await openPostgres({ url: database().url, poolSize: 2 });
    try {
      const thrown = await pool.query("SELECT * FROM no_such_table").catch((e: unknown) => e);
      expect(thrown).not.toBeInstanceOf(StorageUnavailableError);
      expect(thrown).toMatchObject({ code: "42P01" });
    } finally {
      await pool.end();
    }
  });
});

function catching(work: () => unknown): unknown {
  try {
    work();
  } catch (thrown) {
    return thrown;
  }
  throw new Error("expected a throw");
}
