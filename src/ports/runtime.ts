/** The runtime ports: the clock every part reads, and the workers the supervisor runs. */

/** The clock workers read, injected so tests control time. */
export interface Clock {
  /** Epoch milliseconds. */
  now(): number;
}

/**
 * A worker is a long-running part of the server. The supervisor calls `run` with a
 * signal; `run` settles when the worker has stopped:
 *
 *   run(signal) ──► running ──► signal aborted ──► draining ──► resolves (clean stop)
 *                       └──────► throws / rejects ──────────────► crashed (restarted)
 */
export interface Worker {
  /** Short, stable name used in logs, `/healthz` and metrics (`agent`, `cron`, `bus`). */
  readonly name: string;
  /**
   * Runs until `signal` aborts, then finishes in-flight work and resolves. A rejection
   * means the worker crashed; the supervisor restarts it with backoff.
   */
  run(signal: AbortSignal): Promise<void>;
}
