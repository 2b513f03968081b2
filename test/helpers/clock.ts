/**
 * The one test clock: time moves only when the test says so. It is also the timers of the
 * parts that take them (the CronWorker), whose callbacks run as time is advanced past them.
 *
 *   const clock = new TestClock();            // 2025-01-01T00:00:00Z
 *   clock.advance(5_000);                      // moves time; runs no timer
 *   await clock.advanceTo(iso, settle);        // runs each due timer in order, then settle()
 *   runTurn({ ..., sleep: clock.sleep });      // a retry's wait moves time, at once
 */

import type { Sleep } from "../../src/base/clock.js";
import type { Timers } from "../../src/cron/worker.js";
import type { Clock } from "../../src/ports/index.js";

/** Where a {@link TestClock} starts unless told otherwise. */
export const TEST_EPOCH = Date.UTC(2025, 0, 1);

interface PendingTimer {
  at: number;
  callback: () => void;
}

/** A clock (and timers) that move only when the test says so. */
export class TestClock implements Clock, Timers {
  #now: number;
  #nextHandle = 1;
  readonly #pending = new Map<number, PendingTimer>();

  /** Starts at `start` (epoch ms or an ISO string). (Default: {@link TEST_EPOCH}) */
  constructor(start: number | string = TEST_EPOCH) {
    this.#now = typeof start === "string" ? Date.parse(start) : start;
  }

  now(): number {
    return this.#now;
  }

  /** Every wait {@link sleep} was asked for, in ms, oldest first. */
  readonly slept: number[] = [];

  /**
   * A {@link Sleep} that does not wait: it moves time forward by `ms` (running no timer)
   * and resolves; it rejects as the real one does once `signal` is aborted.
   */
  readonly sleep: Sleep = async (ms, signal) => {
    signal?.throwIfAborted();
    this.slept.push(ms);
    this.#now += ms;
  };

  /** Moves time forward by `ms` without running timers. */
  advance(ms: number): void {
    this.#now += ms;
  }

  /** Jumps the clock without running timers (the machine was off). */
  set(time: number | string): void {
    this.#now = typeof time === "string" ? Date.parse(time) : time;
  }

  setTimeout(callback: () => void, delayMs: number): unknown {
    const handle = this.#nextHandle++;
    this.#pending.set(handle, { at: this.#now + delayMs, callback });
    return handle;
  }

  clearTimeout(handle: unknown): void {
    this.#pending.delete(handle as number);
  }

  /**
   * Moves time forward to `time`, running each timer at its due time, in order, and
   * waiting for `settle` after each one (the reaction to it).
   */
  async advanceTo(time: number | string, settle: () => Promise<void>): Promise<void> {
    const target = typeof time === "string" ? Date.parse(time) : time;
    for (;;) {
      const next = this.#earliest();
      if (next === undefined || next[1].at > target) break;
      this.#pending.delete(next[0]);
      this.#now = Math.max(this.#now, next[1].at);
      next[1].callback();
      await settle();
    }
    this.#now = target;
  }

  #earliest(): [number, PendingTimer] | undefined {
    let earliest: [number, PendingTimer] | undefined;
    for (const entry of this.#pending) {
      if (earliest === undefined || entry[1].at < earliest[1].at) earliest = entry;
    }
    return earliest;
  }
}
