/**
 * The CronWorker under a real Supervisor (short restart policy): a failing enqueue at a
 * timer tick, a failing store during a folder reload, and a folder watch that fails each
 * crash the run; the crash is logged, the supervisor runs the worker again, and the crons
 * still fire. Nothing is left as an unhandled rejection.
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { PicklebotError } from "../../src/base/errors.js";
import { watchFolder } from "../../src/base/folder-watch.js";
import { CronWorker, type CronWorkerOptions } from "../../src/cron/worker.js";
import type { CronStateStore } from "../../src/ports/index.js";
import { ServerMetrics } from "../../src/server/metrics.js";
import { Supervisor } from "../../src/server/supervisor.js";
import { MemoryCronStateStore } from "../../src/storage/memory/cron-state.js";
import { TestClock } from "../helpers/clock.js";
import { type LogLine, recordingLogger } from "../helpers/log.js";
import { trackUnhandledRejections } from "../helpers/rejections.js";
import { waitFor } from "../helpers/wait.js";
import { RecordingQueue } from "./fakes.js";
import { writeCron } from "./files.js";

const rejections = trackUnhandledRejections();
let workspace: string;
let cronDir: string;
let supervisor: Supervisor | null = null;

beforeEach(() => {
  workspace = mkdtempSync(join(tmpdir(), "picklebot-cron-supervised-"));
  cronDir = join(workspace, "crons");
  mkdirSync(cronDir);
});

afterEach(async () => {
  await supervisor?.stop();
  supervisor = null;
  rmSync(workspace, { recursive: true, force: true });
});

/** A CronWorker started under a supervisor that restarts it 5 ms after a crash. */
function superviseCron(
  time: TestClock,
  queue: RecordingQueue,
  more: Partial<CronWorkerOptions> = {},
): { worker: CronWorker; lines: LogLine[] } {
  const { logger, lines } = recordingLogger();
  const worker = new CronWorker({
    cronDir,
    defaults: { agentId: "pickle", timezone: "UTC" },
    queue,
    state: new MemoryCronStateStore(),
    clock: time,
    logger,
    maxAttempts: 3,
    timers: time,
    reloadDebounceMs: 20,
    ...more,
  });
  supervisor = new Supervisor({
    clock: time,
    logger,
    metrics: new ServerMetrics(),
    policy: { initialDelayMs: 5 },
  });
  supervisor.start(worker);
  return { worker, lines };
}

/** Waits until the worker logged `msg` for `cron` `count` times, then for it to settle. */
async function logged(
  { worker, lines }: { worker: CronWorker; lines: LogLine[] },
  msg: string,
  cron: string,
  count = 1,
): Promise<void> {
  const matching = () => lines.filter((line) => line.msg === msg && line.cron === cron);
  await waitFor(() => matching().length >= count, `"${msg}" for ${cron} (${count})`);
  await worker.whenIdle();
}

function crashes(lines: LogLine[]): LogLine[] {
  return lines.filter((line) => line.msg === "worker crashed" && line.worker === "cron");
}

