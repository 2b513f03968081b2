/**
 * The garbage collection the media intake asks for once a message's files are read
 * (src/base/collect-garbage.ts): what nothing references is gone when it returns, and
 * V8's `gc` is not left where other code could reach it.
 */
import { runInNewContext } from "node:vm";
import { describe, expect, it } from "vitest";
import { collectGarbage } from "../../src/base/collect-garbage.js";

/** A dead 5 MB buffer (as a download's chunks are, once stored), known only weakly. */
function deadDownload(): WeakRef<Buffer> {
  return new WeakRef(Buffer.alloc(5 * 1024 * 1024, 1));
}

describe("collectGarbage", () => {
  it("frees what nothing references before it returns", async () => {
    const dead = deadDownload();
    // A WeakRef's target lives until the end of the task that made it.
    await new Promise((resolve) => setImmediate(resolve));
    collectGarbage();
    expect(dead.deref()).toBeUndefined();
  });

  it("leaves V8's gc exposed to no other code", () => {
    collectGarbage();
    expect(Reflect.get(globalThis, "gc")).toBeUndefined();
    expect(runInNewContext("typeof gc")).toBe("undefined");
  });
});
