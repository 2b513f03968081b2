import { existsSync, mkdirSync, mkdtempSync, rmSync, unlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadCronDir } from "../../src/cron/definition.js";
import { CronWorker, describeCrons, runCronNow } from "../../src/cron/worker.js";
import type { CronStateStore } from "../../src/ports/index.js";
import { MemoryCronStateStore } from "../../src/storage/memory/cron-state.js";
import { TestClock } from "../helpers/clock.js";
import { type LogLine, recordingLogger } from "../helpers/log.js";
import { waitFor } from "../helpers/wait.js";
import { RecordingQueue } from "./fakes.js";
import { writeCron as writeCronFile } from "./files.js";

const defaults = { agentId: "pickle", timezone: "Europe/Berlin" };

let workspace: string;
let cronDir: string;

beforeEach(() => {
  workspace = mkdtempSync(join(tmpdir(), "picklebot-cron-worker-"));
  cronDir = join(workspace, "crons");
  mkdirSync(cronDir);
});

afterEach(() => {
  rmSync(workspace, { recursive: true, force: true });
});

/** Writes crons/<id>.yaml in one step (temp file + rename), as editors do. */
function writeCron(id: string, yaml: string): string {
  return writeCronFile(cronDir, id, yaml);
}

/** A started CronWorker plus the handles a test needs. */
interface Harness {
  worker: CronWorker;
  lines: LogLine[];
  /** Resolves when the worker stopped; rejects if it crashed. */
  done: Promise<void>;
  advanceTo(iso: string): Promise<void>;
  stop(): Promise<void>;
}

async function startWorker(
  time: TestClock,
  queue: RecordingQueue,
  state: CronStateStore,
): Promise<Harness> {
  const { logger, lines } = recordingLogger();
  const worker = new CronWorker({
    cronDir,
    defaults,
    queue,
    state,
    clock: time,
    logger,
    maxAttempts: 3,
    timers: time,
    reloadDebounceMs: 20,
  });
  const controller = new AbortController();
  const done = worker.run(controller.signal);
  done.catch(() => {}); // inspected by the tests that expect a crash
  await worker.whenIdle();
  return {
    worker,
    lines,
    done,
    advanceTo: (iso) => time.advanceTo(iso, () => worker.whenIdle()),
    stop: async () => {
      controller.abort();
      await done;
    },
  };
}

/** Waits (polling, generously) until the worker logged `msg` for `cron`, then settles it. */
async function waitForLog(harness: Harness, msg: string, cron: string): Promise<void> {
  await waitFor(
    () => harness.lines.some((line) => line.msg === msg && line.cron === cron),
    `"${msg}" for ${cron}`,
  );
  await harness.worker.whenIdle();
}

