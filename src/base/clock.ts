import type { Clock } from "../ports/index.js";

/** The real clock. */
export const systemClock: Clock = { now: () => Date.now() };
