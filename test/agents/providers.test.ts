/**
 * The model-provider registry: every `llm.provider` value has an entry, and the entry
 * makes its provider from the `llm` section (key, endpoint, cache lifetime).
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createModelProvider, modelProviders } from "../../src/agents/providers/index.js";
import { buildConfigSchema, type LlmConfig, MODEL_PROVIDER_KINDS } from "../../src/config/index.js";
import { type FakeAnthropic, requestAt, startFakeAnthropic } from "../fakes/anthropic.js";
import { startFakeOpenAi } from "../fakes/openai.js";

let fake: FakeAnthropic;

beforeEach(async () => {
  fake = await startFakeAnthropic({ apiKey: "sk-ant-registry" });
});

afterEach(async () => {
  await fake.close();
});

/** The `llm` section picklebot.yaml's `llm` block parses to. */
function llmConfig(llm: Record<string, unknown>, env: Record<string, string> = {}): LlmConfig {
  return buildConfigSchema({ env, workspace: "/tmp/picklebot-registry" }).parse({ llm }).llm;
}

describe("model-provider registry", () => {
  it("has an entry for every value llm.provider takes", () => {
    expect(Object.keys(modelProviders).sort()).toEqual([...MODEL_PROVIDER_KINDS].sort());
  });

  it("makes the provider llm names, on its key, endpoint and cache lifetime", async () => {
    const provider = createModelProvider(
      llmConfig({ api_key: "sk-ant-registry", base_url: fake.url, prompt_cache_ttl: "5m" }),
    );

    const reply = await provider.complete({
      model: "claude-test",
      system: "You are Pickle.",
      messages: [{ role: "user", content: [{ type: "text", text: "Hello" }] }],
      tools: [],
      maxTokens: 64,
    });

    expect(reply.stopReason).toBe("end_turn");
    expect(requestAt(fake, 0).body.system).toEqual([
      { type: "text", text: "You are Pickle.", cache_control: { type: "ephemeral" } },
    ]);
    expect(provider.batches).toBeDefined();
  });

  it("makes an openai-compatible provider on llm.base_url, with no key and none of Anthropic's features", async () => {
    const openAi = await startFakeOpenAi();
    try {
      const llm = llmConfig(
        { provider: "openai-compatible", base_url: openAi.url, model: "fake-model" },
        { ANTHROPIC_API_KEY: "sk-ant-not-for-others", OPENAI_API_KEY: "sk-not-for-others" },
      );
      const provider = createModelProvider(llm);

      const reply = await provider.complete({
        model: llm.model,
        system: "You are Pickle.",
        messages: [{ role: "user", content: [{ type: "text", text: "Hello" }] }],
        tools: [],
        maxTokens: 64,
      });

      expect(reply.stopReason).toBe("end_turn");
      expect(llm.api_key).toBeUndefined();
      expect(openAi.requests[0]?.headers.authorization).toBeUndefined();
      expect(provider.batches).toBeUndefined();
      expect(provider.countTokens).toBeUndefined();
      expect(modelProviders["openai-compatible"].featuresOff.join(" ")).toContain("Batch API");
    } finally {
      await openAi.close();
    }
  });
});

describe("the llm section of an openai-compatible endpoint", () => {
  it("takes OPENAI_API_KEY for OpenAI's own API only, never ANTHROPIC_API_KEY", () => {
    const env = { ANTHROPIC_API_KEY: "sk-ant-x", OPENAI_API_KEY: "sk-openai-x" };
    expect(llmConfig({ provider: "openai-compatible" }, env).api_key).toBe("sk-openai-x");
    expect(
      llmConfig({ provider: "openai-compatible", base_url: "https://openrouter.ai/api/v1" }, env)
        .api_key,
    ).toBeUndefined();
    expect(llmConfig({}, env).api_key).toBe("sk-ant-x");
  });

  it("prices a model on a local server at 0 unless llm.prices prices it; a hosted one stays unpriced", () => {
    const free = { input: 0, output: 0, cache_read: 0, cache_write: 0 };
    const local = (base_url: string, prices = {}) =>
      llmConfig({ provider: "openai-compatible", base_url, model: "llama3.2", prices }).prices;

    expect(local("http://127.0.0.1:11434/v1")).toEqual({ "llama3.2": free });
    expect(local("http://192.168.1.20:1234/v1")).toEqual({ "llama3.2": free });
    expect(local("http://gpu-box.local:8000/v1")).toEqual({ "llama3.2": free });
    const priced = { input: 1, output: 1, cache_read: 1, cache_write: 1 };
    expect(local("http://localhost:11434/v1", { "llama3.2": priced })).toEqual({
      "llama3.2": priced,
    });
    expect(local("https://api.together.xyz/v1")).toEqual({});
  });
});
