import Anthropic from "@anthropic-ai/sdk";
import { afterEach, describe, expect, it } from "vitest";
import { type FakeAnthropic, type FakeMessagesBody, startFakeAnthropic } from "./anthropic.js";
import {
  FakePromptCache,
  LOOKBACK_BLOCKS,
  minimumCacheableTokens,
  promptBlocks,
} from "./anthropic-cache.js";

const SONNET = "claude-sonnet-4-6";
/** About 1 250 tokens: past Sonnet's minimum of 1 024, under Haiku's 2 048. */
const LONG = "x".repeat(5000);
const FIVE_MIN = { type: "ephemeral" } as const;
const ONE_HOUR = { type: "ephemeral", ttl: "1h" } as const;

/** A request: a long system prompt, then `turns` user/assistant text messages. */
function body(
  turns: number,
  marks: { system?: object; last?: object; model?: string } = {},
): FakeMessagesBody {
  const messages = Array.from({ length: turns }, (_, index) => ({
    role: index % 2 === 0 ? "user" : "assistant",
    content: [{ type: "text", text: `message ${index}` } as Record<string, unknown>],
  }));
  const last = messages.at(-1)?.content[0];
  if (last && marks.last) last.cache_control = marks.last;
  return {
    model: marks.model ?? SONNET,
    max_tokens: 100,
    system: [
      { type: "text", text: LONG, ...(marks.system ? { cache_control: marks.system } : {}) },
    ],
    messages,
  };
}

function tokens(request: FakeMessagesBody, blocks?: number): number {
  const all = promptBlocks(request).slice(0, blocks);
  return Math.ceil(all.reduce((sum, block) => sum + block.text.length, 0) / 4);
}

