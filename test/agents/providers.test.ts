/**
 * The model-provider registry: every `llm.provider` value has an entry, and the entry
 * makes its provider from the `llm` section (key, endpoint, cache lifetime).
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createModelProvider, modelProviders } from "../../src/agents/providers/index.js";
import { buildConfigSchema, type LlmConfig, MODEL_PROVIDER_KINDS } from "../../src/config/index.js";
import { type FakeAnthropic, requestAt, startFakeAnthropic } from "../fakes/anthropic.js";

let fake: FakeAnthropic;

beforeEach(async () => {
  fake = await startFakeAnthropic({ apiKey: "sk-ant-registry" });
});

afterEach(async () => {
  await fake.close();
});

/** The `llm` section picklebot.yaml's `llm` block parses to. */
function llmConfig(llm: Record<string, unknown>): LlmConfig {
  return buildConfigSchema({ env: {}, workspace: "/tmp/picklebot-registry" }).parse({ llm }).llm;
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
});
