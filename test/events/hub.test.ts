import { describe, expect, it } from "vitest";
import { EventHub } from "../../src/events/hub.js";
import type { PicklebotEvent } from "../../src/ports/index.js";

const enqueued = (jobId: string) =>
  ({ type: "job.enqueued", jobId, agentId: "main", sessionKey: "cli:1", attempts: 0 }) as const;

/** Resolves after every queued microtask and timer callback of this turn ran. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

describe("EventHub", () => {
  it("numbers events and stamps the instance and time", () => {
    const hub = new EventHub({ instance: "local", now: () => 1_000 });
    hub.publish(enqueued("a"));
    hub.publish({ ...enqueued("b"), at: 5 });
    expect(hub.since(0)).toEqual([
      { ...enqueued("a"), seq: 1, at: 1_000, instance: "local" },
      { ...enqueued("b"), seq: 2, at: 5, instance: "local" },
    ]);
    expect(hub.since(1).map((event) => event.seq)).toEqual([2]);
    expect(hub.since(2)).toEqual([]);
  });

  it("keeps only the latest events in its buffer", () => {
    const hub = new EventHub({ instance: "local", bufferSize: 3 });
    for (const id of ["a", "b", "c", "d", "e"]) hub.publish(enqueued(id));
    expect(hub.since(0).map((event) => event.seq)).toEqual([3, 4, 5]);
    expect(hub.lastSeq).toBe(5);
  });

  it("hands every later event to each subscriber, in order", async () => {
    const hub = new EventHub({ instance: "local" });
    hub.publish(enqueued("before"));
    const seen: PicklebotEvent[] = [];
    const stop = hub.subscribe((event) => {
      seen.push(event);
    });
    hub.publish(enqueued("a"));
    hub.publish(enqueued("b"));
    await settle();
    expect(seen.map((event) => event.seq)).toEqual([2, 3]);
    stop();
    hub.publish(enqueued("after"));
    await settle();
    expect(seen).toHaveLength(2);
  });

  it("drops and counts what a stalled subscriber cannot take, without holding up the others", async () => {
    const dropped: number[] = [];
    const hub = new EventHub({
      instance: "local",
      subscriberQueue: 2,
      onDropped: (count) => dropped.push(count),
    });
    let release!: () => void;
    const stalled = new Promise<void>((resolve) => {
      release = resolve;
    });
    const slow: number[] = [];
    hub.subscribe(async (event) => {
      slow.push(event.seq);
      await stalled;
    });
    const fast: number[] = [];
    hub.subscribe((event) => {
      fast.push(event.seq);
    });
    hub.publish(enqueued("1"));
    await settle(); // the slow subscriber now holds event 1
    for (const id of ["2", "3", "4", "5"]) {
      hub.publish(enqueued(id));
      await settle();
    }
    expect(fast).toEqual([1, 2, 3, 4, 5]);
    expect(hub.dropped).toBe(2);
    expect(dropped).toEqual([1, 1]);
    release();
    await settle();
    expect(slow).toEqual([1, 2, 3]);
  });

  it("never lets a failing subscriber reach the publisher, and stops calling it", async () => {
    const hub = new EventHub({ instance: "local" });
    let calls = 0;
    hub.subscribe(() => {
      calls += 1;
      throw new Error("broken listener");
    });
    expect(() => hub.publish(enqueued("a"))).not.toThrow();
    await settle();
    hub.publish(enqueued("b"));
    await settle();
    expect(calls).toBe(1);
  });

  it("relays another instance's event with its own instance and time, and a local seq", () => {
    const hub = new EventHub({ instance: "pb-1" });
    hub.publish(enqueued("mine"));
    hub.relay({ ...enqueued("theirs"), at: 42, instance: "pb-2" });
    expect(hub.since(1)).toEqual([{ ...enqueued("theirs"), seq: 2, at: 42, instance: "pb-2" }]);
  });

  it("mirrors another hub's events with their own seq, as the fan-out process's copy does", async () => {
    const server = new EventHub({ instance: "local" });
    for (const id of ["a", "b", "c"]) server.publish(enqueued(id));
    const copy = new EventHub({ instance: "fanout" });
    const heard: number[] = [];
    copy.subscribe((event) => {
      heard.push(event.seq);
    });
    for (const event of server.since(1)) copy.mirror(event);
    await settle();
    expect(copy.since(0)).toEqual(server.since(1));
    expect(copy.lastSeq).toBe(3);
    expect(heard).toEqual([2, 3]);
  });
});