describe("fake prompt cache", () => {
  it("writes the prefix up to the last breakpoint, then reads it, and the rest is input", () => {
    const cache = new FakePromptCache(() => 0);
    const first = body(1, { system: FIVE_MIN, last: FIVE_MIN });
    expect(cache.use(first)).toEqual({
      input_tokens: 0,
      cache_read_input_tokens: 0,
      cache_creation_input_tokens: tokens(first),
      cache_creation: { ephemeral_5m_input_tokens: tokens(first), ephemeral_1h_input_tokens: 0 },
    });
    const second = body(3, { system: FIVE_MIN, last: FIVE_MIN });
    const usage = cache.use(second);
    expect(usage.cache_read_input_tokens).toBe(tokens(first));
    expect(usage.cache_creation_input_tokens).toBe(tokens(second) - tokens(first));
    expect(usage.input_tokens).toBe(0);
  });

  it("counts what follows the last breakpoint as input, and sums to the whole prompt", () => {
    const cache = new FakePromptCache(() => 0);
    const request = body(5, { system: FIVE_MIN });
    const usage = cache.use(request);
    expect(usage.cache_creation_input_tokens).toBe(tokens(request, 1));
    expect(usage.input_tokens + usage.cache_creation_input_tokens).toBe(tokens(request));
  });

  it("knows each model's minimum", () => {
    expect(minimumCacheableTokens("claude-sonnet-4-6")).toBe(1024);
    expect(minimumCacheableTokens("claude-opus-4-1")).toBe(1024);
    expect(minimumCacheableTokens("claude-3-5-haiku-latest")).toBe(2048);
    expect(minimumCacheableTokens("claude-haiku-4-5")).toBe(4096);
    expect(minimumCacheableTokens("claude-opus-4-6")).toBe(4096);
  });

  it("caches nothing under the model's minimum: 1 024 tokens, more for Haiku", () => {
    const cache = new FakePromptCache(() => 0);
    const short: FakeMessagesBody = {
      ...body(1, { last: FIVE_MIN }),
      system: "short",
    };
    expect(cache.use(short).cache_creation_input_tokens).toBe(0);
    expect(cache.use(short).cache_read_input_tokens).toBe(0);
    const haiku = body(1, { system: FIVE_MIN, model: "claude-haiku-4-5" });
    expect(tokens(haiku, 1)).toBeGreaterThan(1024);
    expect(cache.use(haiku).cache_creation_input_tokens).toBe(0);
    expect(cache.use(haiku).input_tokens).toBe(tokens(haiku));
  });

  it("reads only within 20 blocks before a breakpoint", () => {
    const cache = new FakePromptCache(() => 0);
    const first = body(1, { last: FIVE_MIN });
    cache.use(first);
    // Blocks after the written prefix: 1 + LOOKBACK_BLOCKS - 1 reaches it, one more does not.
    const near = body(LOOKBACK_BLOCKS, { last: FIVE_MIN });
    expect(cache.use(near).cache_read_input_tokens).toBe(tokens(first));
    const fresh = new FakePromptCache(() => 0);
    fresh.use(first);
    const far = body(LOOKBACK_BLOCKS + 1, { last: FIVE_MIN });
    expect(fresh.use(far).cache_read_input_tokens).toBe(0);
    // A second breakpoint closer to the written prefix finds it again.
    const helped = body(LOOKBACK_BLOCKS + 1, { last: FIVE_MIN });
    (helped.messages[1]?.content as Array<Record<string, unknown>>)[0] = {
      type: "text",
      text: "message 1",
      cache_control: FIVE_MIN,
    };
    const other = new FakePromptCache(() => 0);
    other.use(first);
    expect(other.use(helped).cache_read_input_tokens).toBe(tokens(first));
  });

  it("forgets an entry 5 minutes (or 1 hour) after its last write or read", () => {
    let now = 0;
    const cache = new FakePromptCache(() => now);
    const short = body(1, { system: FIVE_MIN });
    cache.use(short);
    now = 4 * 60_000;
    expect(cache.use(short).cache_read_input_tokens).toBeGreaterThan(0);
    now += 4 * 60_000; // 8 min after the write, 4 after the read that renewed it
    expect(cache.use(short).cache_read_input_tokens).toBeGreaterThan(0);
    now += 5 * 60_000 + 1;
    expect(cache.use(short).cache_read_input_tokens).toBe(0);

    const hour = new FakePromptCache(() => now);
    const long = body(1, { system: ONE_HOUR });
    const written = hour.use(long);
    expect(written.cache_creation).toEqual({
      ephemeral_5m_input_tokens: 0,
      ephemeral_1h_input_tokens: tokens(long, 1),
    });
    now += 59 * 60_000;
    expect(hour.use(long).cache_read_input_tokens).toBe(tokens(long, 1));
    now += 60 * 60_000 + 1;
    expect(hour.use(long).cache_read_input_tokens).toBe(0);
  });

  it("renews a shorter entry when a longer prefix that contains it is read", () => {
    let now = 0;
    const cache = new FakePromptCache(() => now);
    cache.use(body(1, { system: ONE_HOUR, last: FIVE_MIN }));
    now = 50 * 60_000;
    cache.use(body(3, { system: ONE_HOUR, last: FIVE_MIN }));
    now += 1_000;
    expect(cache.use(body(3, { system: ONE_HOUR, last: FIVE_MIN })).cache_read_input_tokens).toBe(
      tokens(body(3)),
    );
    now += 59 * 60_000; // 59 min after the last read, 109 after the write
    const fresh = body(1, { system: ONE_HOUR });
    expect(cache.use(fresh).cache_read_input_tokens).toBe(tokens(fresh, 1));
  });

  it("splits a write by the TTL of the breakpoint that ends each stretch", () => {
    const cache = new FakePromptCache(() => 0);
    const request = body(3, { system: ONE_HOUR, last: FIVE_MIN });
    expect(cache.use(request).cache_creation).toEqual({
      ephemeral_1h_input_tokens: tokens(request, 1),
      ephemeral_5m_input_tokens: tokens(request) - tokens(request, 1),
    });
  });
});

describe("fake Anthropic server, cache rules", () => {
  let fake: FakeAnthropic | undefined;
  afterEach(async () => {
    await fake?.close();
    fake = undefined;
  });

  it("refuses a fifth breakpoint with the API's 400, and reports usage with cache figures", async () => {
    fake = await startFakeAnthropic();
    const client = new Anthropic({ apiKey: "sk-ant-fake", baseURL: fake.url, maxRetries: 0 });
    const text = (n: number) => ({ type: "text" as const, text: `${n}`, cache_control: FIVE_MIN });
    const five = client.messages.create({
      model: SONNET,
      max_tokens: 10,
      messages: [{ role: "user", content: [1, 2, 3, 4, 5].map(text) }],
    });
    await expect(five).rejects.toThrow(/A maximum of 4 blocks with cache_control/);
    const ok = await client.messages.create({
      model: SONNET,
      max_tokens: 10,
      system: [{ type: "text", text: LONG, cache_control: FIVE_MIN }],
      messages: [{ role: "user", content: "hi" }],
    });
    expect(ok.usage.cache_creation_input_tokens).toBeGreaterThan(1024);
    expect(fake.requests[0]?.usage?.cache_creation_input_tokens).toBe(
      ok.usage.cache_creation_input_tokens,
    );
  });
});
