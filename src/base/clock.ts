import { setTimeout as wait } from "node:timers/promises";
import type { Clock } from "../ports/index.js";

/** The real clock. */
export const systemClock: Clock = { now: () => Date.now() };

/**
 * Waits `ms`, or rejects with the signal's reason once it aborts. Injected where code
 * waits before trying again (a tool's retries), so that tests pass one that does not
 * wait real time (TestClock's `sleep` moves its time instead).
 */
export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;

/** The real wait, on node's timers. */
export const systemSleep: Sleep = (ms, signal) => wait(ms, undefined, { signal });
