import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import type { CronStateStore } from "../../src/ports/index.js";
import { MemoryCronStateStore } from "../../src/storage/memory/cron-state.js";
import { PostgresCronStateStore } from "../../src/storage/postgres/cron-state.js";
import { openPostgres } from "../../src/storage/postgres/database.js";
import { SqliteCronStateStore } from "../../src/storage/sqlite/cron-state.js";
import { openDatabase } from "../../src/storage/sqlite/database.js";
import { createTestDatabase, postgresSkipReason, type TestDatabase } from "../helpers/postgres.js";

const tempDir = mkdtempSync(join(tmpdir(), "picklebot-cron-state-"));
let databases = 0;

let postgres: { database: TestDatabase; pool: pg.Pool } | null = null;

afterAll(async () => {
  rmSync(tempDir, { recursive: true, force: true });
  await postgres?.pool.end();
  await postgres?.database.drop();
});

function sqliteStore(): CronStateStore {
  const db = openDatabase(join(tempDir, `state-${++databases}.db`));
  return new SqliteCronStateStore({ db });
}

/** A store on this file's own PostgreSQL database, emptied first. */
async function postgresStore(): Promise<CronStateStore> {
  if (!postgres) {
    const database = await createTestDatabase("cron");
    postgres = { database, pool: await openPostgres({ url: database.url, poolSize: 2 }) };
  }
  await postgres.pool.query("TRUNCATE cron_state");
  return new PostgresCronStateStore({ pool: postgres.pool });
}

const stores: [string, () => CronStateStore | Promise<CronStateStore>][] = [
  ["memory", () => new MemoryCronStateStore()],
  ["sqlite", sqliteStore],
];
if ((await postgresSkipReason()) === null) stores.push(["postgres", postgresStore]);

/** The contract every CronStateStore keeps. */
describe.each(stores)("CronStateStore (%s)", (_name, createStore) => {
  it("knows nothing about a cron it never saw", async () => {
    expect(await (await createStore()).get("daily")).toBeNull();
  });

  it("keeps the first time a cron was seen", async () => {
    const store = await createStore();
    await store.markSeen("daily", 1_000);
    await store.markSeen("daily", 5_000);
    expect(await store.get("daily")).toEqual({
      firstSeenAt: 1_000,
      lastFiredAt: null,
      disabled: false,
    });
  });

  it("records an occurrence once, and never goes back to an earlier one", async () => {
    const store = await createStore();
    await store.markSeen("daily", 1_000);
    expect(await store.recordFired("daily", 10_000, { disable: false })).toBe(true);
    expect(await store.recordFired("daily", 10_000, { disable: false })).toBe(false);
    expect(await store.recordFired("daily", 9_000, { disable: false })).toBe(false);
    expect((await store.get("daily"))?.lastFiredAt).toBe(10_000);
    expect(await store.recordFired("daily", 20_000, { disable: false })).toBe(true);
    expect(await store.get("daily")).toEqual({
      firstSeenAt: 1_000,
      lastFiredAt: 20_000,
      disabled: false,
    });
  });

  it("disables a one-off cron for good", async () => {
    const store = await createStore();
    await store.markSeen("once", 1_000);
    expect(await store.recordFired("once", 10_000, { disable: true })).toBe(true);
    expect(await store.recordFired("once", 20_000, { disable: false })).toBe(true);
    expect((await store.get("once"))?.disabled).toBe(true);
  });

  it("records a cron that was never marked seen", async () => {
    const store = await createStore();
    expect(await store.recordFired("fresh", 10_000, { disable: false })).toBe(true);
    expect((await store.get("fresh"))?.lastFiredAt).toBe(10_000);
  });
});

describe("SqliteCronStateStore", () => {
  it("lets only one of two processes record the same occurrence, and survives a reopen", async () => {
    const path = join(tempDir, "shared.db");
    const first = openDatabase(path);
    const second = openDatabase(path);
    const storeA = new SqliteCronStateStore({ db: first });
    const storeB = new SqliteCronStateStore({ db: second });
    await storeA.markSeen("daily", 1_000);
    const results = [
      await storeA.recordFired("daily", 10_000, { disable: false }),
      await storeB.recordFired("daily", 10_000, { disable: false }),
    ];
    expect(results).toEqual([true, false]);
    first.close();
    second.close();

    const reopened = openDatabase(path);
    expect(await new SqliteCronStateStore({ db: reopened }).get("daily")).toEqual({
      firstSeenAt: 1_000,
      lastFiredAt: 10_000,
      disabled: false,
    });
    reopened.close();
  });
});
