import { mkdirSync, readdirSync, readFileSync } from "node:fs";
import { dirname } from "node:path";
import Database from "better-sqlite3";

export type { Database } from "better-sqlite3";

/** Folder of the numbered SQLite migrations (`NNN_name.sql`), shared by every table owner. */
const MIGRATIONS_DIR = new URL("../../migrations/sqlite/", import.meta.url);

/**
 * Opens (creating if needed) picklebot's SQLite database: WAL, `synchronous=NORMAL`,
 * a busy timeout so the CLI and the server can share it, and every migration applied.
 */
export function openDatabase(path: string): Database.Database {
  if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
  const db = new Database(path, { timeout: 5000 });
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = NORMAL");
  db.pragma("foreign_keys = ON");
  // The claim statement builds small temporary b-trees; keep them off the disk.
  db.pragma("temp_store = MEMORY");
  migrate(db);
  return db;
}

/** Applies the migrations newer than the database's `user_version`, each in a transaction. */
function migrate(db: Database.Database): void {
  const current = db.pragma("user_version", { simple: true }) as number;
  const pending = readdirSync(MIGRATIONS_DIR)
    .filter((file) => /^\d+_.*\.sql$/.test(file))
    .map((file) => ({ version: Number.parseInt(file, 10), file }))
    .filter(({ version }) => version > current)
    .sort((a, b) => a.version - b.version);
  if (pending.length === 0) return;
  db.transaction(() => {
    for (const { version, file } of pending) {
      db.exec(readFileSync(new URL(file, MIGRATIONS_DIR), "utf8"));
      db.pragma(`user_version = ${version}`);
    }
  }).immediate();
}
