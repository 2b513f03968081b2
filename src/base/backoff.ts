/**
 * Backoff, in one place:
 *
 * - When a failed job runs again. The queue never decides this: the worker that failed
 *   the job computes the retry time here and passes it to {@link JobQueue.fail} (or null
 *   once `maxAttempts` is spent).
 * - How a lost connection or a crashed worker is tried again ({@link reconnectWithBackoff}):
 *   the chat adapters' logins and polls and the supervisor's restarts, 1 s doubling to
 *   60 s, reset after a minute of health (docs/design.md §4, "Crash of a worker").
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { Clock, Job } from "../ports/index.js";
import { systemClock } from "./clock.js";
import { checkNumberOptions } from "./options.js";

/** Reconnects and restarts: the first wait, the longest wait, and the run that resets them. */
export const RECONNECT_BACKOFF = {
  /** Wait after the first failure. */
  baseMs: 1000,
  /** Longest wait; the wait doubles up to it. */
  capMs: 60_000,
  /** A run that stayed up this long starts the waits from `baseMs` again. */
  healthyAfterMs: 60_000,
} as const;

/** Options of {@link retryDelayMs}. */
export interface RetryDelayOptions {
  /** Delay before the second attempt. (Default: 1000 ms) */
  baseMs?: number;
  /** Largest delay before jitter. (Default: 300,000 ms, five minutes) */
  capMs?: number;
  /** Spread around the delay, as a fraction: 0.2 is ±20%. (Default: 0.2) */
  jitter?: number;
  /** Source of randomness in [0, 1). (Default: Math.random) */
  random?: () => number;
  /** What the provider asked for (retry-after); wins when longer. (Default: 0) */
  retryAfterMs?: number;
}

/**
 * Milliseconds to wait after failed attempt number `attempt` (1 for the first attempt):
 * `baseMs · 2^(attempt−1)`, at most `capMs`, spread by ±`jitter` so that jobs failing
 * together do not retry together. A longer `retryAfterMs` from the provider wins as is.
 */
export function retryDelayMs(attempt: number, options: RetryDelayOptions = {}): number {
  checkNumberOptions("retryDelayMs", options, {
    baseMs: "non-negative",
    capMs: "non-negative",
    jitter: "fraction",
  });
  const { baseMs = 1000, capMs = 300_000, jitter = 0.2, random = Math.random } = options;
  const exponent = Math.max(0, Math.floor(attempt) - 1);
  const delay = Math.min(capMs, baseMs * 2 ** Math.min(exponent, 52));
  const spread = 1 + jitter * (2 * random() - 1);
  // retry-after comes from the other side: a value that is no wait at all counts as none.
  const retryAfterMs = Number.isFinite(options.retryAfterMs) ? (options.retryAfterMs ?? 0) : 0;
  return Math.max(Math.round(delay * spread), retryAfterMs);
}

/**
 * The retry policy in one place: when `job` should run again after its current attempt
 * failed with a transient error, or null when its `maxAttempts` are spent (fail it).
 */
export function nextAttemptAt(
  job: Pick<Job, "attempts" | "maxAttempts">,
  now: number,
  options: RetryDelayOptions = {},
): number | null {
  if (job.attempts >= job.maxAttempts) return null;
  return now + retryDelayMs(job.attempts, options);
}

/** Options of {@link reconnectWithBackoff}. */
export interface ReconnectOptions {
  /** Stops the retries (and a pending wait) when it aborts. */
  signal: AbortSignal;
  /** Wait after the first failure. (Default: 1000 ms, {@link RECONNECT_BACKOFF}) */
  baseMs?: number;
  /** Longest wait. (Default: 60 000 ms) */
  capMs?: number;
  /** A try that ran this long resets the waits to `baseMs`. (Default: 60 000 ms) */
  healthyAfterMs?: number;
  /** Spread of each wait, as in {@link retryDelayMs}. (Default: 0.2) */
  jitter?: number;
  /** Measures how long a try ran. (Default: the system clock) */
  clock?: Clock;
  /** What the other side asked us to wait after this failure (retry-after). (Default: 0) */
  retryAfterMs?(error: unknown): number;
  /** Told of every failure before its wait: log it, count it. */
  onFailure(error: unknown, failure: { failures: number; retryInMs: number }): void;
}

/**
 * Calls `attempt` until it resolves or `signal` aborts, waiting after each rejection:
 * `baseMs` doubling to `capMs`, with jitter and the other side's retry-after. A try that
 * ran `healthyAfterMs`, or that called the `healthy()` it is given (a poll that got an
 * answer), starts the waits from `baseMs` again. Resolves (never rejects) when `attempt`
 * resolved or the signal aborted; a rejection after the abort is not a failure.
 */
export async function reconnectWithBackoff(
  attempt: (healthy: () => void) => Promise<void>,
  options: ReconnectOptions,
): Promise<void> {
  checkNumberOptions("reconnectWithBackoff", options, {
    baseMs: "positive",
    capMs: "positive",
    healthyAfterMs: "non-negative",
    jitter: "fraction",
  });
  const { signal, clock = systemClock } = options;
  const healthyAfterMs = options.healthyAfterMs ?? RECONNECT_BACKOFF.healthyAfterMs;
  let failures = 0;
  const healthy = () => {
    failures = 0;
  };
  while (!signal.aborted) {
    const started = clock.now();
    try {
      await attempt(healthy);
      return;
    } catch (error) {
      if (signal.aborted) return;
      if (clock.now() - started >= healthyAfterMs) failures = 0;
      failures += 1;
      const retryInMs = retryDelayMs(failures, {
        baseMs: options.baseMs ?? RECONNECT_BACKOFF.baseMs,
        capMs: options.capMs ?? RECONNECT_BACKOFF.capMs,
        ...(options.jitter === undefined ? {} : { jitter: options.jitter }),
        retryAfterMs: options.retryAfterMs?.(error) ?? 0,
      });
      options.onFailure(error, { failures, retryInMs });
      await sleep(retryInMs, undefined, { signal }).catch(() => undefined);
    }
  }
}
