/**
 * The retention worker over the real SQLite stores: a week-old backlog larger than one
 * batch is deleted in one pass, recent and unfinished work is kept, and a claim made
 * between passes is served.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { PRUNE_BATCH } from "../../src/ports/index.js";
import { RetentionWorker } from "../../src/server/retention.js";
import { type Database, openDatabase } from "../../src/storage/sqlite/database.js";
import { SqliteOutboxStore } from "../../src/storage/sqlite/outbox.js";
import { SqliteJobQueue } from "../../src/storage/sqlite/queue.js";
import { TestClock } from "../helpers/clock.js";
import { recordingLogger } from "../helpers/log.js";
import { chatJob } from "../queue/contract.js";

const HOUR = 3_600_000;
let db: Database;
let clock: TestClock;
let queue: SqliteJobQueue;
let outbox: SqliteOutboxStore;

beforeEach(() => {
  db = openDatabase(":memory:");
  clock = new TestClock();
  queue = new SqliteJobQueue({ db, clock });
  outbox = new SqliteOutboxStore({ db });
});

afterEach(async () => {
  await queue.close();
  db.close();
});

async function finishJobs(count: number): Promise<void> {
  for (let i = 0; i < count; i += 1) await queue.enqueue(chatJob(`chat:${i}`, `job ${i}`));
  for (const job of await queue.claim("w", count)) await queue.complete(job);
}

describe("RetentionWorker", () => {
  it("deletes a backlog larger than a batch in one pass, and only what is past retention", async () => {
    await finishJobs(PRUNE_BATCH + 20);
    for (let i = 0; i < 3; i += 1) {
      const entry = await outbox.submit(
        { dedupeKey: `job:${i}`, platform: "telegram", chatId: "1" },
        "hi",
        clock.now(),
      );
      await outbox.markDelivered(entry.id, clock.now());
    }
    clock.advance(168 * HOUR + 1);
    await finishJobs(2);
    await queue.enqueue(chatJob("waiting", "not yet", { runAt: clock.now() + HOUR }));
    const { logger, lines } = recordingLogger();
    const worker = new RetentionWorker({ queue, outbox, retentionMs: 168 * HOUR, clock, logger });

    expect(await worker.prunePass()).toEqual({ jobs: PRUNE_BATCH + 20, outbox: 3 });

    expect(await queue.counts()).toMatchObject({ done: 2, queued: 1 });
    expect(lines.at(-1)).toMatchObject({ jobs: PRUNE_BATCH + 20, outbox: 3 });
    expect(await worker.prunePass()).toEqual({ jobs: 0, outbox: 0 });
  });

  it("refuses a retention that is not positive", () => {
    const { logger } = recordingLogger();
    expect(() => new RetentionWorker({ queue, outbox, retentionMs: 0, clock, logger })).toThrow(
      /retentionMs/,
    );
  });
});
