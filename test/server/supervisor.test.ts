/**
 * The Supervisor in-process, with small workers that crash on purpose, a short restart
 * policy, and a real HttpEndpoint serving its /healthz and /metrics.
 */
import { Writable } from "node:stream";
import { pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { systemClock } from "../../src/base/clock.js";
import { HttpEndpoint } from "../../src/http/endpoint.js";
import type { Clock, Worker } from "../../src/ports/index.js";
import { ServerMetrics } from "../../src/server/metrics.js";
import { type RestartPolicy, Supervisor } from "../../src/server/supervisor.js";
import { TestClock } from "../helpers/clock.js";
import { waitFor } from "../helpers/wait.js";

/** A worker whose n-th run (from 1) does what `behaviour` says. */
class ScriptedWorker implements Worker {
  readonly name: string;
  runs = 0;
  readonly #behaviour: (run: number, signal: AbortSignal) => Promise<void>;

  constructor(name: string, behaviour: (run: number, signal: AbortSignal) => Promise<void>) {
    this.name = name;
    this.#behaviour = behaviour;
  }

  run(signal: AbortSignal): Promise<void> {
    this.runs += 1;
    return this.#behaviour(this.runs, signal);
  }
}

/** Resolves when the signal aborts: a healthy worker's run. */
function untilAborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) =>
    signal.addEventListener("abort", () => resolve(), { once: true }),
  );
}

/** Crashes on runs up to `crashes`, then runs healthily until stopped. */
function crashing(crashes: number) {
  return async (run: number, signal: AbortSignal) => {
    if (run <= crashes) throw new Error(`boom ${run}`);
    await untilAborted(signal);
  };
}

interface Harness {
  supervisor: Supervisor;
  metrics: ServerMetrics;
  /** The JSON lines the supervisor logged. */
  logs: Record<string, unknown>[];
}

const cleanups: (() => Promise<void>)[] = [];
/** The access token of the HTTP endpoint served here. */
const SUPERVISOR_TOKEN = "supervisor-test-token-0123456789";

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function harness(policy: Partial<RestartPolicy>, clock: Clock = systemClock): Harness {
  const logs: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logs.push(JSON.parse(chunk.toString("utf8")) as Record<string, unknown>);
      done();
    },
  });
  const metrics = new ServerMetrics();
  const supervisor = new Supervisor({ clock, logger: pino(destination), metrics, policy });
  cleanups.push(() => supervisor.stop());
  return { supervisor, metrics, logs };
}

async function serveHttp({ supervisor, metrics }: Harness): Promise<string> {
  const http = new HttpEndpoint({
    host: "127.0.0.1",
    port: 0,
    registry: metrics.registry,
    health: async () => ({ healthy: supervisor.healthy(), workers: supervisor.health() }),
    access: { token: SUPERVISOR_TOKEN },
  });
  const address = await http.listen();
  cleanups.push(() => http.close());
  return `http://${address}`;
}

function restartDelays(logs: Record<string, unknown>[]): unknown[] {
  return logs.filter((line) => line.msg === "worker crashed").map((line) => line.restartInMs);
}

