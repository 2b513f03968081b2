/**
 * One reply-target shape (issue 26): a database of the release before it, whose Discord
 * targets name the chat `channelId`, is opened by this code and reads back `chatId`, on
 * SQLite (migration 012) and on PostgreSQL (migration 014); and a target a server of the
 * previous release writes after the migration (distributed mode, upgraded one server at a
 * time) still reads as `chatId`.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import type pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { ApprovalStore, JobAdmin } from "../../src/ports/index.js";
import { PostgresApprovalStore } from "../../src/storage/postgres/approvals.js";
import { openPostgres } from "../../src/storage/postgres/database.js";
import { PostgresJobQueue } from "../../src/storage/postgres/queue.js";
import { SqliteApprovalStore } from "../../src/storage/sqlite/approvals.js";
import { latestSchemaVersion, openDatabase } from "../../src/storage/sqlite/database.js";
import { SqliteJobQueue } from "../../src/storage/sqlite/queue.js";
import { createTestDatabase, postgresSkipReason, type TestDatabase } from "../helpers/postgres.js";

const ROWS = readFileSync(
  fileURLToPath(new URL("../fixtures/picklebot-discord-channel-id-rows.sql", import.meta.url)),
  "utf8",
);
const DISCORD_CHAT = "80351110224678912";

/** The numbered migration files of a backend up to `version`, in order. */
function migrationsUpTo(backend: "sqlite" | "postgres", version: number) {
  const dir = fileURLToPath(new URL(`../../migrations/${backend}/`, import.meta.url));
  return readdirSync(dir)
    .filter((name) => /^\d+_.*\.sql$/.test(name))
    .map((name) => ({ name, version: Number.parseInt(name, 10) }))
    .filter((migration) => migration.version <= version)
    .sort((a, b) => a.version - b.version)
    .map(({ name, version: number }) => ({
      name,
      version: number,
      sql: readFileSync(join(dir, name), "utf8"),
    }));
}

/** What both backends must read back from the fixture's rows once migrated. */
function readsChatIds(stores: () => { queue: JobAdmin; approvals: ApprovalStore }) {
  it("reads a Discord job's target as chatId", async () => {
    const { queue } = stores();
    expect((await queue.get("job-discord"))?.replyTo).toEqual({
      kind: "discord",
      chatId: DISCORD_CHAT,
    });
    expect((await queue.get("job-cron"))?.replyTo).toEqual({ kind: "discord", chatId: "555" });
  });

  it("leaves the other targets as they were", async () => {
    const { queue } = stores();
    expect((await queue.get("job-telegram"))?.replyTo).toEqual({ kind: "telegram", chatId: "42" });
    expect((await queue.get("job-silent"))?.replyTo).toEqual({ kind: "silent" });
    // A row edited into nonsense still reads as silent, and is not runnable.
    expect((await queue.get("job-garbled"))?.replyTo).toEqual({ kind: "silent" });
  });

  it("reads an approval request's target as chatId", async () => {
    const { approvals } = stores();
    expect((await approvals.get("ap1"))?.replyTo).toEqual({
      kind: "discord",
      chatId: DISCORD_CHAT,
    });
  });
}

describe("SQLite: a database at migration 011 with Discord targets named channelId", () => {
  const PREVIOUS = 11;
  let dir: string;
  let db: Database.Database;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "picklebot-reply-target-"));
    const file = join(dir, "picklebot.db");
    const old = new Database(file);
    for (const migration of migrationsUpTo("sqlite", PREVIOUS)) old.exec(migration.sql);
    old.pragma(`user_version = ${PREVIOUS}`);
    old.exec(ROWS);
    old.close();
    db = openDatabase(file);
  });

  afterAll(() => {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("is migrated to this release, storing the new shape as JSON.stringify writes it", () => {
    expect(db.pragma("user_version", { simple: true })).toBe(latestSchemaVersion());
    const stored = (id: string) =>
      (db.prepare("SELECT reply_to FROM jobs WHERE id = ?").get(id) as { reply_to: string })
        .reply_to;
    expect(stored("job-discord")).toBe(JSON.stringify({ kind: "discord", chatId: DISCORD_CHAT }));
    expect(stored("job-garbled")).toBe("not json at all");
  });

  readsChatIds(() => ({
    queue: new SqliteJobQueue({ db }),
    approvals: new SqliteApprovalStore({ db }),
  }));
});

const skipReason = await postgresSkipReason();

describe.skipIf(skipReason !== null)(
  "PostgreSQL: a database at migration 013 with Discord targets named channelId",
  () => {
    const PREVIOUS = 13;
    let database: TestDatabase;
    let pool: pg.Pool;
    let queue: PostgresJobQueue;

    beforeAll(async () => {
      database = await createTestDatabase("reply_target");
      await database.query(
        "CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())",
      );
      for (const migration of migrationsUpTo("postgres", PREVIOUS)) {
        await database.query(migration.sql);
        await database.query("INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", [
          migration.version,
          migration.name,
        ]);
      }
      await database.query(ROWS);
      pool = await openPostgres({ url: database.url, poolSize: 2 });
      queue = new PostgresJobQueue({ pool });
    });

    afterAll(async () => {
      await queue?.close();
      await pool?.end();
      await database?.drop();
    });

    afterEach(async () => {
      await database.query(
        `UPDATE jobs SET reply_to = '{"kind":"discord","chatId":"${DISCORD_CHAT}"}' WHERE id = 'job-discord'`,
      );
    });

    it("is migrated to this release, storing the new shape as JSON.stringify writes it", async () => {
      const { rows } = await database.query<{ version: number }>(
        "SELECT max(version) AS version FROM schema_migrations",
      );
      expect(rows[0]?.version).toBe(
        migrationsUpTo("postgres", Number.MAX_SAFE_INTEGER).at(-1)?.version,
      );
      const stored = await database.query<{ id: string; reply_to: string }>(
        "SELECT id, reply_to FROM jobs WHERE id IN ('job-discord', 'job-garbled') ORDER BY id",
      );
      expect(stored.rows).toEqual([
        { id: "job-discord", reply_to: JSON.stringify({ kind: "discord", chatId: DISCORD_CHAT }) },
        { id: "job-garbled", reply_to: "not json at all" },
      ]);
    });

    readsChatIds(() => ({ queue, approvals: new PostgresApprovalStore({ pool }) }));

    it("reads a channelId a server of the previous release writes after the migration", async () => {
      await database.query(
        `UPDATE jobs SET reply_to = '{"kind":"discord","channelId":"${DISCORD_CHAT}"}' WHERE id = 'job-discord'`,
      );
      expect((await queue.get("job-discord"))?.replyTo).toEqual({
        kind: "discord",
        chatId: DISCORD_CHAT,
      });
    });
  },
);
