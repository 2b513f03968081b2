/**
 * Deadlines for work that already has a cancel signal (a job, a tool call).
 *
 * `AbortSignal.any([parent, AbortSignal.timeout(ms)])` is the obvious way, but on Node 20
 * the timeout signal is held only weakly by its timer and by the composite, so it can be
 * garbage-collected before it fires, and the deadline silently never comes
 * (nodejs/node#57736). Here the timer holds its controller strongly until `clear()`.
 */

import { TimeoutError } from "./errors.js";

/** A signal with a deadline, and the way to release its timer once the work is done. */
export interface Deadline {
  /** Aborts when the parent does (with its reason) or when the time is up (a {@link TimeoutError}). */
  readonly signal: AbortSignal;
  /** Stops the timer and detaches from the parent; call it when the work ends. */
  clear(): void;
}

/** A signal that aborts when `parent` does or after `ms` milliseconds, whichever is first. */
export function deadline(parent: AbortSignal, ms: number): Deadline {
  const controller = new AbortController();
  const timer = setTimeout(() => {
    controller.abort(new TimeoutError(`timed out after ${ms} ms`, { context: { timeoutMs: ms } }));
  }, ms);
  const forward = () => controller.abort(parent.reason);
  if (parent.aborted) forward();
  else parent.addEventListener("abort", forward, { once: true });
  return {
    signal: controller.signal,
    clear() {
      clearTimeout(timer);
      parent.removeEventListener("abort", forward);
    },
  };
}
