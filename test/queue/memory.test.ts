import { describe, expect, it } from "vitest";
import type { ClaimedJob } from "../../src/ports/index.js";
import { MemoryJobQueue } from "../../src/storage/memory/queue.js";
import { TestClock } from "../helpers/clock.js";
import { chatJob, queueContract } from "./contract.js";

queueContract("memory", async () => {
  const clock = new TestClock();
  const queue = new MemoryJobQueue({ clock });
  return { queue, clock, cleanup: () => queue.close() };
});

describe("MemoryJobQueue", () => {
  it("forgets the oldest done jobs beyond keepDone, and nothing else", async () => {
    const queue = new MemoryJobQueue({ clock: new TestClock(), keepDone: 2 });
    const ids: string[] = [];
    for (const key of ["a", "b", "c"]) ids.push((await queue.enqueue(chatJob(key, key))).id);
    await queue.enqueue(chatJob("d", "still queued"));
    for (const job of (await queue.claim("w", 3)) as ClaimedJob[]) await queue.complete(job);
    expect(await queue.get(ids[0] as string)).toBeNull();
    expect(await queue.get(ids[2] as string)).toMatchObject({ state: "done" });
    expect(await queue.counts()).toEqual({
      queued: 1,
      running: 0,
      waiting: 0,
      done: 2,
      failed: 0,
      stopped: 0,
    });
  });
});
