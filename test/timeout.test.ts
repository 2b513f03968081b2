import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { deadline } from "../src/base/deadline.js";
import { TimeoutError } from "../src/base/errors.js";

const run = promisify(execFile);
const BUILT = new URL("../dist/base/deadline.js", import.meta.url).href;

describe("deadline", () => {
  it("aborts with a TimeoutError when the time is up", async () => {
    const { signal } = deadline(new AbortController().signal, 10);
    await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
    expect(signal.reason).toBeInstanceOf(TimeoutError);
    expect(signal.reason).toMatchObject({ name: "TimeoutError", message: "timed out after 10 ms" });
  });

  it("aborts with the parent's reason when the parent aborts first", () => {
    const parent = new AbortController();
    const { signal, clear } = deadline(parent.signal, 60_000);
    parent.abort(new Error("stopped by the user"));
    clear();
    expect(signal.reason).toEqual(new Error("stopped by the user"));
  });

  it("starts aborted when the parent already is", () => {
    const { signal, clear } = deadline(AbortSignal.abort(new Error("gone")), 60_000);
    clear();
    expect(signal.aborted).toBe(true);
  });

  it("never aborts once cleared", async () => {
    const parent = new AbortController();
    const { signal, clear } = deadline(parent.signal, 5);
    clear();
    await new Promise((resolve) => setTimeout(resolve, 30));
    parent.abort();
    expect(signal.aborted).toBe(false);
  });

  it("still fires after a garbage collection while it waits (Node 20 loses AbortSignal.any + timeout)", async () => {
    // Only the listener refers to the signal, as in a job waiting on a hung model call.
    const script = `
      const { deadline } = await import(${JSON.stringify(BUILT)});
      deadline(new AbortController().signal, 200).signal.addEventListener("abort", () => {
        console.log("fired");
        process.exit(0);
      });
      for (const at of [20, 60, 120]) setTimeout(() => globalThis.gc(), at);
      setTimeout(() => { console.log("never fired"); process.exit(1); }, 2000);
    `;
    const { stdout } = await run(process.execPath, [
      "--expose-gc",
      "--input-type=module",
      "-e",
      script,
    ]);
    expect(stdout.trim()).toBe("fired");
  });
});
