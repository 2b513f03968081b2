/**
 * Slack's per-method rate limits are for the whole app, not per chat: `chat.update` is
 * tier 3, about 50 calls a minute with short bursts allowed. The core paces the edits of
 * each chat ({@link SlackPlatform.editIntervalMs}); this budget paces them all together,
 * so that several replies streaming at once do not earn 429s. A token bucket: `burst`
 * calls at once, then one every `intervalMs`.
 */
import type { Clock } from "../../ports/index.js";

/** Calls of one Web API method the app may still make, refilled with time. */
export class CallBudget {
  readonly #burst: number;
  readonly #intervalMs: number;
  readonly #clock: Clock;
  #tokens: number;
  #at: number;

  constructor(options: { burst: number; intervalMs: number; clock: Clock }) {
    this.#burst = options.burst;
    this.#intervalMs = options.intervalMs;
    this.#clock = options.clock;
    this.#tokens = options.burst;
    this.#at = options.clock.now();
  }

  /** Takes one call and answers null; or, when none is left, the seconds until one is. */
  take(): number | null {
    const now = this.#clock.now();
    this.#tokens = Math.min(this.#burst, this.#tokens + (now - this.#at) / this.#intervalMs);
    this.#at = now;
    if (this.#tokens >= 1) {
      this.#tokens -= 1;
      return null;
    }
    return Math.ceil(((1 - this.#tokens) * this.#intervalMs) / 1000);
  }
}
