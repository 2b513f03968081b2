/**
 * Memory's migration (`NNN_memory.sql`) on a database of the release before it:
 * the messages stored before are searchable, each session is matched to its person where
 * its key says who it is, and a session whose person becomes known later (a Discord DM) is
 * indexed again with its person.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RecallStore } from "../../src/ports/index.js";
import { openPostgres } from "../../src/storage/postgres/database.js";
import { PostgresRecallStore } from "../../src/storage/postgres/memory.js";
import { openDatabase } from "../../src/storage/sqlite/database.js";
import { SqliteRecallStore } from "../../src/storage/sqlite/memory.js";
import { createTestDatabase, postgresSkipReason, type TestDatabase } from "../helpers/postgres.js";

/** Messages as the release before memory stored them: session, seq, role, content. */
const MESSAGES: [string, number, string, unknown[]][] = [
  ["s-ana", 1, "user", [{ type: "text", text: "Plant tomatoes in the garden" }]],
  [
    "s-ana",
    2,
    "assistant",
    [{ type: "tool_use", id: "t1", name: "read", input: { path: "garden.md" } }],
  ],
  ["s-group", 1, "user", [{ type: "text", text: "The group garden party" }]],
  ["s-owner", 1, "user", [{ type: "text", text: "My garden needs water" }]],
  ["s-dm", 1, "user", [{ type: "text", text: "A garden in Discord" }]],
];

/** The rows' SQL; PostgreSQL's messages also say whether a turn starts there. */
function rows(backend: "sqlite" | "postgres"): string {
  const turnStart = backend === "postgres";
  const messages = MESSAGES.map(
    ([session, seq, role, content], i) =>
      `('${session}', ${seq}, '${role}', '${JSON.stringify(content)}', ${turnStart ? `${role === "user"}, ` : ""}${10 + i})`,
  );
  return `INSERT INTO sessions (id, key, agent_id, created_at, updated_at) VALUES
      ('s-ana', 'telegram:1001', 'pickle', 1, 1), ('s-group', 'telegram:-100', 'pickle', 2, 2),
      ('s-owner', 'console:ana', 'pickle', 3, 3), ('s-dm', 'discord:5550001', 'pickle', 4, 4);
    INSERT INTO messages (session_id, seq, role, content, ${turnStart ? "turn_start, " : ""}created_at)
    VALUES ${messages.join(", ")};`;
}

/** The version of a backend's memory migration (`NNN_memory.sql`). */
function memoryMigration(backend: "sqlite" | "postgres"): number {
  const dir = fileURLToPath(new URL(`../../migrations/${backend}/`, import.meta.url));
  const file = readdirSync(dir).find((name) => /^\d+_memory\.sql$/.test(name));
  return Number.parseInt(file ?? "", 10);
}

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

const garden = (scope: { persons: string[] } | { sessionKey: string }) => ({
  scope: { agentId: "pickle", ...scope },
  text: "garden",
});

function searchesWhatWasStoredBefore(recall: () => RecallStore) {
  it("matches each session to the person its key names, none for a group or a DM", async () => {
    const people = await Promise.all(
      ["s-ana", "s-group", "s-owner", "s-dm"].map(
        async (id) => (await recall().session(id))?.person,
      ),
    );
    expect(people).toEqual(["telegram:1001", null, "owner", null]);
    expect(await recall().session("s-ana")).toMatchObject({ snapshot: null, takenAt: null });
  });

  it("finds the messages stored before, by person or by chat, and not tool calls", async () => {
    const ana = await recall().search(garden({ persons: ["telegram:1001"] }));
    expect(ana.map((hit) => [hit.sessionId, hit.seq])).toEqual([["s-ana", 1]]);
    const group = await recall().search(garden({ sessionKey: "telegram:-100" }));
    expect(group.map((hit) => hit.sessionId)).toEqual(["s-group"]);
    const owner = await recall().search(garden({ persons: ["owner"] }));
    expect(owner.map((hit) => hit.sessionId)).toEqual(["s-owner"]);
  });

  it("indexes a session again once its person is known", async () => {
    const dm = { persons: ["discord:7770001"] };
    expect(await recall().search(garden(dm))).toEqual([]);
    await recall().snapshot({
      sessionId: "s-dm",
      sessionKey: "discord:5550001",
      agentId: "pickle",
      person: "discord:7770001",
      snapshot: "",
      takenAt: 20,
    });
    const found = await recall().search(garden(dm));
    expect(found.map((hit) => [hit.sessionId, hit.snippet])).toEqual([
      ["s-dm", "A [garden] in Discord"],
    ]);
  });
}

describe("SQLite: a database of the release before memory", () => {
  const previous = memoryMigration("sqlite") - 1;
  let dir: string;
  let db: Database.Database;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "picklebot-memory-migration-"));
    const file = join(dir, "picklebot.db");
    const old = new Database(file);
    for (const migration of migrationsUpTo("sqlite", previous)) old.exec(migration.sql);
    old.pragma(`user_version = ${previous}`);
    old.exec(rows("sqlite"));
    old.close();
    db = openDatabase(file);
  });

  afterAll(() => {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  searchesWhatWasStoredBefore(() => new SqliteRecallStore({ db }));
});

const skipReason = await postgresSkipReason();

describe.skipIf(skipReason !== null)("PostgreSQL: a database of the release before memory", () => {
  const previous = memoryMigration("postgres") - 1;
  let database: TestDatabase;
  let pool: pg.Pool;

  beforeAll(async () => {
    database = await createTestDatabase("memory_migration");
    await database.query(
      "CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())",
    );
    for (const migration of migrationsUpTo("postgres", previous)) {
      await database.query(migration.sql);
      await database.query("INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", [
        migration.version,
        migration.name,
      ]);
    }
    await database.query(rows("postgres"));
    pool = await openPostgres({ url: database.url, poolSize: 2 });
  });

  afterAll(async () => {
    await pool?.end();
    await database?.drop();
  });

  searchesWhatWasStoredBefore(() => new PostgresRecallStore({ pool }));
});
