import { describe, expect, it } from "vitest";
import { nextAttemptAt, retryDelayMs } from "../../src/base/backoff.js";

/** Randomness pinned to the middle of the jitter range: no spread. */
const middle = () => 0.5;

describe("retry backoff", () => {
  it("waits 1 s after the first attempt and doubles after each one, up to five minutes", () => {
    const delays = [1, 2, 3, 4, 8, 9, 10, 50].map((attempt) =>
      retryDelayMs(attempt, { random: middle }),
    );
    expect(delays).toEqual([1000, 2000, 4000, 8000, 128_000, 256_000, 300_000, 300_000]);
  });

  it("spreads each delay by ±20% so that jobs failing together do not retry together", () => {
    expect(retryDelayMs(3, { random: () => 0 })).toBe(3200);
    expect(retryDelayMs(3, { random: () => 0.999_999_9 })).toBe(4800);
    expect(retryDelayMs(20, { random: () => 0 })).toBe(240_000);
    expect(retryDelayMs(20, { random: () => 0.999_999_9 })).toBe(360_000);
  });

  it("waits for the provider's retry-after when it asks for longer", () => {
    expect(retryDelayMs(1, { random: middle, retryAfterMs: 30_000 })).toBe(30_000);
    expect(retryDelayMs(6, { random: middle, retryAfterMs: 1000 })).toBe(32_000);
  });

  it("takes a retry-after that is no wait (negative, NaN) from the other side as none", () => {
    expect(retryDelayMs(1, { random: middle, retryAfterMs: -5000 })).toBe(1000);
    expect(retryDelayMs(1, { random: middle, retryAfterMs: Number.NaN })).toBe(1000);
  });

  it("schedules the next attempt until max_attempts are spent, then gives up", () => {
    const now = 1_000_000;
    expect(nextAttemptAt({ attempts: 1, maxAttempts: 5 }, now, { random: middle })).toBe(
      now + 1000,
    );
    expect(nextAttemptAt({ attempts: 4, maxAttempts: 5 }, now, { random: middle })).toBe(
      now + 8000,
    );
    expect(nextAttemptAt({ attempts: 5, maxAttempts: 5 }, now)).toBeNull();
    expect(nextAttemptAt({ attempts: 7, maxAttempts: 5 }, now)).toBeNull();
  });
});
