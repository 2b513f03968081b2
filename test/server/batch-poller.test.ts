import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createAnthropicProvider } from "../../src/agents/providers/anthropic.js";
import type { ClaimedJob, ModelBatches } from "../../src/ports/index.js";
import { BatchPoller } from "../../src/server/batch-poller.js";
import { MemoryJobQueue } from "../../src/storage/memory/queue.js";
import { type FakeAnthropic, startFakeAnthropic } from "../fakes/anthropic.js";
import { recordingLogger } from "../helpers/log.js";

let fake: FakeAnthropic;
let queue: MemoryJobQueue;
let batches: ModelBatches;

beforeEach(async () => {
  fake = await startFakeAnthropic();
  queue = new MemoryJobQueue();
  const provider = createAnthropicProvider({ apiKey: "k", baseURL: fake.url, maxRetries: 0 });
  if (!provider.batches) throw new Error("no batches");
  batches = provider.batches;
});

afterEach(async () => {
  await queue.close();
  await fake.close();
});

const request = {
  model: "claude-test",
  system: "",
  messages: [{ role: "user" as const, content: [{ type: "text" as const, text: "hi" }] }],
  tools: [],
  maxTokens: 10,
};

/** A batch job of `key`, parked on a batch of its own. */
async function parkedOnBatch(key: string): Promise<ClaimedJob> {
  await queue.enqueue({
    agentId: "pickle",
    sessionKey: key,
    message: "hi",
    mode: "job",
    replyTo: { kind: "silent" },
    batch: true,
  });
  const [job] = (await queue.claim("w", 1)) as [ClaimedJob];
  const batchId = await batches.submit(`pb_${key}`, request);
  const step = { customId: `pb_${key}`, batchId, at: Date.now(), steps: 1, fallback: false };
  await queue.recordBatchStep(job, step);
  const wait = { kind: "batch" as const, batchIds: [batchId] };
  await queue.park(job, { wait, until: Date.now() + 3_600_000, toolResults: [] });
  return job;
}

function poller(): BatchPoller {
  const { logger } = recordingLogger();
  return new BatchPoller({ queue, batches, clock: { now: Date.now }, logger, intervalMs: 10 });
}

describe("BatchPoller", () => {
  it("covers every pending batch with one list request, and wakes the jobs whose batch ended", async () => {
    const a = await parkedOnBatch("a");
    const b = await parkedOnBatch("b");
    const calls = fake.batches.calls.length;

    expect(await poller().pollOnce()).toBe("idle");
    expect(fake.batches.calls.slice(calls)).toEqual(["GET /v1/messages/batches"]);

    fake.batches.endBatches();
    expect(await poller().pollOnce()).toBe("woke");
    expect(fake.batches.calls.slice(calls)).toHaveLength(2);
    expect((await queue.get(a.id))?.state).toBe("queued");
    expect((await queue.get(b.id))?.state).toBe("queued");
  });

  it("asks nothing when no job waits for a batch", async () => {
    expect(await poller().pollOnce()).toBe("none");
    expect(fake.batches.calls).toEqual([]);
  });

  it("backs off while nothing ends, and wakes the job once it does", async () => {
    const job = await parkedOnBatch("a");
    const stop = new AbortController();
    const running = poller().run(stop.signal);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const polls = fake.batches.calls.filter((call) => call === "GET /v1/messages/batches").length;
    // 10, 20, 40, 80 ms…: a handful of polls in 200 ms, not twenty.
    expect(polls).toBeGreaterThan(1);
    expect(polls).toBeLessThan(7);
    fake.batches.endBatches();
    for (let i = 0; i < 100 && (await queue.get(job.id))?.state === "waiting"; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect((await queue.get(job.id))?.state).toBe("queued");
    stop.abort();
    await running;
  });
});
