/**
 * The JobQueue + JobAdmin contract, written once and run against every adapter
 * (test/queue/sqlite.test.ts, test/queue/memory.test.ts; Postgres later).
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { UserError } from "../../src/base/errors.js";
import type { ClaimedJob, JobAdmin, JobQueue, JobWait, NewJob } from "../../src/ports/index.js";
import type { TestClock } from "../helpers/clock.js";
import { hangGuard } from "../helpers/wait.js";

/** A queue under test, empty, with the clock it reads. */
export interface QueueFixture {
  queue: JobQueue & JobAdmin;
  clock: TestClock;
  /** Closes the queue and deletes its storage. */
  cleanup(): Promise<void>;
}

/** A chat job for `sessionKey`; `overrides` change any field. */
export function chatJob(
  sessionKey: string,
  message: string,
  overrides: Partial<NewJob> = {},
): NewJob {
  return {
    agentId: "pickle",
    sessionKey,
    message,
    mode: "chat",
    replyTo: { kind: "telegram", chatId: sessionKey },
    ...overrides,
  };
}

/** Resolves on the listener's next call, or rejects after `timeoutMs` (a generous bound). */
export function nextRunnable(queue: JobQueue, timeoutMs = 10_000): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      unsubscribe();
      reject(new Error(`onRunnable did not fire within ${hangGuard(timeoutMs)} ms`));
    }, hangGuard(timeoutMs));
    const unsubscribe = queue.onRunnable(() => {
      clearTimeout(timer);
      unsubscribe();
      resolve();
    });
  });
}

const messages = (jobs: ClaimedJob[]) => jobs.map((job) => job.message);