describe("CronWorker", () => {
  it("fires each cron at its time in its own time zone, with a fresh session per occurrence", async () => {
    writeCron("berlin", 'schedule: "0 8 * * *"\nprompt: Good morning, Berlin\n');
    writeCron(
      "newyork",
      'schedule: "0 8 * * *"\ntimezone: America/New_York\nagent: scout\nprompt: Good morning, NY\ndeliver_to: telegram:42\n',
    );
    const time = new TestClock("2025-01-15T00:00:00Z");
    const queue = new RecordingQueue(time);
    const harness = await startWorker(time, queue, new MemoryCronStateStore());

    await harness.advanceTo("2025-01-16T23:59:00Z");

    expect(
      queue.jobs.map((job) => [job.sessionKey, new Date(job.enqueuedAt).toISOString()]),
    ).toEqual([
      ["cron:berlin:2025-01-15T07:00:00.000Z", "2025-01-15T07:00:00.000Z"],
      ["cron:newyork:2025-01-15T13:00:00.000Z", "2025-01-15T13:00:00.000Z"],
      ["cron:berlin:2025-01-16T07:00:00.000Z", "2025-01-16T07:00:00.000Z"],
      ["cron:newyork:2025-01-16T13:00:00.000Z", "2025-01-16T13:00:00.000Z"],
    ]);
    expect(queue.jobs[1]).toMatchObject({
      agentId: "scout",
      sessionId: null,
      message: "Good morning, NY",
      mode: "job",
      replyTo: { kind: "telegram", chatId: "42" },
      dedupeKey: "cron:newyork:2025-01-15T13:00:00.000Z",
      maxAttempts: 3,
    });
    expect(queue.jobs[0]).toMatchObject({ agentId: "pickle", replyTo: { kind: "silent" } });
    await harness.stop();
  });

  it("fires a 02:30 Berlin cron once on the spring-forward day, right after the gap", async () => {
    writeCron("night", 'schedule: "30 2 * * *"\nprompt: nightly\n');
    const time = new TestClock("2025-03-29T12:00:00Z");
    const queue = new RecordingQueue(time);
    const harness = await startWorker(time, queue, new MemoryCronStateStore());

    await harness.advanceTo("2025-03-31T12:00:00Z");

    expect(queue.keys()).toEqual([
      "cron:night:2025-03-30T01:00:00.000Z", // 03:00 CEST: 02:30 did not exist that night
      "cron:night:2025-03-31T00:30:00.000Z", // 02:30 CEST
    ]);
    await harness.stop();
  });

  it("fires a 01:30 New York cron once on the fall-back day, when 01:30 happens twice", async () => {
    writeCron("early", 'schedule: "30 1 * * *"\ntimezone: America/New_York\nprompt: early\n');
    const time = new TestClock("2025-11-01T12:00:00Z");
    const queue = new RecordingQueue(time);
    const harness = await startWorker(time, queue, new MemoryCronStateStore());

    await harness.advanceTo("2025-11-03T12:00:00Z");

    expect(queue.keys()).toEqual([
      "cron:early:2025-11-02T05:30:00.000Z", // 01:30 EDT, the first 01:30
      "cron:early:2025-11-03T06:30:00.000Z", // 01:30 EST, the next day
    ]);
    await harness.stop();
  });

  it("does not fire an occurrence twice across a restart", async () => {
    writeCron("daily", 'schedule: "0 8 * * *"\nprompt: hi\n');
    const time = new TestClock("2025-01-15T06:00:00Z");
    const queue = new RecordingQueue(time);
    const state = new MemoryCronStateStore();
    const first = await startWorker(time, queue, state);
    await first.advanceTo("2025-01-15T07:00:00Z");
    expect(queue.keys()).toEqual(["cron:daily:2025-01-15T07:00:00.000Z"]);
    await first.stop();

    // A new process, same store, same moment.
    const second = await startWorker(time, queue, state);
    await second.advanceTo("2025-01-16T07:00:00Z");

    expect(queue.keys()).toEqual([
      "cron:daily:2025-01-15T07:00:00.000Z",
      "cron:daily:2025-01-16T07:00:00.000Z",
    ]);
    await second.stop();
  });

  it("enqueues exactly once when the process dies between enqueueing and recording", async () => {
    writeCron("daily", 'schedule: "0 8 * * *"\nprompt: hi\n');
    const time = new TestClock("2025-01-15T06:00:00Z");
    const queue = new RecordingQueue(time);
    const state = new MemoryCronStateStore();
    let failNextRecord = true;
    const flakyState: CronStateStore = {
      get: (id) => state.get(id),
      markSeen: (id, at) => state.markSeen(id, at),
      recordFired: async (id, occurrence, options) => {
        if (failNextRecord) {
          failNextRecord = false;
          throw new Error("disk I/O error");
        }
        return state.recordFired(id, occurrence, options);
      },
    };
    const first = await startWorker(time, queue, flakyState);
    await first.advanceTo("2025-01-15T07:00:00Z");
    await expect(first.done).rejects.toThrow("disk I/O error");
    expect(queue.jobs).toHaveLength(1);

    // The supervisor restarts the worker a few seconds later.
    time.set("2025-01-15T07:00:05Z");
    const second = await startWorker(time, queue, flakyState);

    expect(queue.keys()).toEqual(["cron:daily:2025-01-15T07:00:00.000Z"]);
    expect((await state.get("daily"))?.lastFiredAt).toBe(Date.parse("2025-01-15T07:00:00Z"));
    await second.stop();
  });

  it("still fires an occurrence whose enqueue failed, once the worker is restarted", async () => {
    writeCron("daily", 'schedule: "0 8 * * *"\nprompt: hi\n');
    const time = new TestClock("2025-01-15T06:00:00Z");
    const queue = new RecordingQueue(time);
    const state = new MemoryCronStateStore();
    const first = await startWorker(time, queue, state);
    queue.failNextEnqueue = new Error("database is locked");
    await first.advanceTo("2025-01-15T07:00:00Z");
    await expect(first.done).rejects.toThrow("database is locked");
    expect(queue.jobs).toHaveLength(0);

    time.set("2025-01-15T07:00:05Z");
    const second = await startWorker(time, queue, state);

    expect(queue.keys()).toEqual(["cron:daily:2025-01-15T07:00:00.000Z"]);
    await second.stop();
  });

  it("with catch_up, runs exactly one missed occurrence (the latest) at start-up", async () => {
    writeCron("digest", 'schedule: "0 8 * * *"\nprompt: digest\ncatch_up: true\n');
    const time = new TestClock("2025-01-15T06:00:00Z");
    const queue = new RecordingQueue(time);
    const state = new MemoryCronStateStore();
    const first = await startWorker(time, queue, state);
    await first.advanceTo("2025-01-15T12:00:00Z");
    await first.stop();

    // Down for three days.
    time.set("2025-01-18T12:00:00Z");
    const second = await startWorker(time, queue, state);

    expect(
      queue.jobs.map((job) => [job.sessionKey, new Date(job.enqueuedAt).toISOString()]),
    ).toEqual([
      ["cron:digest:2025-01-15T07:00:00.000Z", "2025-01-15T07:00:00.000Z"],
      ["cron:digest:2025-01-18T07:00:00.000Z", "2025-01-18T12:00:00.000Z"],
    ]);
    await second.advanceTo("2025-01-19T12:00:00Z");
    expect(queue.keys().at(-1)).toBe("cron:digest:2025-01-19T07:00:00.000Z");
    expect(queue.jobs).toHaveLength(3);
    await second.stop();
  });

  it("without catch_up, skips occurrences missed while it was down", async () => {
    writeCron("digest", 'schedule: "0 8 * * *"\nprompt: digest\n');
    const time = new TestClock("2025-01-15T06:00:00Z");
    const queue = new RecordingQueue(time);
    const state = new MemoryCronStateStore();
    const first = await startWorker(time, queue, state);
    await first.advanceTo("2025-01-15T12:00:00Z");
    await first.stop();

    time.set("2025-01-18T12:00:00Z");
    const second = await startWorker(time, queue, state);
    expect(queue.keys()).toEqual(["cron:digest:2025-01-15T07:00:00.000Z"]);

    await second.advanceTo("2025-01-19T12:00:00Z");
    expect(queue.keys()).toEqual([
      "cron:digest:2025-01-15T07:00:00.000Z",
      "cron:digest:2025-01-19T07:00:00.000Z",
    ]);
    await second.stop();
  });

  it("fires a one_off cron once, never again (even after a restart or an edit), and keeps the file", async () => {
    const file = writeCron("reminder", 'schedule: "0 9 * * *"\nprompt: Call mum\none_off: true\n');
    const time = new TestClock("2025-01-15T06:00:00Z");
    const queue = new RecordingQueue(time);
    const state = new MemoryCronStateStore();
    const first = await startWorker(time, queue, state);
    await first.advanceTo("2025-01-17T12:00:00Z");
    expect(queue.keys()).toEqual(["cron:reminder:2025-01-15T08:00:00.000Z"]);
    expect(existsSync(file)).toBe(true);

    writeCron("reminder", 'schedule: "0 10 * * *"\nprompt: Call mum again\none_off: true\n');
    await waitForLog(first, "cron changed", "reminder");
    await first.advanceTo("2025-01-18T12:00:00Z");
    await first.stop();

    const second = await startWorker(time, queue, state);
    await second.advanceTo("2025-01-20T12:00:00Z");
    expect(queue.jobs).toHaveLength(1);
    expect(existsSync(file)).toBe(true);
    const [row] = await describeCrons(loadCronDir(cronDir, defaults).crons, state, time);
    expect(row).toMatchObject({ id: "reminder", status: "done (one_off)", nextRunAt: null });
    await second.stop();
  });

  it("picks up added, changed and removed files without a restart", async () => {
    const time = new TestClock("2025-01-15T06:00:00Z");
    const queue = new RecordingQueue(time);
    const harness = await startWorker(time, queue, new MemoryCronStateStore());

    writeCron("tick", 'schedule: "0 * * * *"\ntimezone: UTC\nprompt: tick\n');
    await waitForLog(harness, "cron added", "tick");
    await harness.advanceTo("2025-01-15T08:30:00Z");
    expect(queue.keys()).toEqual([
      "cron:tick:2025-01-15T07:00:00.000Z",
      "cron:tick:2025-01-15T08:00:00.000Z",
    ]);

    writeCron("tick", 'schedule: "45 * * * *"\ntimezone: UTC\nprompt: tick\n');
    await waitForLog(harness, "cron changed", "tick");
    await harness.advanceTo("2025-01-15T09:50:00Z");
    expect(queue.keys().slice(2)).toEqual([
      "cron:tick:2025-01-15T08:45:00.000Z",
      "cron:tick:2025-01-15T09:45:00.000Z",
    ]);

    unlinkSync(join(cronDir, "tick.yaml"));
    await waitForLog(harness, "cron removed", "tick");
    await harness.advanceTo("2025-01-16T12:00:00Z");
    expect(queue.jobs).toHaveLength(4);
    await harness.stop();
  });

  it("reports a bad file once, with its path and field, and keeps firing the others", async () => {
    const badFile = writeCron("broken", 'schedule: "0 8 * * *"\n');
    writeCron("good", 'schedule: "0 8 * * *"\nprompt: still here\n');
    const time = new TestClock("2025-01-15T06:00:00Z");
    const queue = new RecordingQueue(time);
    const harness = await startWorker(time, queue, new MemoryCronStateStore());
    const errorsFor = (): LogLine[] =>
      harness.lines.filter((line) => line.file === badFile && line.level >= 50);

    expect(errorsFor()).toHaveLength(1);
    expect(errorsFor()[0]).toMatchObject({ field: "prompt" });
    expect(errorsFor()[0]?.msg).toContain(badFile);
    expect(errorsFor()[0]?.msg).toContain("prompt: missing");

    // Another file changes: the folder is reloaded, the unchanged bad file is not reported again.
    writeCron("other", 'schedule: "0 9 * * *"\nprompt: other\n');
    await waitForLog(harness, "cron added", "other");
    expect(errorsFor()).toHaveLength(1);

    await harness.advanceTo("2025-01-15T12:00:00Z");
    expect(queue.keys()).toEqual([
      "cron:good:2025-01-15T07:00:00.000Z",
      "cron:other:2025-01-15T08:00:00.000Z",
    ]);

    // The bad file changes and is still bad: reported again, with the new field.
    writeCron("broken", 'schedule: "0 8 * *"\nprompt: fixed the prompt\n');
    await waitFor(() => errorsFor().length === 2, "two errors");
    expect(errorsFor()[1]).toMatchObject({ field: "schedule" });
    await harness.stop();
  });

  it("never fires a disabled cron, but still lists it and runs it by hand", async () => {
    writeCron("quiet", 'schedule: "*/5 * * * *"\nprompt: shh\nenabled: false\n');
    const time = new TestClock("2025-01-15T06:00:00Z");
    const queue = new RecordingQueue(time);
    const state = new MemoryCronStateStore();
    const harness = await startWorker(time, queue, state);
    await harness.advanceTo("2025-01-18T06:00:00Z");
    expect(queue.jobs).toHaveLength(0);

    const [quiet] = loadCronDir(cronDir, defaults).crons;
    if (quiet === undefined) throw new Error("quiet.yaml did not load");
    expect((await describeCrons([quiet], state, time))[0]).toMatchObject({
      id: "quiet",
      enabled: false,
      status: "disabled",
      nextRunAt: null,
      deliverTo: "silent",
    });
    const job = await runCronNow(quiet, queue, time);
    expect(job.sessionKey).toBe("cron:quiet:manual:2025-01-18T06:00:00.000Z");
    expect(queue.jobs).toHaveLength(1);
    await harness.stop();
  });
});
