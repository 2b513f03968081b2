/**
 * Stores on a real database for contract suites: SQLite on a temp file, or the test
 * PostgreSQL database emptied first. `reopen` opens a new connection, like a restart.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type pg from "pg";
import { openPostgres } from "../../src/storage/postgres/database.js";
import { openDatabase } from "../../src/storage/sqlite/database.js";
import type { TestDatabase } from "./postgres.js";

/** A store under test, and how to reopen it (a restart) and clean up. */
export interface StoreHandle<Store> {
  store: Store;
  reopen(): Promise<Store>;
  cleanup(): Promise<void>;
}

/** A store on a temp SQLite database file. */
export async function onTempDatabase<Store>(
  build: (db: ReturnType<typeof openDatabase>) => Store,
): Promise<StoreHandle<Store>> {
  const dir = mkdtempSync(join(tmpdir(), "picklebot-store-sqlite-"));
  const path = join(dir, "picklebot.db");
  let db = openDatabase(path);
  return {
    store: build(db),
    async reopen() {
      db.close();
      db = openDatabase(path);
      return build(db);
    },
    async cleanup() {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A store on `database`, after `TRUNCATE tables RESTART IDENTITY`. */
export async function onTestDatabase<Store>(
  database: TestDatabase,
  tables: string[],
  build: (pool: pg.Pool) => Store,
): Promise<StoreHandle<Store>> {
  await database.query(`TRUNCATE ${tables.join(", ")} RESTART IDENTITY`);
  let pool = await openPostgres({ url: database.url, poolSize: 2 });
  return {
    store: build(pool),
    async reopen() {
      await pool.end();
      pool = await openPostgres({ url: database.url, poolSize: 2 });
      return build(pool);
    },
    async cleanup() {
      await pool.end();
    },
  };
}
