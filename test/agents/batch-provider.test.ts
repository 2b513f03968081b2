import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createBatchProvider, customIdFor } from "../../src/agents/batch-provider.js";
import { createAnthropicProvider } from "../../src/agents/providers/anthropic.js";
import { systemClock } from "../../src/base/clock.js";
import { ParkRequest } from "../../src/base/errors.js";
import type { BatchStep, ModelProvider, ModelRequest } from "../../src/ports/index.js";
import { type FakeAnthropic, startFakeAnthropic } from "../fakes/anthropic.js";

let fake: FakeAnthropic;

beforeEach(async () => {
  fake = await startFakeAnthropic();
});

afterEach(async () => {
  await fake.close();
});

function request(text = "Summarise my notes."): ModelRequest {
  return {
    model: "claude-test",
    system: "be brief",
    messages: [{ role: "user", content: [{ type: "text", text }] }],
    tools: [],
    maxTokens: 100,
    currentTime: "Monday 08:00",
  };
}

/** A batch job whose steps are kept in `steps` (as its row would keep them). */
function batchJob(options: { maxSteps?: number; step?: BatchStep | null; others?: string[] } = {}) {
  const steps: BatchStep[] = [];
  const base = createAnthropicProvider({ apiKey: "sk-ant-test", baseURL: fake.url, maxRetries: 0 });
  if (!base.batches) throw new Error("the Anthropic provider has no batches");
  const make = (step: BatchStep | null): ModelProvider =>
    createBatchProvider({
      provider: { ...base, batches: base.batches as NonNullable<typeof base.batches> },
      job: {
        jobId: "job1",
        step,
        record: async (recorded) => {
          steps.push(recorded);
        },
        othersBatchIds: async () => new Set(options.others ?? []),
      },
      maxSteps: options.maxSteps ?? 5,
      clock: systemClock,
    });
  /** The provider as a resumed run sees it: with the last recorded step. */
  const resumed = () => make(steps.at(-1) ?? options.step ?? null);
  return { steps, first: make(options.step ?? null), resumed };
}

async function parkOf(promise: Promise<unknown>): Promise<ParkRequest> {
  const thrown = await promise.then(
    () => null,
    (error: unknown) => error,
  );
  if (!(thrown instanceof ParkRequest)) throw new Error(`expected a park, got ${String(thrown)}`);
  return thrown;
}

describe("batch provider", () => {
  it("stores the intent, submits, stores the id and parks; resumed, returns the answer marked batch", async () => {
    fake.script({ text: "Pickles.", usage: { cache_read_input_tokens: 7 } });
    const job = batchJob();

    const park = await parkOf(job.first.complete(request()));

    const batchId = fake.batches.created[0]?.id ?? "";
    expect(park.wait).toEqual({ kind: "batch", batchIds: [batchId] });
    const customId = customIdFor("job1", request());
    expect(job.steps).toEqual([
      expect.objectContaining({ customId, batchId: null, steps: 1, fallback: false }),
      expect.objectContaining({ customId, batchId, steps: 1 }),
    ]);
    // Still running: parks again, submits nothing.
    await parkOf(job.resumed().complete(request()));
    fake.batches.endBatches();
    const reply = await job.resumed().complete(request());
    expect(reply.content).toEqual([{ type: "text", text: "Pickles." }]);
    expect(reply).toMatchObject({ usage: { cacheRead: 7 }, batch: true });
    expect(fake.batches.created).toHaveLength(1);
    expect(fake.requests).toHaveLength(0);
  });

  it("names a step by the job and its last message, not by the time shown", () => {
    const later = { ...request(), currentTime: "Tuesday 09:00" };
    expect(customIdFor("job1", later)).toBe(customIdFor("job1", request()));
    expect(customIdFor("job1", request("another step"))).not.toBe(customIdFor("job1", request()));
    expect(customIdFor("job2", request())).not.toBe(customIdFor("job1", request()));
    expect(customIdFor(`${"x".repeat(80)}.y`, request())).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
  });

  it("after a crash between intent and id, finds the batch by custom_id instead of submitting", async () => {
    fake.script({ text: "Found it." });
    const customId = customIdFor("job1", request());
    const intent = { customId, batchId: null, at: Date.now(), steps: 1, fallback: false };
    // What the crashed run had sent, and another job's batch the list also shows.
    const client = createAnthropicProvider({ apiKey: "k", baseURL: fake.url }).batches;
    await client?.submit(customId, request());
    const other = await client?.submit("someone_else", request("other"));
    const job = batchJob({ step: intent, others: [other ?? ""] });

    const park = await parkOf(job.first.complete(request()));
    expect(park.wait).toEqual({ kind: "batch", batchIds: [fake.batches.created[0]?.id] });
    fake.batches.endBatches();
    const reply = await job.resumed().complete(request());

    expect(reply.content).toEqual([{ type: "text", text: "Found it." }]);
    expect(fake.batches.created).toHaveLength(2);
    expect(job.steps.at(-1)).toMatchObject({ batchId: fake.batches.created[0]?.id });
  });

  it("submits after such a crash when no batch holds the step", async () => {
    const customId = customIdFor("job1", request());
    const intent = { customId, batchId: null, at: Date.now(), steps: 1, fallback: false };
    const job = batchJob({ step: intent });
    await parkOf(job.first.complete(request()));
    expect(fake.batches.created).toHaveLength(1);
    expect(job.steps.at(-1)).toMatchObject({ steps: 1, batchId: fake.batches.created[0]?.id });
  });

  it("falls back to one normal call for an errored item, and stays there on a retry", async () => {
    fake.script(
      { error: { status: 400, message: "bad" } },
      { text: "Normal." },
      { text: "Again." },
    );
    const job = batchJob();
    await parkOf(job.first.complete(request()));
    fake.batches.endBatches();

    const reply = await job.resumed().complete(request());
    expect(reply.content).toEqual([{ type: "text", text: "Normal." }]);
    expect(reply.batch).toBeUndefined();
    expect(job.steps.at(-1)).toMatchObject({ fallback: true });
    // A retry of that step (the job crashed after the call) makes a normal call again.
    await job.resumed().complete(request());
    expect(fake.requests).toHaveLength(2);
    expect(fake.batches.created).toHaveLength(1);
  });

  it("makes normal calls past maxSteps", async () => {
    const job = batchJob({ maxSteps: 0 });
    const reply = await job.first.complete(request());
    expect(reply.content).toEqual([{ type: "text", text: "ok" }]);
    expect(fake.batches.created).toHaveLength(0);
    expect(job.steps).toEqual([]);
  });
});
