/**
 * The retention worker over the real SQLite stores: a week-old backlog larger than one
 * batch is deleted in one pass, recent and unfinished work is kept, and a claim made
 * between passes is served; the stored copies of the outbox's files go with the last
 * entry that describes them.
 */
import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { OutboxFiles } from "../../src/chat/outbox-files.js";
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

    expect(await worker.prunePass()).toEqual({
      jobs: PRUNE_BATCH + 20,
      outbox: 3,
      outboxFiles: 0,
    });

    expect(await queue.counts()).toMatchObject({ done: 2, queued: 1 });
    expect(lines.at(-1)).toMatchObject({ jobs: PRUNE_BATCH + 20, outbox: 3 });
    expect(await worker.prunePass()).toEqual({ jobs: 0, outbox: 0, outboxFiles: 0 });
  });

  it("deletes a file's stored copy with the last entry that describes it, and leftovers of a crash", async () => {
    const history = mkdtempSync(join(tmpdir(), "picklebot-retention-"));
    try {
      const files = new OutboxFiles(history, clock);
      const { logger } = recordingLogger();
      const worker = new RetentionWorker({
        queue,
        outbox,
        files,
        retentionMs: HOUR,
        clock,
        logger,
      });
      const photo = { kind: "photo" as const, name: "a.png", mediaType: "image/png" };
      const sendFile = async (key: string, bytes: string, state: "delivered" | "pending") => {
        const text = await files.store({ ...photo, content: Buffer.from(bytes) });
        const entry = await outbox.submit(
          { dedupeKey: key, platform: "telegram", chatId: "1" },
          text,
          clock.now(),
        );
        if (state === "delivered") await outbox.markDelivered(entry.id, clock.now());
      };
      await sendFile("file:j1:aaaa", "shared", "delivered");
      await sendFile("file:j2:bbbb", "alone", "delivered");
      await sendFile("voice:j3", "waiting", "pending");
      // A copy a crash left half written, dated on the test's clock like the others.
      const leftover = join(files.folder, `${"0".repeat(64)}.crash.tmp`);
      writeFileSync(leftover, "half");
      utimesSync(leftover, new Date(clock.now()), new Date(clock.now()));
      clock.advance(HOUR / 2);
      // The same bytes sent again later: their copy is needed after the first entry goes.
      await sendFile("file:j4:cccc", "shared", "delivered");
      clock.advance(HOUR / 2 + 1);

      expect(await worker.prunePass()).toMatchObject({ outbox: 2, outboxFiles: 2 });
      const left = () => readdirSync(files.folder).sort();
      expect(left()).toEqual([digest("shared"), digest("waiting")].sort());

      clock.advance(HOUR);
      expect(await worker.prunePass()).toMatchObject({ outbox: 1, outboxFiles: 1 });
      expect(left()).toEqual([digest("waiting")]);
      expect(existsSync(join(files.folder, digest("waiting")))).toBe(true);
    } finally {
      rmSync(history, { recursive: true, force: true });
    }
  });

  it("refuses a retention that is not positive", () => {
    const { logger } = recordingLogger();
    expect(() => new RetentionWorker({ queue, outbox, retentionMs: 0, clock, logger })).toThrow(
      /retentionMs/,
    );
  });
});

/** The name of the stored copy of `text`'s bytes. */
function digest(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}
