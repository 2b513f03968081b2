/**
 * The queue depth refresh under a real Supervisor, over a memory queue whose counts fail
 * while the test says so (a locked or restarting database).
 */
import { afterEach, describe, expect, it } from "vitest";
import type { JobAdmin } from "../../src/ports/index.js";
import { ServerMetrics } from "../../src/server/metrics.js";
import { QueueDepthWorker } from "../../src/server/queue-depth.js";
import { Supervisor } from "../../src/server/supervisor.js";
import { MemoryJobQueue } from "../../src/storage/memory/queue.js";
import { TestClock } from "../helpers/clock.js";
import { recordingLogger } from "../helpers/log.js";
import { trackUnhandledRejections } from "../helpers/rejections.js";
import { waitFor } from "../helpers/wait.js";

const rejections = trackUnhandledRejections();
let supervisor: Supervisor | null = null;

afterEach(async () => {
  await supervisor?.stop();
  supervisor = null;
});

async function queuedGauge(metrics: ServerMetrics): Promise<number | undefined> {
  const { values } = await metrics.queueDepth.get();
  return values.find((value) => value.labels.state === "queued")?.value;
}

describe("QueueDepthWorker", () => {
  it("logs a count that fails, keeps the last gauges, and refreshes them once the queue answers", async () => {
    const clock = new TestClock();
    const queue = new MemoryJobQueue({ clock });
    let failing = false;
    const flaky: Pick<JobAdmin, "counts"> = {
      counts: async () => {
        if (failing) throw new Error("database is locked");
        return queue.counts();
      },
    };
    const { logger, lines } = recordingLogger();
    const metrics = new ServerMetrics();
    supervisor = new Supervisor({ clock, logger, metrics, policy: { initialDelayMs: 5 } });
    supervisor.start(new QueueDepthWorker({ queue: flaky, metrics, logger, intervalMs: 5 }));
    await waitFor(async () => (await queuedGauge(metrics)) === 0, "the first refresh");

    failing = true;
    await queue.enqueue({
      agentId: "pickle",
      sessionKey: "console:main",
      message: "hi",
      mode: "chat",
      replyTo: { kind: "console" },
    });
    const failed = () =>
      lines.filter((line) => line.msg.startsWith("could not refresh the queue depth"));
    await waitFor(() => failed().length >= 2, "two failed refreshes");
    expect(failed()[0]).toMatchObject({ level: 40, error: "database is locked" });
    expect(await queuedGauge(metrics)).toBe(0);

    failing = false;
    await waitFor(async () => (await queuedGauge(metrics)) === 1, "a refresh after the fault");
    expect(supervisor.health()).toMatchObject([{ name: "queue-depth", state: "running" }]);
    expect(rejections).toEqual([]);
  });
});
