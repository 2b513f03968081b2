/**
 * RunnableSignal's wake timer runs outside any caller: when the queue cannot tell its next
 * due time (a database that is busy or gone), the timer still wakes the listeners and
 * throws nothing into the event loop.
 */
import { describe, expect, it } from "vitest";
import { systemClock } from "../../src/base/clock.js";
import { RunnableSignal } from "../../src/storage/runnable.js";
import { trackUnhandledRejections } from "../helpers/rejections.js";
import { waitFor } from "../helpers/wait.js";

const rejections = trackUnhandledRejections();

describe("RunnableSignal", () => {
  it("wakes the listeners at a scheduled time even when the next due time cannot be read", async () => {
    let failing = false;
    const signal = new RunnableSignal({
      clock: systemClock,
      nextDueAt: () => {
        if (failing) throw new Error("database is locked");
        return null;
      },
    });
    let wakes = 0;
    const unsubscribe = signal.subscribe(() => {
      wakes += 1;
    });

    failing = true;
    signal.wakeAt(systemClock.now() + 5);
    await waitFor(() => wakes === 1, "the wake while the store fails");

    failing = false;
    signal.wakeAt(systemClock.now() + 5);
    await waitFor(() => wakes === 2, "the next wake, once the store answers");
    unsubscribe();
    signal.close();
    expect(rejections).toEqual([]);
  });
});
