import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { openDatabase } from "../../src/db/sqlite.js";
import {
  type CronStateStore,
  MemoryCronStateStore,
  SqliteCronStateStore,
} from "../../src/server/cron/state.js";

const tempDir = mkdtempSync(join(tmpdir(), "picklebot-cron-state-"));
let databases = 0;

afterAll(() => {
  rmSync(tempDir, { recursive: true, force: true });
});

function sqliteStore(): CronStateStore {
  const db = openDatabase(join(tempDir, `state-${++databases}.db`));
  return new SqliteCronStateStore({ db });
}

/** The contract every CronStateStore keeps. */
describe.each([
  ["memory", () => new MemoryCronStateStore() as CronStateStore],
  ["sqlite", sqliteStore],
])("CronStateStore (%s)", (_name, createStore) => {
  it("knows nothing about a cron it never saw", async () => {
    expect(await createStore().get("daily")).toBeNull();
  });

  it("keeps the first time a cron was seen", async () => {
    const store = createStore();
    await store.markSeen("daily", 1_000);
    await store.markSeen("daily", 5_000);
    expect(await store.get("daily")).toEqual({
      firstSeenAt: 1_000,
      lastFiredAt: null,
      disabled: false,
    });
  });

  it("records an occurrence once, and never goes back to an earlier one", async () => {
    const store = createStore();
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
    const store = createStore();
    await store.markSeen("once", 1_000);
    expect(await store.recordFired("once", 10_000, { disable: true })).toBe(true);
    expect(await store.recordFired("once", 20_000, { disable: false })).toBe(true);
    expect((await store.get("once"))?.disabled).toBe(true);
  });

  it("records a cron that was never marked seen", async () => {
    const store = createStore();
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
