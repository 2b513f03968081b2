import { describe, expect, it } from "vitest";
import {
  abortedError,
  CancelledError,
  isRetryable,
  PicklebotError,
  TimeoutError,
} from "../../src/base/errors.js";

describe("CancelledError and TimeoutError", () => {
  it("are told apart by class, and say whether a retry can help", () => {
    const cancelled = new CancelledError("stopped by the user");
    const timedOut = new TimeoutError("timed out after 10 ms");
    expect(cancelled).toBeInstanceOf(PicklebotError);
    expect(cancelled).not.toBeInstanceOf(TimeoutError);
    expect(timedOut).not.toBeInstanceOf(CancelledError);
    expect(isRetryable(cancelled)).toBe(false);
    expect(isRetryable(timedOut)).toBe(true);
    expect([cancelled.name, timedOut.name]).toEqual(["CancelledError", "TimeoutError"]);
  });
});

describe("abortedError", () => {
  it("keeps the signal's reason when it is one of ours", () => {
    const timeout = new TimeoutError("timed out after 5 ms");
    expect(abortedError(AbortSignal.abort(timeout), new Error("sdk"))).toBe(timeout);
    const stop = new CancelledError("stopped by the user");
    expect(abortedError(AbortSignal.abort(stop), new Error("sdk"))).toBe(stop);
  });

  it("wraps a library's own abort error in a CancelledError", () => {
    const thrown = new DOMException("This operation was aborted", "AbortError");
    const error = abortedError(AbortSignal.abort(), thrown, "The call was cancelled.");
    expect(error).toBeInstanceOf(CancelledError);
    expect(error.message).toBe("The call was cancelled.");
    const unsignalled = abortedError(undefined, thrown);
    expect(unsignalled).toBeInstanceOf(CancelledError);
    expect(unsignalled.cause).toBe(thrown);
  });
});
