/**
 * The one way tests wait: for a condition, never for a fixed time. {@link waitFor} checks
 * the condition every few milliseconds until it holds, and rejects after a generous bound
 * (a guard against a hang, not an expectation) saying what it was waiting for.
 *
 *   await waitFor(() => fake.requests.length === 1, "the model call");
 *   const job = await waitFor(async () => (await queue.get(id))?.state === "done" && id);
 */

/** Time between two checks. */
const INTERVAL_MS = 10;

/**
 * How much longer than written every bound on a wait is. A bound is written for a quiet
 * machine; a busy 2-core host runs the same test several times slower, and must make it
 * slower, not red.
 */
const HANG_GUARD_SCALE = 3;

/** The bound a test wrote (`ms`, for a quiet machine) as a guard for any host. */
export function hangGuard(ms: number): number {
  return ms * HANG_GUARD_SCALE;
}

type Truthy<T> = Exclude<T, false | null | undefined | 0 | "">;

/**
 * Resolves with the first truthy value of `condition`. A condition that throws counts as
 * not yet; its last error is in the timeout's message, after `what` (a text, or a
 * function asked at the timeout, e.g. for a fake's latest calls).
 */
export async function waitFor<T>(
  condition: () => T | Promise<T>,
  what: string | (() => string) = "a condition",
  timeoutMs = 10_000,
): Promise<Truthy<T>> {
  const deadline = Date.now() + hangGuard(timeoutMs);
  let lastError: unknown = null;
  for (;;) {
    try {
      const value = await condition();
      if (value) return value as Truthy<T>;
      lastError = null;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() > deadline) {
      const why = lastError instanceof Error ? `; last: ${lastError.message}` : "";
      const named = typeof what === "string" ? what : what();
      throw new Error(`timed out after ${hangGuard(timeoutMs)} ms waiting for ${named}${why}`);
    }
    await new Promise((resolve) => setTimeout(resolve, INTERVAL_MS));
  }
}
