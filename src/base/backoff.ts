/**
 * When a failed job runs again. The queue never decides this: the worker that failed the
 * job computes the retry time here and passes it to {@link JobQueue.fail} (or null once
 * `maxAttempts` is spent).
 */
import type { Job } from "../ports/index.js";

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
  const { baseMs = 1000, capMs = 300_000, jitter = 0.2, random = Math.random } = options;
  const exponent = Math.max(0, Math.floor(attempt) - 1);
  const delay = Math.min(capMs, baseMs * 2 ** Math.min(exponent, 52));
  const spread = 1 + jitter * (2 * random() - 1);
  return Math.max(Math.round(delay * spread), options.retryAfterMs ?? 0);
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