describe("Supervisor", () => {
  it("restarts a worker that throws, counts the restarts, and /metrics shows them", async () => {
    const h = harness({ initialDelayMs: 5, maxDelayMs: 20 });
    const url = await serveHttp(h);
    const flaky = new ScriptedWorker("flaky", crashing(3));
    const steady = new ScriptedWorker("steady", async (_run, signal) => untilAborted(signal));
    h.supervisor.start(flaky);
    h.supervisor.start(steady);
    await waitFor(() => flaky.runs === 4, "the fourth run of the flaky worker");

    expect(h.supervisor.health()).toEqual([
      {
        name: "flaky",
        state: "running",
        restarts: 3,
        lastError: "boom 3",
        since: expect.any(Number),
      },
      { name: "steady", state: "running", restarts: 0, lastError: null, since: expect.any(Number) },
    ]);
    const metrics = await (
      await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${SUPERVISOR_TOKEN}` } })
    ).text();
    expect(metrics).toContain('picklebot_worker_restarts_total{worker="flaky"} 3');
    expect(metrics).not.toContain('picklebot_worker_restarts_total{worker="steady"}');
    const health = await fetch(`${url}/healthz`);
    expect(health.status).toBe(200);
    expect(h.logs.filter((line) => line.msg === "worker crashed")).toEqual([
      expect.objectContaining({ level: 50, worker: "flaky", error: "boom 1" }),
      expect.objectContaining({ worker: "flaky", error: "boom 2" }),
      expect.objectContaining({ worker: "flaky", error: "boom 3" }),
    ]);
    expect(steady.runs).toBe(1);
  });

  it("doubles the restart delay after each crash, up to the cap", async () => {
    const h = harness({ initialDelayMs: 5, maxDelayMs: 20 });
    const worker = new ScriptedWorker("flaky", crashing(5));
    h.supervisor.start(worker);
    await waitFor(() => worker.runs === 6, "the sixth run");
    expect(restartDelays(h.logs)).toEqual([5, 10, 20, 20, 20]);
  });

  it("starts again from the initial delay after a run that stayed healthy long enough", async () => {
    const clock = new TestClock();
    const h = harness({ initialDelayMs: 5, maxDelayMs: 40, healthyAfterMs: 60_000 }, clock);
    const worker = new ScriptedWorker("flaky", async (run, signal) => {
      // The third run stays up a minute (on the injected clock) before it crashes.
      if (run === 3) clock.advance(60_000);
      if (run <= 4) throw new Error(`boom ${run}`);
      await untilAborted(signal);
    });
    h.supervisor.start(worker);
    await waitFor(() => worker.runs === 5, "the fifth run");
    expect(restartDelays(h.logs)).toEqual([5, 10, 5, 10]);
  });

  it("reports a worker waiting for its restart as down on /healthz, and stop() cuts the wait", async () => {
    const h = harness({ initialDelayMs: 600_000 });
    const url = await serveHttp(h);
    const worker = new ScriptedWorker("cron", crashing(1));
    h.supervisor.start(worker);
    await waitFor(() => h.supervisor.health()[0]?.state === "restarting", "the crash");

    expect(h.supervisor.healthy()).toBe(false);
    const response = await fetch(`${url}/healthz`, {
      headers: { authorization: `Bearer ${SUPERVISOR_TOKEN}` },
    });
    expect(response.status).toBe(503);
    expect(await response.json()).toEqual({
      healthy: false,
      workers: [
        {
          name: "cron",
          state: "restarting",
          restarts: 1,
          lastError: "boom 1",
          since: expect.any(Number),
        },
      ],
    });
    // Ten minutes of backoff do not hold up a shutdown.
    await h.supervisor.stop();
    expect(h.supervisor.health()[0]?.state).toBe("stopped");
    expect(worker.runs).toBe(1);
  });

  it("restarts a worker whose run ends without being asked to stop", async () => {
    const h = harness({ initialDelayMs: 5 });
    const worker = new ScriptedWorker("bus", async (run, signal) => {
      if (run === 1) return;
      await untilAborted(signal);
    });
    h.supervisor.start(worker);
    await waitFor(() => worker.runs === 2, "the second run");
    expect(h.supervisor.health()[0]).toMatchObject({
      state: "running",
      restarts: 1,
      lastError: "stopped unexpectedly",
    });
  });

  it("stop() resolves only after every worker has finished its in-flight work", async () => {
    const h = harness({});
    let finishWork: () => void = () => {};
    const inFlight = new Promise<void>((resolve) => (finishWork = resolve));
    const finished: string[] = [];
    const worker = new ScriptedWorker("agent", async (_run, signal) => {
      await untilAborted(signal);
      await inFlight;
      finished.push("agent");
    });
    h.supervisor.start(worker);
    const stopped = h.supervisor.stop().then(() => finished.push("supervisor"));
    // Let the abort propagate; the worker is still draining.
    await new Promise((resolve) => setImmediate(resolve));
    expect(finished).toEqual([]);
    expect(h.supervisor.health()[0]?.state).toBe("running");
    finishWork();
    await stopped;
    expect(finished).toEqual(["agent", "supervisor"]);
    expect(h.supervisor.health()[0]).toMatchObject({ state: "stopped", restarts: 0 });
  });
});