describe("CronWorker under the supervisor", () => {
  it("a timer tick whose enqueue throws is logged, and the restarted worker still fires it", async () => {
    writeCron(cronDir, "daily", 'schedule: "0 7 * * *"\nprompt: hi\n');
    const time = new TestClock("2025-01-15T06:00:00Z");
    const queue = new RecordingQueue(time);
    const harness = superviseCron(time, queue);
    await logged(harness, "cron loaded", "daily");

    queue.failNextEnqueue = new Error("database is locked");
    await time.advanceTo("2025-01-15T07:00:00Z", () => harness.worker.whenIdle());

    await waitFor(() => queue.jobs.length === 1, "the occurrence, after the restart");
    expect(queue.keys()).toEqual(["cron:daily:2025-01-15T07:00:00.000Z"]);
    expect(crashes(harness.lines)).toMatchObject([{ error: "database is locked" }]);
    // The restarted worker keeps the schedule.
    await logged(harness, "cron loaded", "daily", 2);
    await time.advanceTo("2025-01-16T07:00:00Z", () => harness.worker.whenIdle());
    expect(queue.keys().at(-1)).toBe("cron:daily:2025-01-16T07:00:00.000Z");
    expect(rejections).toEqual([]);
  });

  it("a folder reload whose store throws is logged, and the restarted worker fires the new cron", async () => {
    const time = new TestClock("2025-01-15T06:00:00Z");
    const queue = new RecordingQueue(time);
    const state = new MemoryCronStateStore();
    let failNextMarkSeen = false;
    const flakyState: CronStateStore = {
      get: (id) => state.get(id),
      recordFired: (id, occurrence, options) => state.recordFired(id, occurrence, options),
      markSeen: async (id, at) => {
        if (failNextMarkSeen) {
          failNextMarkSeen = false;
          throw new Error("connection terminated unexpectedly");
        }
        return state.markSeen(id, at);
      },
    };
    const harness = superviseCron(time, queue, { state: flakyState });
    await waitFor(() => supervisor?.health()[0]?.state === "running", "the first run");
    await harness.worker.whenIdle();

    failNextMarkSeen = true;
    writeCron(cronDir, "hourly", 'schedule: "0 * * * *"\nprompt: tick\n');
    await waitFor(() => crashes(harness.lines).length === 1, "the reload to crash the run");
    expect(crashes(harness.lines)[0]).toMatchObject({
      error: "connection terminated unexpectedly",
    });

    await logged(harness, "cron loaded", "hourly");
    await time.advanceTo("2025-01-15T07:30:00Z", () => harness.worker.whenIdle());
    expect(queue.keys()).toEqual(["cron:hourly:2025-01-15T07:00:00.000Z"]);
    expect(rejections).toEqual([]);
  });

  it("a folder watch that fails is logged, and the restarted worker watches again", async () => {
    const time = new TestClock("2025-01-15T06:00:00Z");
    const queue = new RecordingQueue(time);
    let watches = 0;
    const failingOnce: typeof watchFolder = (dir, debounceMs, onChange, onError) => {
      watches += 1;
      if (watches > 1) return watchFolder(dir, debounceMs, onChange, onError);
      const reason = "ENOSPC: System limit for number of file watchers reached";
      onError(new PicklebotError(`cannot watch ${dir}: ${reason}`, { retryable: true }));
      return { close: () => undefined };
    };
    const harness = superviseCron(time, queue, { watch: failingOnce });
    await waitFor(() => watches === 2, "the second watch, after the restart");
    expect(crashes(harness.lines)).toMatchObject([
      { error: expect.stringContaining(`cannot watch ${cronDir}: ENOSPC`) },
    ]);
    await waitFor(() => supervisor?.health()[0]?.state === "running", "the second run");

    writeCron(cronDir, "hourly", 'schedule: "0 * * * *"\nprompt: tick\n');
    await logged(harness, "cron added", "hourly");
    await time.advanceTo("2025-01-15T07:30:00Z", () => harness.worker.whenIdle());
    expect(queue.keys()).toEqual(["cron:hourly:2025-01-15T07:00:00.000Z"]);
    expect(rejections).toEqual([]);
  });

  it("a crons folder that cannot be created is logged, and the worker runs on without crashing", async () => {
    const time = new TestClock("2025-01-15T06:00:00Z");
    const queue = new RecordingQueue(time);
    const readOnly: typeof watchFolder = (dir, _debounceMs, _onChange, onError) => {
      const reason = "EROFS: read-only file system";
      onError(new PicklebotError(`cannot create ${dir}: ${reason}`, { retryable: false }));
      return { close: () => undefined };
    };
    const harness = superviseCron(time, queue, { watch: readOnly });
    await waitFor(
      () => harness.lines.some((line) => line.msg === "no crons folder; add one and restart"),
      "the warning",
    );
    await harness.worker.whenIdle();
    expect(crashes(harness.lines)).toEqual([]);
    expect(supervisor?.health()).toMatchObject([{ name: "cron", state: "running", restarts: 0 }]);
    expect(rejections).toEqual([]);
  });
});