/** Runs the contract against queues made by `makeQueue`. */
export function queueContract(name: string, makeQueue: () => Promise<QueueFixture>): void {
  describe(`JobQueue contract: ${name}`, () => {
    let fixture: QueueFixture;
    let queue: JobQueue & JobAdmin;
    let clock: TestClock;

    beforeEach(async () => {
      fixture = await makeQueue();
      ({ queue, clock } = fixture);
    });

    afterEach(async () => {
      await fixture.cleanup();
    });

    it("returns the stored job from enqueue, queued and due now", async () => {
      const job = await queue.enqueue(chatJob("telegram:1", "hello", { maxAttempts: 3 }));
      expect(job).toMatchObject({
        agentId: "pickle",
        sessionKey: "telegram:1",
        sessionId: null,
        message: "hello",
        mode: "chat",
        replyTo: { kind: "telegram", chatId: "telegram:1" },
        state: "queued",
        attempts: 0,
        maxAttempts: 3,
        runAt: clock.now(),
        lockedBy: null,
        lastError: null,
        errors: [],
      });
      expect(await queue.get(job.id)).toEqual(job);
    });

    it("keeps the files sent with a message, for the job that reads them; none by default", async () => {
      const attachments = [
        {
          kind: "image" as const,
          source: "file-1",
          name: "cat.jpg",
          mimeType: "image/jpeg",
          size: 1234,
        },
        { kind: "voice" as const, source: "file-2" },
      ];
      const job = await queue.enqueue(chatJob("telegram:1", "look", { attachments }));
      expect(job.attachments).toEqual(attachments);
      expect((await queue.get(job.id))?.attachments).toEqual(attachments);
      const [claimed] = await queue.claim("w1", 1);
      expect(claimed?.attachments).toEqual(attachments);
      expect((await queue.enqueue(chatJob("telegram:2", "text only"))).attachments).toEqual([]);
    });

    it("prunes done and failed jobs past the retention, keeping unfinished and recent ones", async () => {
      for (const key of ["done", "failed", "running"]) {
        await queue.enqueue(chatJob(key, key, { maxAttempts: 1 }));
      }
      await queue.enqueue(chatJob("queued", "later", { runAt: clock.now() + 3_600_000 }));
      const claimed = await queue.claim("w", 10);
      const byKey = new Map(claimed.map((job) => [job.sessionKey, job]));
      expect(await queue.complete(byKey.get("done") as ClaimedJob)).toBe(true);
      expect(await queue.fail(byKey.get("failed") as ClaimedJob, "boom", null)).toBe(true);
      clock.advance(1000);
      const cutoff = clock.now();
      const recent = await queue.enqueue(chatJob("recent", "recent"));
      const [recentClaim] = await queue.claim("w", 10);
      expect(recentClaim?.id).toBe(recent.id);
      await queue.complete(recentClaim as ClaimedJob);

      expect(await queue.prune(cutoff)).toBe(2);

      expect(await queue.get((byKey.get("done") as ClaimedJob).id)).toBeNull();
      expect(await queue.get((byKey.get("failed") as ClaimedJob).id)).toBeNull();
      expect(await queue.counts()).toMatchObject({ done: 1, failed: 0, running: 1, queued: 1 });
      expect(await queue.prune(cutoff)).toBe(0);
    });

    it("prunes at most a batch at a time", async () => {
      for (const key of ["a", "b", "c"]) await queue.enqueue(chatJob(key, key));
      for (const job of await queue.claim("w", 10)) await queue.complete(job);
      clock.advance(1);
      expect(await queue.prune(clock.now(), 2)).toBe(2);
      expect(await queue.prune(clock.now(), 2)).toBe(1);
      expect((await queue.counts()).done).toBe(0);
    });

    it("runs the jobs of one session one at a time, in arrival order", async () => {
      for (const text of ["first", "second", "third"]) await queue.enqueue(chatJob("s", text));
      for (const text of ["first", "second", "third"]) {
        const claimed = await queue.claim("w", 10);
        expect(messages(claimed)).toEqual([text]);
        expect(await queue.claim("w", 10)).toEqual([]);
        expect(await queue.complete(claimed[0] as ClaimedJob)).toBe(true);
      }
      expect(await queue.claim("w", 10)).toEqual([]);
    });

    it("runs different sessions at once, oldest first, up to the limit", async () => {
      for (const key of ["a", "b", "c", "d", "e"]) await queue.enqueue(chatJob(key, `job ${key}`));
      const first = await queue.claim("w", 3);
      expect(messages(first)).toEqual(["job a", "job b", "job c"]);
      expect(new Set(first.map((job) => job.lockToken)).size).toBe(3);
      expect(messages(await queue.claim("w", 10))).toEqual(["job d", "job e"]);
    });

    it("claims at most one job per session in one claim", async () => {
      await queue.enqueue(chatJob("a", "a1"));
      await queue.enqueue(chatJob("a", "a2"));
      await queue.enqueue(chatJob("b", "b1"));
      expect(messages(await queue.claim("w", 10))).toEqual(["a1", "b1"]);
    });

    it("does not run a delayed job before its time", async () => {
      await queue.enqueue(chatJob("s", "later", { runAt: clock.now() + 60_000 }));
      await queue.enqueue(chatJob("t", "now"));
      expect(messages(await queue.claim("w", 10))).toEqual(["now"]);
      clock.advance(59_999);
      expect(await queue.claim("w", 10)).toEqual([]);
      clock.advance(1);
      expect(messages(await queue.claim("w", 10))).toEqual(["later"]);
    });

    it("keeps session order while the first job waits for its retry", async () => {
      await queue.enqueue(chatJob("s", "first"));
      await queue.enqueue(chatJob("s", "second"));
      const [first] = await queue.claim("w", 10);
      expect(await queue.fail(first as ClaimedJob, "429 rate limited", clock.now() + 10_000)).toBe(
        true,
      );
      expect(await queue.claim("w", 10)).toEqual([]);
      clock.advance(10_000);
      const [again] = await queue.claim("w", 10);
      expect(again).toMatchObject({ message: "first", attempts: 2, lastError: "429 rate limited" });
      await queue.complete(again as ClaimedJob);
      expect(messages(await queue.claim("w", 10))).toEqual(["second"]);
    });

    it("counts every claim as an attempt", async () => {
      await queue.enqueue(chatJob("s", "flaky"));
      for (const attempt of [1, 2, 3]) {
        const [job] = await queue.claim("w", 1);
        expect(job?.attempts).toBe(attempt);
        await queue.fail(job as ClaimedJob, `error ${attempt}`, clock.now());
      }
      expect((await queue.list())[0]?.attempts).toBe(3);
    });

    it("refuses changes from a stale claim after recovery (fencing)", async () => {
      await queue.enqueue(chatJob("s", "hello"));
      const [stale] = (await queue.claim("old-process", 1)) as [ClaimedJob];
      expect(await queue.recover("old-process")).toBe(1);
      const [fresh] = (await queue.claim("new-process", 1)) as [ClaimedJob];
      expect(fresh.lockToken).not.toBe(stale.lockToken);
      expect(await queue.complete(stale)).toBe(false);
      expect(await queue.fail(stale, "late", null)).toBe(false);
      expect(await queue.checkpoint(stale, "session-1")).toBe(false);
      expect(await queue.get(fresh.id)).toMatchObject({
        state: "running",
        lockedBy: "new-process",
        message: "hello",
        sessionId: null,
      });
      expect(await queue.complete(fresh)).toBe(true);
      expect(await queue.complete(fresh)).toBe(false);
      expect((await queue.get(fresh.id))?.state).toBe("done");
    });

    it("records the checkpoint: the session id, and the message becomes '.'", async () => {
      await queue.enqueue(chatJob("s", "remember this"));
      const [job] = (await queue.claim("w", 1)) as [ClaimedJob];
      expect(await queue.checkpoint(job, "session-7")).toBe(true);
      expect(await queue.get(job.id)).toMatchObject({ message: ".", sessionId: "session-7" });
      await queue.recover("w");
      expect(await queue.claim("w", 1)).toMatchObject([{ message: ".", sessionId: "session-7" }]);
    });

    it("fails a job for good with its error history, and frees its session", async () => {
      await queue.enqueue(chatJob("s", "doomed", { maxAttempts: 2 }));
      await queue.enqueue(chatJob("s", "next"));
      const [first] = (await queue.claim("w", 1)) as [ClaimedJob];
      await queue.fail(first, "503 overloaded", clock.now());
      clock.advance(5);
      const [second] = (await queue.claim("w", 1)) as [ClaimedJob];
      expect(await queue.fail(second, "503 again", null)).toBe(true);
      const failed = await queue.get(first.id);
      expect(failed).toMatchObject({ state: "failed", attempts: 2, lastError: "503 again" });
      expect(failed?.lockedBy).toBeNull();
      expect(failed?.errors).toEqual([
        { attempt: 1, at: clock.now() - 5, message: "503 overloaded" },
        { attempt: 2, at: clock.now(), message: "503 again" },
      ]);
      expect(await queue.counts()).toEqual({
        queued: 1,
        running: 0,
        waiting: 0,
        done: 0,
        failed: 1,
        stopped: 0,
      });
      expect((await queue.list({ state: "failed" })).map((job) => job.id)).toEqual([first.id]);
      expect(messages(await queue.claim("w", 10))).toEqual(["next"]);
    });

    it("ends a job the person stopped as stopped, not failed: listed, counted, not retried, and its session freed", async () => {
      await queue.enqueue(chatJob("s", "long story"));
      await queue.enqueue(chatJob("s", "next"));
      const [running] = (await queue.claim("w", 1)) as [ClaimedJob];
      expect(await queue.fail(running, "stopped by the user", null, { stopped: true })).toBe(true);
      const stopped = await queue.get(running.id);
      expect(stopped).toMatchObject({
        state: "stopped",
        stopRequested: true,
        lockedBy: null,
        lastError: "stopped by the user",
        errors: [{ attempt: 1, message: "stopped by the user" }],
      });
      expect((await queue.list({ state: "stopped" })).map((job) => job.id)).toEqual([running.id]);
      expect(await queue.list({ state: "failed" })).toEqual([]);
      expect(await queue.counts()).toMatchObject({ stopped: 1, failed: 0, queued: 1 });
      expect(await queue.retryFailed(running.id)).toBe(false);
      expect(messages(await queue.claim("w", 10))).toEqual(["next"]);
    });

    it("ends a job stopped before it ran (requestStop) as stopped at its next run", async () => {
      const job = await queue.enqueue(chatJob("s", "cancel me"));
      expect(await queue.requestStop(job.id)).toBe(true);
      const [claimed] = (await queue.claim("w", 1)) as [ClaimedJob];
      await queue.fail(claimed, "stopped by the user", null, { stopped: true });
      expect((await queue.get(job.id))?.state).toBe("stopped");
    });

    it("prunes stopped jobs past the retention like failed ones", async () => {
      await queue.enqueue(chatJob("s", "stop me"));
      const [claimed] = (await queue.claim("w", 1)) as [ClaimedJob];
      await queue.fail(claimed, "stopped by the user", null, { stopped: true });
      clock.advance(1);
      expect(await queue.prune(clock.now())).toBe(1);
      expect(await queue.get(claimed.id)).toBeNull();
    });

    it("requeues a failed job on retryFailed, with a fresh attempt budget", async () => {
      const job = await queue.enqueue(chatJob("s", "retry me", { maxAttempts: 1 }));
      expect(await queue.retryFailed(job.id)).toBe(false);
      const [claimed] = (await queue.claim("w", 1)) as [ClaimedJob];
      await queue.fail(claimed, "400 bad request", null);
      clock.advance(1000);
      expect(await queue.retryFailed(job.id)).toBe(true);
      expect(await queue.get(job.id)).toMatchObject({
        state: "queued",
        attempts: 0,
        runAt: clock.now(),
        errors: [{ attempt: 1, message: "400 bad request" }],
      });
      expect(await queue.retryFailed(job.id)).toBe(false);
      expect(await queue.retryFailed("no-such-job")).toBe(false);
      expect(await queue.claim("w", 1)).toMatchObject([{ id: job.id, attempts: 1 }]);
    });

    it("puts a retried failed job behind the jobs already waiting in its session", async () => {
      const doomed = await queue.enqueue(chatJob("s", "doomed", { maxAttempts: 1 }));
      await queue.enqueue(chatJob("s", "waiting"));
      const [claimed] = (await queue.claim("w", 1)) as [ClaimedJob];
      await queue.fail(claimed, "boom", null);
      await queue.retryFailed(doomed.id);
      const [waiting] = (await queue.claim("w", 10)) as [ClaimedJob];
      expect(waiting.message).toBe("waiting");
      expect(await queue.claim("w", 10)).toEqual([]);
      await queue.complete(waiting);
      expect(messages(await queue.claim("w", 10))).toEqual(["doomed"]);
    });

    it("recovers only the jobs of the named worker, due at once", async () => {
      await queue.enqueue(chatJob("a", "mine"));
      await queue.enqueue(chatJob("b", "theirs"));
      await queue.claim("host-1", 1);
      await queue.claim("host-2", 1);
      clock.advance(60_000);
      expect(await queue.recover("host-1")).toBe(1);
      expect(await queue.recover("host-1")).toBe(0);
      expect(await queue.counts()).toMatchObject({ queued: 1, running: 1 });
      const [again] = (await queue.claim("host-1", 10)) as [ClaimedJob];
      expect(again).toMatchObject({ message: "mine", attempts: 2, lockedBy: "host-1" });
      expect(again.errors).toHaveLength(1);
      expect(again.errors[0]?.message).toMatch(/interrupted/);
      expect((await queue.list({ state: "running" })).map((job) => job.lockedBy).sort()).toEqual([
        "host-1",
        "host-2",
      ]);
    });

    it("requeues running jobs whoever claimed them: one by id, or all (the lock holder's recovery)", async () => {
      const a = await queue.enqueue(chatJob("a", "on a dead host"));
      await queue.enqueue(chatJob("b", "on a renamed host"));
      await queue.enqueue(chatJob("c", "waiting"));
      await queue.claim("dead-host", 1);
      await queue.claim("renamed-host", 1);
      expect(await queue.requeueRunning({ id: a.id })).toBe(1);
      expect(await queue.requeueRunning({ id: a.id })).toBe(0);
      expect(await queue.counts()).toMatchObject({ queued: 2, running: 1 });
      expect(await queue.requeueRunning()).toBe(1);
      expect(await queue.counts()).toMatchObject({ queued: 3, running: 0 });
      const again = await queue.get(a.id);
      expect(again?.errors[0]?.message).toMatch(/interrupted/);
    });

    it("gives the attempt back on a transient failure, and keeps the error", async () => {
      await queue.enqueue(chatJob("a", "during an outage"));
      const [job] = (await queue.claim("w", 1)) as [ClaimedJob];
      expect(await queue.fail(job, "529 overloaded", clock.now(), { transient: true })).toBe(true);
      const [again] = (await queue.claim("w", 1)) as [ClaimedJob];
      expect(again).toMatchObject({ attempts: 1, lastError: "529 overloaded" });
      expect(again.errors).toEqual([
        expect.objectContaining({ attempt: 1, message: "529 overloaded" }),
      ]);
    });

    it("stores a job once per dedupe key and returns the first one", async () => {
      const first = await queue.enqueue(chatJob("cron:daily:1", "first", { dedupeKey: "daily@1" }));
      const second = await queue.enqueue(
        chatJob("cron:daily:1", "second", { dedupeKey: "daily@1" }),
      );
      const other = await queue.enqueue(chatJob("cron:daily:2", "other", { dedupeKey: "daily@2" }));
      expect(second).toEqual(first);
      expect(other.id).not.toBe(first.id);
      expect((await queue.counts()).queued).toBe(2);
    });

    it("claims only jobs of the agents asked for", async () => {
      await queue.enqueue(chatJob("a", "for pickle"));
      await queue.enqueue(chatJob("b", "for coder", { agentId: "coder" }));
      expect(messages(await queue.claim("w", 10, { agentIds: ["coder"] }))).toEqual(["for coder"]);
      expect(await queue.claim("w", 10, { agentIds: [] })).toEqual([]);
      expect(messages(await queue.claim("w", 10))).toEqual(["for pickle"]);
    });

    it("calls onRunnable listeners on enqueue and when a session's next job is freed", async () => {
      const enqueued = nextRunnable(queue);
      await queue.enqueue(chatJob("s", "one"));
      await enqueued;
      await queue.enqueue(chatJob("s", "two"));
      const [one] = (await queue.claim("w", 10)) as [ClaimedJob];
      const freed = nextRunnable(queue);
      await queue.complete(one);
      await freed;
    });

    it("calls onRunnable when a delayed job falls due", async () => {
      const due = nextRunnable(queue);
      await queue.enqueue(chatJob("s", "soon", { runAt: clock.now() + 20 }));
      clock.advance(20);
      await due;
      expect(messages(await queue.claim("w", 1))).toEqual(["soon"]);
    });

    it("stops calling a listener once unsubscribed", async () => {
      let calls = 0;
      const unsubscribe = queue.onRunnable(() => {
        calls += 1;
      });
      unsubscribe();
      await queue.enqueue(chatJob("s", "quiet"));
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(calls).toBe(0);
    });

    it("lists the jobs whose session key starts with a prefix, taken literally", async () => {
      const first = await queue.enqueue(chatJob("cron:news:2025-01-01T08:00:00.000Z", "a"));
      await queue.enqueue(chatJob("cron:news_x:2025-01-01T08:00:00.000Z", "b"));
      await queue.enqueue(chatJob("cron:newsXx:2025-01-01T08:00:00.000Z", "c"));
      const manual = await queue.enqueue(chatJob("cron:news:manual:2025-01-02T08:00:00.000Z", "d"));
      const listed = await queue.list({ sessionKeyPrefix: "cron:news:" });
      expect(listed.map((job) => job.id)).toEqual([manual.id, first.id]);
      expect(await queue.list({ sessionKeyPrefix: "cron:news_" })).toHaveLength(1);
    });

    it("lists newest first with a state filter and a limit, and counts by state", async () => {
      const ids: string[] = [];
      for (const key of ["a", "b", "c", "d"]) ids.push((await queue.enqueue(chatJob(key, key))).id);
      const [a] = (await queue.claim("w", 1)) as [ClaimedJob];
      await queue.complete(a);
      await queue.claim("w", 1);
      expect((await queue.list()).map((job) => job.id)).toEqual([...ids].reverse());
      expect((await queue.list({ limit: 2 })).map((job) => job.id)).toEqual([ids[3], ids[2]]);
      expect((await queue.list({ state: "done" })).map((job) => job.id)).toEqual([ids[0]]);
      expect((await queue.list({ state: "queued" })).map((job) => job.id)).toEqual([
        ids[3],
        ids[2],
      ]);
      expect(await queue.counts()).toEqual({
        queued: 2,
        running: 1,
        waiting: 0,
        done: 1,
        failed: 0,
        stopped: 0,
      });
      expect(await queue.get("no-such-job")).toBeNull();
    });

    describe("batch jobs", () => {
      const step = {
        customId: "pb_job_step",
        batchId: null,
        at: 1_000,
        steps: 1,
        fallback: false,
      };

      it("stores the model a job names (a cron's), null when it names none", async () => {
        const plain = await queue.enqueue(chatJob("p", "plain"));
        const named = await queue.enqueue(chatJob("m", "on haiku", { model: "haiku" }));
        expect(plain.model).toBeNull();
        expect(named.model).toBe("haiku");
        const claimed = await queue.claim("w", 5);
        expect(claimed.find((job) => job.sessionKey === "m")?.model).toBe("haiku");
        expect((await queue.get(plain.id))?.model).toBeNull();
      });

      it("stores the batch flag and, fenced, the batch step, kept across a park and a claim", async () => {
        const plain = await queue.enqueue(chatJob("p", "plain"));
        expect(plain).toMatchObject({ batch: false, batchStep: null });
        await queue.enqueue(chatJob("a", "batched", { batch: true }));
        const [job] = (await queue.claim("w", 5)).filter((j) => j.sessionKey === "a") as [
          ClaimedJob,
        ];
        expect(job).toMatchObject({ batch: true, batchStep: null });

        expect(await queue.recordBatchStep(job, step)).toBe(true);
        const sent = { ...step, batchId: "msgbatch_1" };
        expect(await queue.recordBatchStep(job, sent)).toBe(true);
        const wait = { kind: "batch" as const, batchIds: ["msgbatch_1"] };
        await queue.park(job, { wait, until: clock.now() + 1000, toolResults: [] });
        expect(await queue.get(job.id)).toMatchObject({ state: "waiting", waitingFor: wait });
        await queue.wake(job.id);
        const [again] = (await queue.claim("w", 5)) as [ClaimedJob];
        expect(again).toMatchObject({ id: job.id, batch: true, batchStep: sent });
      });

      it("refuses to record a batch step for a job whose lock it lost", async () => {
        await queue.enqueue(chatJob("a", "batched", { batch: true }));
        const [job] = (await queue.claim("w", 1)) as [ClaimedJob];
        await queue.requeueRunning();
        expect(await queue.recordBatchStep(job, step)).toBe(false);
        expect((await queue.get(job.id))?.batchStep).toBeNull();
      });
    });

    it("stores who sent a chat job's message, and refuses a sender of the wrong shape", async () => {
      const sender = { person: "telegram:1001", direct: false };
      const job = await queue.enqueue(chatJob("a", "hello", { sender }));
      expect(job.sender).toEqual(sender);
      expect(await queue.get(job.id)).toMatchObject({ sender });
      const [claimed] = (await queue.claim("w", 1)) as [ClaimedJob];
      expect(claimed.sender).toEqual(sender);
      expect((await queue.enqueue(chatJob("b", "cron"))).sender).toBeNull();
      const bad = { person: "", direct: "yes" } as unknown as NewJob["sender"];
      await expect(queue.enqueue(chatJob("c", "x", { sender: bad }))).rejects.toThrow(/sender/);
    });

    describe("parked jobs", () => {
      const HOUR = 3_600_000;

      /** Enqueues and claims a job of `key`, then parks it for `wait` until an hour from now. */
      async function parked(key: string, wait: JobWait = { kind: "time" }): Promise<ClaimedJob> {
        await queue.enqueue(chatJob(key, `${key} parent`));
        const [job] = (await queue.claim("w", 1)) as [ClaimedJob];
        const toolResults = [{ type: "tool_result" as const, tool_use_id: "t1", content: "kept" }];
        expect(await queue.park(job, { wait, until: clock.now() + HOUR, toolResults })).toBe(true);
        return job;
      }

      it("shows a parked job as waiting, with what it waits for, and holds no worker", async () => {
        const job = await parked("a", { kind: "approval", approvalId: "ap1" });
        expect(await queue.get(job.id)).toMatchObject({
          state: "waiting",
          waitingFor: { kind: "approval", approvalId: "ap1" },
          lockedBy: null,
          attempts: 0,
        });
        expect(await queue.counts()).toMatchObject({ waiting: 1, queued: 0, running: 0 });
        expect((await queue.list({ state: "waiting" })).map((j) => j.id)).toEqual([job.id]);
        expect(await queue.list({ state: "queued" })).toEqual([]);
        expect(await queue.claim("w", 5)).toEqual([]);
      });

      it("keeps its session's line blocked, but not other sessions", async () => {
        await parked("a");
        await queue.enqueue(chatJob("a", "a next"));
        await queue.enqueue(chatJob("b", "b first"));
        expect(messages(await queue.claim("w", 5))).toEqual(["b first"]);
      });

      it("refuses to park a job whose lock it lost", async () => {
        await queue.enqueue(chatJob("a", "a"));
        const [job] = (await queue.claim("w", 1)) as [ClaimedJob];
        await queue.requeueRunning();
        const parking = {
          wait: { kind: "time" as const },
          until: clock.now() + HOUR,
          toolResults: [],
        };
        expect(await queue.park(job, parking)).toBe(false);
        expect((await queue.get(job.id))?.state).toBe("queued");
      });

      it("runs it again when woken, with the attempt it parked given back", async () => {
        const job = await parked("a");
        const runnable = nextRunnable(queue);
        expect(await queue.wake(job.id)).toBe(true);
        await runnable;
        const [again] = (await queue.claim("w", 1)) as [ClaimedJob];
        expect(again).toMatchObject({ id: job.id, attempts: 1, waitingFor: null });
        expect(again.toolResults).toEqual([
          { type: "tool_result", tool_use_id: "t1", content: "kept" },
        ]);
        expect(await queue.wake(job.id)).toBe(false);
      });

      it("runs it at its deadline when nothing wakes it", async () => {
        const job = await parked("a");
        clock.advance(HOUR - 1);
        expect(await queue.claim("w", 1)).toEqual([]);
        clock.advance(1);
        expect((await queue.claim("w", 1)).map((j) => j.id)).toEqual([job.id]);
      });

      it("wakes the parent when a child ends, done, failed or stopped, and lists the children", async () => {
        for (const end of ["done", "failed", "stopped"] as const) {
          const parent = await parked(`p-${end}`, { kind: "children", jobIds: [] });
          const child = await queue.enqueue(
            chatJob(`c-${end}`, "child", { parentId: parent.id, mode: "job" }),
          );
          expect(child.parentId).toBe(parent.id);
          expect((await queue.list({ parentId: parent.id })).map((j) => j.id)).toEqual([child.id]);
          const [claimed] = (await queue.claim("w", 1)) as [ClaimedJob];
          expect(claimed.id).toBe(child.id);
          if (end === "done") await queue.complete(claimed);
          else await queue.fail(claimed, "boom", null, { stopped: end === "stopped" });
          expect((await queue.get(child.id))?.state).toBe(end);
          expect((await queue.get(parent.id))?.state).toBe("queued");
          expect((await queue.claim("w", 1)).map((j) => j.id)).toEqual([parent.id]);
        }
      });

      it("does not wake the parent on a child's retry, only when it ends", async () => {
        const parent = await parked("p", { kind: "children", jobIds: [] });
        await queue.enqueue(chatJob("c", "child", { parentId: parent.id, mode: "job" }));
        const [child] = (await queue.claim("w", 1)) as [ClaimedJob];
        await queue.fail(child, "flaky", clock.now());
        expect((await queue.get(parent.id))?.state).toBe("waiting");
      });

      it("asks a waiting or queued job to stop: due at once, marked, not running", async () => {
        const job = await parked("a");
        expect(await queue.requestStop(job.id)).toBe(true);
        const [claimed] = (await queue.claim("w", 1)) as [ClaimedJob];
        expect(claimed).toMatchObject({ id: job.id, stopRequested: true });
        expect(await queue.requestStop(job.id)).toBe(false);
      });
    });

    it("refuses a malformed job with a message naming the field", async () => {
      const bad = chatJob("s", "hi", { replyTo: { kind: "pager" } as never });
      await expect(queue.enqueue(bad)).rejects.toThrow(UserError);
      await expect(queue.enqueue(bad)).rejects.toThrow(/replyTo is not a valid reply target/);
      await expect(queue.enqueue(chatJob("", "hi"))).rejects.toThrow(/sessionKey must be/);
      expect((await queue.counts()).queued).toBe(0);
    });
  });
}
