import { readdirSync } from "node:fs";
import type pg from "pg";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ClaimedJob } from "../../src/ports/index.js";
import { connectionConfig, openPostgres } from "../../src/storage/postgres/database.js";
import { PostgresJobQueue } from "../../src/storage/postgres/queue.js";
import { TestClock } from "../helpers/clock.js";
import { postgresSkipReason, useMigratedDatabase } from "../helpers/postgres.js";
import { chatJob, nextRunnable, queueContract } from "./contract.js";

const skipReason = await postgresSkipReason();

describe.skipIf(skipReason !== null)("PostgresJobQueue", () => {
  const database = useMigratedDatabase("queue");

  /** A queue on the test database, emptied first. */
  async function openQueue(clock = new TestClock()) {
    const pool = await openPostgres({ url: database().url, poolSize: 4 });
    const queue = new PostgresJobQueue({
      pool,
      clock,
      connection: connectionConfig({ url: database().url }),
      backstopPollMs: 50,
    });
    return { pool, queue, clock };
  }

  queueContract("postgres", async () => {
    await database().query("TRUNCATE jobs RESTART IDENTITY");
    const { pool, queue, clock } = await openQueue();
    return {
      queue,
      clock,
      async cleanup() {
        await queue.close();
        await pool.end();
      },
    };
  });

  describe("across connections", () => {
    const opened: { pool: pg.Pool; queue: PostgresJobQueue }[] = [];

    beforeEach(async () => {
      await database().query("TRUNCATE jobs RESTART IDENTITY");
    });

    afterEach(async () => {
      for (const { pool, queue } of opened.splice(0)) {
        await queue.close();
        await pool.end();
      }
    });

    async function process(clock?: TestClock) {
      const opening = await openQueue(clock);
      opened.push(opening);
      return opening.queue;
    }

    it("wakes an idle process when another one enqueues (LISTEN/NOTIFY)", async () => {
      const [server, cli] = [await process(), await process()];
      // The first call comes from subscribing; the second from the notification.
      await nextRunnable(server);
      const woken = nextRunnable(server);
      const job = await cli.enqueue(chatJob("telegram:1", "hello"));
      await woken;
      expect(await server.claim("server", 10)).toMatchObject([{ id: job.id }]);
    });

    it("never hands one job to two processes claiming at once, and keeps session order", async () => {
      const producer = await process();
      const total = 300;
      for (let index = 0; index < total; index += 1) {
        await producer.enqueue(chatJob(`session-${index % 30}`, String(index)));
      }
      const workers = [await process(), await process(), await process()];
      const seen: number[][] = [];
      await Promise.all(
        workers.map(async (queue, worker) => {
          for (;;) {
            const jobs = await queue.claim(`worker-${worker}`, 4);
            if (jobs.length === 0 && (await queue.counts()).queued === 0) return;
            for (const job of jobs) {
              seen.push([Number(job.message), worker]);
              expect(await queue.complete(job)).toBe(true);
            }
          }
        }),
      );
      const messages = seen.map(([message]) => message as number);
      expect(new Set(messages).size).toBe(total);
      expect(messages).toHaveLength(total);
      for (let session = 0; session < 30; session += 1) {
        const order = messages.filter((message) => message % 30 === session);
        expect(order).toEqual([...order].sort((a, b) => a - b));
      }
      expect(await producer.counts()).toEqual({
        queued: 0,
        running: 0,
        waiting: 0,
        done: total,
        failed: 0,
        stopped: 0,
      });
    });

    it("fails a job whose row was edited into nonsense instead of handing it out", async () => {
      const queue = await process();
      const job = await queue.enqueue(chatJob("s", "hello"));
      await database().query("UPDATE jobs SET reply_to = 'not json' WHERE id = $1", [job.id]);
      expect(await queue.claim("w", 10)).toEqual([]);
      const failed = await queue.get(job.id);
      expect(failed?.state).toBe("failed");
      expect(failed?.lastError).toMatch(
        /^malformed job: reply_to "not json" is not a reply target/,
      );
    });

    it("completes a claimed job even when its connection was terminated", async () => {
      const queue = await process();
      await queue.enqueue(chatJob("s", "survive"));
      const [job] = (await queue.claim("w", 1)) as [ClaimedJob];
      await database().query(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()",
      );
      expect(await queue.complete(job)).toBe(true);
      expect((await queue.get(job.id))?.state).toBe("done");
    });

    it("prunes only finished jobs last changed before the cutoff", async () => {
      const clock = new TestClock();
      const queue = await process(clock);
      for (const key of ["done", "failed", "running", "queued"]) {
        await queue.enqueue(chatJob(key, key, { maxAttempts: 1 }));
      }
      const claimed = await queue.claim("w", 3);
      const byMessage = new Map(claimed.map((job) => [job.message, job]));
      await queue.complete(byMessage.get("done") as ClaimedJob);
      await queue.fail(byMessage.get("failed") as ClaimedJob, "400 bad request", null);
      clock.advance(60_000);
      const recent = await queue.enqueue(
        chatJob("recent", "finished just now", { agentId: "coder" }),
      );
      const [job] = (await queue.claim("w", 1, { agentIds: ["coder"] })) as [ClaimedJob];
      await queue.complete(job);
      expect(await queue.prune(clock.now() - 30_000)).toBe(2);
      const left = await queue.list();
      expect(left.map((entry) => entry.message).sort()).toEqual([
        "finished just now",
        "queued",
        "running",
      ]);
      expect(await queue.get(recent.id)).toMatchObject({ state: "done" });
    });

    it("migrates once when several processes start at the same time", async () => {
      const queues = await Promise.all([process(), process(), process()]);
      expect(queues).toHaveLength(3);
      const { rows } = await database().query("SELECT version FROM schema_migrations ORDER BY 1");
      const files = readdirSync(new URL("../../migrations/postgres/", import.meta.url));
      const versions = files.filter((file) => /^\d+_/.test(file)).map((file) => parseInt(file, 10));
      expect(rows.map((row) => row.version)).toEqual(versions.sort((a, b) => a - b));
    });
  });
});
