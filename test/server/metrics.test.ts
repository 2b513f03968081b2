import { describe, expect, it } from "vitest";
import { ServerMetrics } from "../../src/server/metrics.js";

const USAGE = { input: 1000, output: 200, cacheRead: 3000, cacheWrite: 500 };

describe("ServerMetrics.countTokens", () => {
  it("counts tokens by agent and kind, and the cost in USD at the list price", async () => {
    const metrics = new ServerMetrics();
    metrics.countTokens({ agentId: "pickle", model: "claude-sonnet-4-5", usage: USAGE });
    metrics.countTokens({ agentId: "scout", model: "claude-haiku-4-5", usage: USAGE, batch: true });
    const text = await metrics.registry.metrics();
    expect(text).toContain('picklebot_tokens_total{agent="pickle",kind="input"} 1000');
    expect(text).toContain('picklebot_tokens_total{agent="pickle",kind="cache_write"} 500');
    expect(text).toContain('picklebot_tokens_total{agent="scout",kind="cache_read"} 3000');
    expect(text).toContain('picklebot_llm_tokens_total{type="output"} 400');
    // Sonnet: 1000 × $3 + 200 × $15 + 3000 × $0.30 + 500 × $3.75 per million.
    expect(text).toContain('picklebot_cost_usd_total{agent="pickle"} 0.008775');
    // Haiku at half price: (1000 × $1 + 200 × $5 + 3000 × $0.10 + 500 × $1.25) / 2 per million.
    expect(text).toContain('picklebot_cost_usd_total{agent="scout"} 0.0014625');
  });

  it("prices with llm.prices, and counts a model nobody priced at $0", async () => {
    const prices = { "my-model": { input: 2, output: 0, cache_read: 0, cache_write: 0 } };
    const metrics = new ServerMetrics({ prices });
    metrics.countTokens({ agentId: "pickle", model: "my-model", usage: USAGE });
    metrics.countTokens({ agentId: "other", model: "gpt-9", usage: USAGE });
    const text = await metrics.registry.metrics();
    expect(text).toContain('picklebot_cost_usd_total{agent="pickle"} 0.002');
    expect(text).toContain('picklebot_cost_usd_total{agent="other"} 0');
  });
});
