/**
 * The background loops of PostgreSQL mode, in-process on a real database, each made to
 * throw by a store whose method fails a few times (a dropped connection): the cluster
 * upkeep (under a supervisor), the heartbeat, and the `/stop` listener. Each logs the
 * fault and does its job once the fault clears; nothing is an unhandled rejection.
 */
import { hostname } from "node:os";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { systemClock } from "../../src/base/clock.js";
import type { InstanceInfo, NewJob } from "../../src/ports/index.js";
import { ClusterUpkeepWorker, Heartbeat } from "../../src/server/cluster/upkeep.js";
import { ServerMetrics } from "../../src/server/metrics.js";
import { Supervisor } from "../../src/server/supervisor.js";
import { PostgresClusterStore } from "../../src/storage/postgres/cluster.js";
import { connectionConfig, openPostgres } from "../../src/storage/postgres/database.js";
import { PostgresJobQueue } from "../../src/storage/postgres/queue.js";
import { PostgresStopRelay, STOP_CHANNEL } from "../../src/storage/postgres/stop-relay.js";
import { recordingLogger } from "../helpers/log.js";
import { postgresSkipReason, useMigratedDatabase } from "../helpers/postgres.js";
import { trackUnhandledRejections } from "../helpers/rejections.js";
import { waitFor } from "../helpers/wait.js";

const skipReason = await postgresSkipReason();
const DROPPED = "Connection terminated unexpectedly";

/** `target`, except that `method` throws {@link DROPPED} while `faults.left` > 0. */
function failing<T extends object>(target: T, method: keyof T, faults: { left: number }): T {
  return new Proxy(target, {
    get(object, key) {
      const value: unknown = Reflect.get(object, key, object);
      if (typeof value !== "function") return value;
      if (key !== method) return value.bind(object);
      return async (...args: unknown[]) => {
        if (faults.left > 0) {
          faults.left -= 1;
          throw new Error(DROPPED);
        }
        return value.apply(object, args);
      };
    },
  });
}

function instance(id: string, more: Partial<InstanceInfo> = {}): InstanceInfo {
  return {
    id,
    hostname: hostname(),
    pid: process.pid,
    version: "test",
    agents: ["pickle"],
    concurrency: 1,
    ttlMs: 60_000,
    ...more,
  };
}

const chatJob: NewJob = {
  agentId: "pickle",
  sessionKey: "console:main",
  message: "hi",
  mode: "chat",
  replyTo: { kind: "console" },
};

describe.skipIf(skipReason !== null)("PostgreSQL background loops", () => {
  const database = useMigratedDatabase("loops");
  const rejections = trackUnhandledRejections();
  let pool: pg.Pool;
  let queue: PostgresJobQueue;
  let store: PostgresClusterStore;

  beforeAll(async () => {
    pool = await openPostgres({ url: database().url, poolSize: 4 });
    queue = new PostgresJobQueue({ pool, clock: systemClock });
    store = new PostgresClusterStore({ pool, queue });
  });

  afterAll(async () => {
    await queue?.close();
    await pool?.end();
  });

  it("cluster upkeep logs a reaping pass that throws and requeues the dead process's job afterwards", async () => {
    // A process elsewhere that claimed a job, then went silent past its 1 ms TTL.
    await store.register(instance("dead", { hostname: "elsewhere", pid: 1, ttlMs: 1 }));
    const job = await queue.enqueue(chatJob);
    expect(await queue.claim("dead", 1)).toHaveLength(1);

    const { logger, lines } = recordingLogger();
    const supervisor = new Supervisor({
      clock: systemClock,
      logger,
      metrics: new ServerMetrics(),
      policy: { initialDelayMs: 5 },
    });
    const faults = { left: 2 };
    supervisor.start(
      new ClusterUpkeepWorker({
        cluster: failing(store, "reapExpired", faults),
        intervalMs: 10,
        orphanAfterMs: 60_000,
        clock: systemClock,
        logger,
      }),
    );
    try {
      await waitFor(async () => (await queue.get(job.id))?.state === "queued", "the requeue");
      expect(lines.filter((line) => line.msg === "cluster upkeep failed; trying again")).toEqual([
        expect.objectContaining({ level: 40, error: DROPPED }),
        expect.objectContaining({ error: DROPPED }),
      ]);
      expect(lines).toContainEqual(
        expect.objectContaining({ instances: ["dead"], jobs: 1, level: 40 }),
      );
      expect(supervisor.healthy()).toBe(true);
    } finally {
      await supervisor.stop();
    }
    expect(rejections).toEqual([]);
  });

  it("the heartbeat logs a beat that throws and keeps the row fresh afterwards", async () => {
    const self = instance("alive");
    await store.register(self);
    const registered = (await store.instances()).find((row) => row.id === "alive");
    const { logger, lines } = recordingLogger();
    const faults = { left: 2 };
    const heartbeat = new Heartbeat({
      cluster: failing(store, "heartbeat", faults),
      instance: self,
      intervalMs: 10,
      logger,
    });
    heartbeat.start();
    try {
      await waitFor(async () => {
        const row = (await store.instances()).find((each) => each.id === "alive");
        return faults.left === 0 && row && row.heartbeatAt > (registered?.heartbeatAt ?? 0);
      }, "a beat after the faults");
    } finally {
      await heartbeat.stop();
    }
    expect(lines.filter((line) => line.msg === "heartbeat failed; trying again")).toEqual([
      expect.objectContaining({ level: 40, error: DROPPED }),
      expect.objectContaining({ error: DROPPED }),
    ]);
    expect(rejections).toEqual([]);
  });

  it("the /stop listener reports a handler that throws and a lost connection, and goes on stopping", async () => {
    const applicationName = "picklebot-stops-test";
    const relay = new PostgresStopRelay({
      pool,
      connection: connectionConfig({ url: database().url, applicationName }),
    });
    const stopped: string[] = [];
    let breakNext = true;
    const errors: Error[] = [];
    relay.start(
      (sessionKey) => {
        if (breakNext) {
          breakNext = false;
          throw new Error("the agent worker is gone");
        }
        stopped.push(sessionKey);
        return true;
      },
      (error) => errors.push(error),
    );
    /** Sends a stop for `key` (again, until the listener hears it) as another process would. */
    const stopFromElsewhere = (key: string, heard: () => boolean) =>
      waitFor(async () => {
        await database().query("SELECT pg_notify($1, $2)", [STOP_CHANNEL, key]);
        return heard();
      }, `the stop of ${key}`);
    try {
      await stopFromElsewhere("telegram:1", () => errors.length > 0);
      expect(errors[0]?.message).toBe("the agent worker is gone");
      await stopFromElsewhere("telegram:2", () => stopped.includes("telegram:2"));

      await database().query(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1",
        [applicationName],
      );
      await stopFromElsewhere("telegram:3", () => stopped.includes("telegram:3"));
      expect(errors.length).toBeGreaterThanOrEqual(2);
      expect(errors[1]?.message).toContain("terminating connection");
    } finally {
      await relay.close();
    }
    expect(rejections).toEqual([]);
  });
});
