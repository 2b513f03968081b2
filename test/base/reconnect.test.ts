import { describe, expect, it } from "vitest";
import { RECONNECT_BACKOFF, reconnectWithBackoff, retryDelayMs } from "../../src/base/backoff.js";
import { UserError } from "../../src/base/errors.js";

/** A clock the test moves by hand. */
function manualClock(start = 0) {
  let now = start;
  return { now: () => now, advance: (ms: number) => (now += ms) };
}

describe("reconnectWithBackoff", () => {
  it("states the 1 s doubling to 60 s, reset after a minute, once", () => {
    expect(RECONNECT_BACKOFF).toEqual({ baseMs: 1000, capMs: 60_000, healthyAfterMs: 60_000 });
  });

  it("doubles the wait from baseMs up to capMs (here scaled down a thousandfold)", async () => {
    const waits: number[] = [];
    const stop = new AbortController();
    let tries = 0;
    await reconnectWithBackoff(
      async () => {
        tries += 1;
        throw new Error("down");
      },
      {
        signal: stop.signal,
        jitter: 0,
        onFailure: (_error, { retryInMs }) => {
          waits.push(retryInMs);
          if (waits.length === 8) stop.abort();
        },
        baseMs: RECONNECT_BACKOFF.baseMs / 1000,
        capMs: RECONNECT_BACKOFF.capMs / 1000,
      },
    );
    expect(tries).toBe(8);
    expect(waits.map((ms) => ms * 1000)).toEqual([
      1000, 2000, 4000, 8000, 16_000, 32_000, 60_000, 60_000,
    ]);
  });

  it("resolves once a try succeeds, and stops at once when aborted", async () => {
    let tries = 0;
    const failures: number[] = [];
    await reconnectWithBackoff(
      async () => {
        tries += 1;
        if (tries < 3) throw new Error("not yet");
      },
      {
        signal: new AbortController().signal,
        baseMs: 1,
        onFailure: (_error, { failures: count }) => failures.push(count),
      },
    );
    expect(tries).toBe(3);
    expect(failures).toEqual([1, 2]);
    let called = false;
    await reconnectWithBackoff(
      async () => {
        called = true;
      },
      { signal: AbortSignal.abort(), onFailure: () => {} },
    );
    expect(called).toBe(false);
  });

  it("starts from the first wait again after a healthy run or healthy()", async () => {
    const clock = manualClock();
    const failures: number[] = [];
    const stop = new AbortController();
    let tries = 0;
    await reconnectWithBackoff(
      async (healthy) => {
        tries += 1;
        if (tries === 3) clock.advance(100); // stayed up long enough
        if (tries === 5) healthy(); // a poll got an answer
        if (tries === 7) stop.abort();
        throw new Error("lost");
      },
      {
        signal: stop.signal,
        clock,
        baseMs: 1,
        healthyAfterMs: 100,
        onFailure: (_error, { failures: count }) => failures.push(count),
      },
    );
    expect(failures).toEqual([1, 2, 1, 2, 1, 2]);
  });

  it("waits at least what the other side asked for", async () => {
    const waits: number[] = [];
    const stop = new AbortController();
    await reconnectWithBackoff(
      async () => {
        throw new Error("429");
      },
      {
        signal: stop.signal,
        baseMs: 1,
        retryAfterMs: () => 25,
        onFailure: (_error, { retryInMs }) => {
          waits.push(retryInMs);
          stop.abort();
        },
      },
    );
    expect(waits).toEqual([25]);
  });

  it("rejects nonsense options, naming them", async () => {
    const run = (options: object) =>
      reconnectWithBackoff(async () => {}, {
        signal: new AbortController().signal,
        onFailure: () => {},
        ...options,
      });
    await expect(run({ baseMs: 0 })).rejects.toThrow("reconnectWithBackoff: baseMs");
    await expect(run({ capMs: Number.NaN })).rejects.toThrow(UserError);
    await expect(run({ jitter: 2 })).rejects.toThrow("jitter must be a number from 0 to 1");
    expect(() => retryDelayMs(1, { baseMs: -1 })).toThrow("retryDelayMs: baseMs");
  });
});
