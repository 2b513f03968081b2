/**
 * Supervisor: runs each worker and restarts it when it crashes.
 *
 * Per worker:  running ──crash──► backoff (1 s, doubling to 60 s) ──► running …
 *              a run that stayed up for a minute resets the backoff to 1 s;
 *              stop() aborts every run and resolves when all have settled.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { toError } from "../base/errors.js";
import type { Logger } from "../base/log.js";
import type { Clock, Worker } from "../ports/index.js";
import type { ServerMetrics } from "./metrics.js";

/** A worker's state as `/healthz` and `picklebot status` show it. */
export interface WorkerHealth {
  name: string;
  state: "running" | "restarting" | "stopped";
  restarts: number;
  lastError: string | null;
  /** Epoch ms of the last state change. */
  since: number;
}

/** Restart policy. */
export interface RestartPolicy {
  /** (Default: 1000) */
  initialDelayMs: number;
  /** (Default: 60000) */
  maxDelayMs: number;
  /** A run this long resets the delay. (Default: 60000) */
  healthyAfterMs: number;
}

/** What a supervisor needs. */
export interface SupervisorOptions {
  clock: Clock;
  logger: Logger;
  metrics: ServerMetrics;
  policy?: Partial<RestartPolicy>;
}

const DEFAULT_POLICY: RestartPolicy = {
  initialDelayMs: 1000,
  maxDelayMs: 60_000,
  healthyAfterMs: 60_000,
};

/** Starts workers, restarts crashed ones, stops them all on request. */
export class Supervisor {
  readonly #options: SupervisorOptions;
  readonly #policy: RestartPolicy;
  readonly #abort = new AbortController();
  readonly #health = new Map<string, WorkerHealth>();
  readonly #runs: Promise<void>[] = [];

  constructor(options: SupervisorOptions) {
    this.#options = options;
    this.#policy = { ...DEFAULT_POLICY, ...options.policy };
  }

  /** Starts supervising a worker. */
  start(worker: Worker): void {
    this.#setHealth(worker.name, { state: "running" });
    this.#runs.push(this.#supervise(worker));
  }

  /** Every worker's health. */
  health(): WorkerHealth[] {
    return [...this.#health.values()].map((health) => ({ ...health }));
  }

  /** True when every worker is running. */
  healthy(): boolean {
    return this.health().every((health) => health.state === "running");
  }

  /** Aborts every worker and resolves once all have finished their in-flight work. */
  async stop(): Promise<void> {
    this.#abort.abort();
    await Promise.all(this.#runs);
  }

  async #supervise(worker: Worker): Promise<void> {
    const { clock, logger, metrics } = this.#options;
    const signal = this.#abort.signal;
    let delay = this.#policy.initialDelayMs;
    while (!signal.aborted) {
      const started = clock.now();
      this.#setHealth(worker.name, { state: "running" });
      const error = await worker.run(signal).then(
        () => (signal.aborted ? null : new Error("stopped unexpectedly")),
        (thrown: unknown) => toError(thrown),
      );
      if (!error) break;
      if (clock.now() - started >= this.#policy.healthyAfterMs) delay = this.#policy.initialDelayMs;
      const health = this.#setHealth(worker.name, {
        state: "restarting",
        lastError: error.message,
      });
      health.restarts += 1;
      metrics.workerRestarts.inc({ worker: worker.name });
      logger.error(
        { worker: worker.name, error: error.message, restartInMs: delay },
        "worker crashed",
      );
      await sleep(delay, undefined, { signal }).catch(() => undefined);
      delay = Math.min(delay * 2, this.#policy.maxDelayMs);
    }
    this.#setHealth(worker.name, { state: "stopped" });
  }

  #setHealth(name: string, change: Partial<WorkerHealth>): WorkerHealth {
    const health = this.#health.get(name) ?? {
      name,
      state: "running",
      restarts: 0,
      lastError: null,
      since: this.#options.clock.now(),
    };
    Object.assign(health, change, { since: this.#options.clock.now() });
    this.#health.set(name, health);
    return health;
  }
}
