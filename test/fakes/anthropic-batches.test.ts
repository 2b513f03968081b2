import Anthropic from "@anthropic-ai/sdk";
import { afterEach, describe, expect, it } from "vitest";
import { type FakeAnthropic, startFakeAnthropic } from "./anthropic.js";

let fake: FakeAnthropic | undefined;

afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

function clientFor(server: FakeAnthropic): Anthropic {
  return new Anthropic({ apiKey: "sk-ant-fake", baseURL: server.url, maxRetries: 0 });
}

/** A system prompt past the minimum cacheable length. */
const SYSTEM = "Be brief. ".repeat(600);

function item(customId: string, text = "hello") {
  return {
    custom_id: customId,
    params: {
      model: "claude-test",
      max_tokens: 100,
      system: [
        // Long enough to be cached (1,024 tokens at least, as the API requires).
        { type: "text" as const, text: SYSTEM, cache_control: { type: "ephemeral" as const } },
      ],
      messages: [{ role: "user" as const, content: text }],
    },
  };
}

async function resultsOf(client: Anthropic, id: string) {
  const lines = [];
  for await (const line of await client.messages.batches.results(id)) lines.push(line);
  return lines;
}

describe("fake Message Batches API", () => {
  it("creates a batch in progress, then answers its items from the script once ended", async () => {
    fake = await startFakeAnthropic();
    fake.script({ text: "first" }, { text: "second" });
    const client = clientFor(fake);

    const batch = await client.messages.batches.create({ requests: [item("a"), item("b")] });

    expect(batch).toMatchObject({
      type: "message_batch",
      processing_status: "in_progress",
      request_counts: { processing: 2, succeeded: 0 },
      results_url: null,
      ended_at: null,
    });
    expect(batch.id).toMatch(/^msgbatch_/);
    expect(Date.parse(batch.expires_at) - Date.parse(batch.created_at)).toBe(24 * 3_600_000);
    expect(fake.unusedReplies).toBe(2);

    fake.batches.endBatches();
    const ended = await client.messages.batches.retrieve(batch.id);
    expect(ended).toMatchObject({
      processing_status: "ended",
      request_counts: { processing: 0, succeeded: 2 },
    });
    const lines = await resultsOf(client, batch.id);
    expect(lines.map((line) => line.custom_id)).toEqual(["a", "b"]);
    const [first] = lines;
    expect(first?.result.type).toBe("succeeded");
    if (first?.result.type !== "succeeded") throw new Error("not succeeded");
    expect(first.result.message.content).toEqual([{ type: "text", text: "first" }]);
    expect(first.result.message.usage.cache_creation_input_tokens).toBeGreaterThan(0);
    const second = lines[1]?.result;
    if (second?.type !== "succeeded") throw new Error("not succeeded");
    // The second item shares the cached system prompt of the first.
    expect(second.message.usage.cache_read_input_tokens).toBeGreaterThan(0);
    expect(fake.requests).toHaveLength(0);
  });

  it("ends items errored (a scripted error), expired and canceled", async () => {
    fake = await startFakeAnthropic();
    fake.script({ error: { status: 529 } });
    const client = clientFor(fake);
    const errored = await client.messages.batches.create({ requests: [item("e")] });
    fake.batches.endBatches();
    const expiring = await client.messages.batches.create({ requests: [item("x"), item("y")] });
    fake.batches.endBatches({ expire: ["x"] });
    const canceled = await client.messages.batches.create({ requests: [item("c")] });
    const canceling = await client.messages.batches.cancel(canceled.id);
    expect(canceling.processing_status).toBe("canceling");
    fake.batches.endBatches();

    expect((await resultsOf(client, errored.id))[0]?.result).toEqual({
      type: "errored",
      error: { type: "error", error: { type: "overloaded_error", message: "Overloaded" } },
    });
    expect((await resultsOf(client, expiring.id)).map((line) => line.result.type)).toEqual([
      "expired",
      "succeeded",
    ]);
    expect((await resultsOf(client, canceled.id))[0]?.result).toEqual({ type: "canceled" });
  });

  it("lists batches newest first, and pages with after_id", async () => {
    fake = await startFakeAnthropic();
    const client = clientFor(fake);
    const ids = [];
    for (const id of ["a", "b", "c"]) {
      ids.push((await client.messages.batches.create({ requests: [item(id)] })).id);
    }

    const page = await client.messages.batches.list({ limit: 2 });

    expect(page.data.map((batch) => batch.id)).toEqual([ids[2], ids[1]]);
    expect(page.has_more).toBe(true);
    const all = [];
    for await (const batch of client.messages.batches.list({ limit: 2 })) all.push(batch.id);
    expect(all).toEqual([...ids].reverse());
  });

  it("refuses bad params, a duplicate custom_id, an unknown id and early results", async () => {
    fake = await startFakeAnthropic();
    const client = clientFor(fake);
    const bad = { custom_id: "a", params: { model: "claude-test", messages: [] } };
    const refusals = [
      client.messages.batches.create({ requests: [] }),
      client.messages.batches.create({ requests: [bad as never] }),
      client.messages.batches.create({ requests: [item("a"), item("a")] }),
      client.messages.batches.create({ requests: [item("not valid!")] }),
      client.messages.batches.create({
        requests: [{ ...item("s"), params: { ...item("s").params, stream: true } } as never],
      }),
    ];
    for (const refusal of refusals) {
      await expect(refusal).rejects.toMatchObject({ status: 400, type: "invalid_request_error" });
    }
    await expect(
      client.messages.batches.create({ requests: [item("a"), item("a")] }),
    ).rejects.toThrow(/Duplicate custom_id/);
    await expect(client.messages.batches.retrieve("msgbatch_nope")).rejects.toMatchObject({
      status: 404,
      type: "not_found_error",
    });
    const batch = await client.messages.batches.create({ requests: [item("a")] });
    const early = await fetch(`${fake.url}/v1/messages/batches/${batch.id}/results`, {
      headers: { "x-api-key": "sk-ant-fake" },
    });
    expect(early.status).toBe(400);
    await expect(client.messages.batches.results(batch.id)).rejects.toThrow(/results_url/);
    expect(fake.batches.created).toHaveLength(1);
  });
});
