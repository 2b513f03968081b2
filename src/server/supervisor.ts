/**
 * Supervisor: runs each worker and restarts it when it crashes.
 *
 * Per worker:  running ──crash──► backoff (1 s, doubling to 60 s) ──► running …
 *              a run that stayed up for a minute resets the backoff to 1 s;
 *              stop() aborts every run and resolves when all have settled.
 * The waits are {@link reconnectWithBackoff}'s, without jitter.
 */
import { RECONNECT_BACKOFF, reconnectWithBackoff } from "../base/backoff.js";
import { CancelledError, PicklebotError, toError } from "../base/errors.js";
import type { Logger } from "../base/log.js";
import { checkNumberOptions } from "../base/options.js";
import { redactError } from "../base/redact.js";
import type { Clock, EventSink, Worker } from "../ports/index.js";
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
  /** (Default: 1000, {@link RECONNECT_BACKOFF}) */
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
  /** Where `worker.crashed` / `worker.restarted` go. (Default: nowhere) */
  events?: EventSink;
  policy?: Partial<RestartPolicy>;
}

const DEFAULT_POLICY: RestartPolicy = {
  initialDelayMs: RECONNECT_BACKOFF.baseMs,
  maxDelayMs: RECONNECT_BACKOFF.capMs,
  healthyAfterMs: RECONNECT_BACKOFF.healthyAfterMs,
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
    checkNumberOptions("Supervisor policy", this.#policy, {
      initialDelayMs: "positive",
      maxDelayMs: "positive",
      healthyAfterMs: "non-negative",
    });
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
    this.#abort.abort(new CancelledError("the server is stopping"));
    await Promise.all(this.#runs);
  }

  async #supervise(worker: Worker): Promise<void> {
    const { clock, logger, metrics } = this.#options;
    const signal = this.#abort.signal;
    let crashes = 0;
    const run = async () => {
      this.#setHealth(worker.name, { state: "running" });
      if (crashes > 0)
        this.#options.events?.publish({ type: "worker.restarted", worker: worker.name });
      await worker.run(signal);
      if (!signal.aborted) throw new PicklebotError("stopped unexpectedly", { retryable: true });
    };
    await reconnectWithBackoff(run, {
      signal,
      clock,
      baseMs: this.#policy.initialDelayMs,
      capMs: this.#policy.maxDelayMs,
      healthyAfterMs: this.#policy.healthyAfterMs,
      jitter: 0,
      onFailure: (thrown, { retryInMs }) => {
        // Shown by /healthz and status: a URL's password in a driver's message stays out.
        const error = redactError(toError(thrown));
        const health = this.#setHealth(worker.name, {
          state: "restarting",
          lastError: error.message,
        });
        health.restarts += 1;
        crashes += 1;
        this.#options.events?.publish({
          type: "worker.crashed",
          worker: worker.name,
          error: error.message,
        });
        metrics.workerRestarts.inc({ worker: worker.name });
        logger.error(
          { worker: worker.name, error: error.message, restartInMs: retryInMs },
          "worker crashed",
        );
      },
    });
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
