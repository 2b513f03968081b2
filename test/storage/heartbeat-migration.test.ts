/**
 * Heartbeats are schedules of kind `heartbeat` (issue 31): a SQLite database of the release
 * before them, with reminders in `schedules`, is opened by this code; its reminders read
 * back as they were, and a heartbeat can be stored (migration 020 widened the kind's CHECK).
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { latestSchemaVersion, openDatabase } from "../../src/storage/sqlite/database.js";
import { SqliteScheduleStore } from "../../src/storage/sqlite/schedules.js";

/** The release before heartbeats: migrations up to this one. */
const PREVIOUS = 19;

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "picklebot-heartbeat-migration-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** A database as the release before made it, with one reminder and one recurring task. */
function previousDatabase(path: string): void {
  const migrations = fileURLToPath(new URL("../../migrations/sqlite/", import.meta.url));
  const old = new Database(path);
  for (const name of readdirSync(migrations).sort()) {
    if (Number.parseInt(name, 10) > PREVIOUS) continue;
    old.exec(readFileSync(join(migrations, name), "utf8"));
  }
  old.pragma(`user_version = ${PREVIOUS}`);
  old.exec(`
    INSERT INTO schedules (id, agent_id, platform, chat_id, created_by, kind, text, at, cron, timezone, state, last_fired_at, created_at)
    VALUES ('r1', 'pickle', 'telegram', '42', '7', 'message', 'call the dentist', 60000, NULL, 'Europe/Berlin', 'active', NULL, 1000),
           ('r2', 'pickle', 'discord', '9', '7', 'task', 'weather?', NULL, '0 8 * * 1-5', 'UTC', 'cancelled', 50000, 2000);
  `);
  old.close();
}

describe("migration 020 (heartbeats)", () => {
  it("keeps the schedules a database had, and stores a heartbeat", async () => {
    const path = join(dir, "picklebot.db");
    previousDatabase(path);
    const db = openDatabase(path);
    try {
      expect(db.pragma("user_version", { simple: true })).toBe(latestSchemaVersion());
      const store = new SqliteScheduleStore({ db });
      expect(await store.list()).toMatchObject([
        { id: "r1", kind: "message", at: 60_000, cron: null, state: "active", lastFiredAt: null },
        {
          id: "r2",
          kind: "task",
          at: null,
          cron: "0 8 * * 1-5",
          state: "cancelled",
          lastFiredAt: 50_000,
        },
      ]);
      const heartbeat = await store.create(
        {
          id: "h1",
          agentId: "pickle",
          chat: { kind: "telegram", chatId: "42" },
          createdBy: "7",
          kind: "heartbeat",
          text: "anything new?",
          at: null,
          cron: "*/30 * * * *",
          timezone: "UTC",
          createdAt: 3000,
        },
        10,
      );
      expect(heartbeat?.kind).toBe("heartbeat");
      // The indexes came back with the table.
      const indexes = db
        .prepare(
          "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'schedules' AND sql IS NOT NULL ORDER BY name",
        )
        .pluck()
        .all();
      expect(indexes).toEqual(["schedules_active", "schedules_chat"]);
    } finally {
      db.close();
    }
  });
});
