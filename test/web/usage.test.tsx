import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { builtInAgent } from "../../src/agents/definition.js";
import type { Storage } from "../../src/ports/index.js";
import { openStorage } from "../../src/storage/index.js";
import { usageSection } from "../../src/web/sections/usage.js";
import { TestClock } from "../helpers/clock.js";
import { testConfig } from "../helpers/config.js";
import { mountSection, type SectionClient, textOf } from "../helpers/section-app.js";
import { makeWorkspace, type TempWorkspace } from "../helpers/workspace.js";

let ws: TempWorkspace;
let storage: Storage;
let clock: TestClock;

/** One model call of `agentId` in the ledger, now. */
async function call(agentId: string, model: string, tokens: { input?: number; output?: number }) {
  const session = await storage.history.createSession({ key: `console:${agentId}`, agentId });
  await storage.history.append(
    session.id,
    { role: "assistant", content: [{ type: "text", text: "ok" }] },
    {
      usage: { input: tokens.input ?? 0, output: tokens.output ?? 0, cacheRead: 0, cacheWrite: 0 },
      call: { model },
    },
  );
}

beforeEach(async () => {
  ws = makeWorkspace();
  clock = new TestClock("2025-01-15T06:00:00Z");
  storage = await openStorage(testConfig(ws.dir), clock);
  await call("pickle", "claude-opus-4-5", { input: 1_000_000 }); // $5
  clock.advance(86_400_000);
  await call("scout", "claude-opus-4-5", { output: 100_000 }); // $2.50
  await call("pickle", "mystery-model", { input: 10 });
});

afterEach(async () => {
  await storage.close();
  ws.remove();
});

function client(budget: Record<string, number> = {}): SectionClient {
  const pickle = { ...builtInAgent("pickle"), budget: { monthly_usd: 20 } };
  const section = usageSection({
    ledger: storage.usage,
    config: testConfig(ws.dir, { budget }),
    agents: new Map([["pickle", pickle]]),
    clock,
  });
  return mountSection(section);
}

describe("the Usage section", () => {
  it("sums tokens and cost by agent and by day, with the total and the unpriced models", async () => {
    const page = await client().get("/usage");
    expect(page.status).toBe(200);
    const text = textOf(page.html);
    expect(text).toContain(
      "By agent, last 7d Agent Calls Input Output Cache read Cache write USD pickle 2 1,000,010 0 0 0 $5.00 scout 1 0 100,000 0 0 $2.50 total 3 1,000,010 100,000 0 0 $7.50",
    );
    expect(text).toContain(
      "By day (UTC), last 7d Day Calls Input Output Cache read Cache write USD 2025-01-15 1 1,000,000 0 0 0 $5.00 2025-01-16 2 10 100,000 0 0 $2.50",
    );
    expect(text).toContain(
      "Not priced (counted as $0; add them to llm.prices in picklebot.yaml): mystery-model",
    );
  });

  it("shows each budget with what is spent and left in its period, and when it resets", async () => {
    const text = textOf((await client({ daily_usd: 10 }).get("/usage")).html);
    expect(text).toContain("the workspace daily $10.00 $2.50 $7.50 Fri 2025-01-17 00:00 UTC");
    expect(text).toContain("agent pickle monthly $20.00 $5.00 $15.00 Sat 2025-02-01 00:00 UTC");
  });

  it("says so when no budget is set", async () => {
    const section = usageSection({
      ledger: storage.usage,
      config: testConfig(ws.dir),
      agents: new Map(),
      clock,
    });
    const text = textOf((await mountSection(section).get("/usage")).html);
    expect(text).toContain("No budgets set");
  });

  it("names each model the agents call that has no price, whose agents a budget refuses, and the fix", async () => {
    const local = { ...builtInAgent("local"), model: "mystery-model" };
    const scout = { ...local, id: "scout", budget: { daily_usd: 1 } };
    const section = usageSection({
      ledger: storage.usage,
      config: testConfig(ws.dir),
      agents: new Map([
        ["pickle", builtInAgent("pickle")],
        ["local", local],
        ["scout", scout],
      ]),
      clock,
    });
    const page = await mountSection(section).get("/usage");
    const text = textOf(page.html);
    expect(text).toContain(
      'Models without a price model "mystery-model" (agents local, scout) has no price: its ' +
        "calls count as $0; a budget applies to scout, so its model calls are refused. Fix: " +
        'add "mystery-model: {input: …, output: …, cache_read: …, cache_write: …}" under ' +
        "llm.prices in picklebot.yaml (USD per million tokens; 0 for a free model).",
    );
    expect(page.html).toContain('role="alert"');
    // Every model of the default client's agents is priced: no such card.
    expect(textOf((await client().get("/usage")).html)).not.toContain("Models without a price");
  });

  it("prices a named model's calls at its entry's prices, as picklebot usage does", async () => {
    await call("pickle", "llama-3.3-70b", { input: 1_000_000 }); // $0.13 at the entry's price
    const price = { input: 0.13, output: 0.4, cache_read: 0.13, cache_write: 0.13 };
    const section = usageSection({
      ledger: storage.usage,
      config: testConfig(ws.dir, {
        models: {
          router: { provider: "openai-compatible", model: "llama-3.3-70b", prices: price },
        },
      }),
      agents: new Map([["pickle", builtInAgent("pickle")]]),
      clock,
    });
    const text = textOf((await mountSection(section).get("/usage")).html);
    expect(text).toContain(
      "By day (UTC), last 7d Day Calls Input Output Cache read Cache write USD 2025-01-15 1 1,000,000 0 0 0 $5.00 2025-01-16 3 1,000,010 100,000 0 0 $2.63",
    );
    expect(text).toContain(
      "Not priced (counted as $0; add them to llm.prices in picklebot.yaml): mystery-model",
    );
    expect(text).not.toContain("llama-3.3-70b");
  });

  it("narrows to a shorter period with since", async () => {
    const text = textOf((await client().get("/usage?since=12h")).html);
    expect(text).toContain("By agent, last 12h");
    expect(text).toContain("total 2 10 100,000 0 0 $2.50");
  });

  it("answers a since that is not a duration with 400 and the expected form", async () => {
    const page = await client().get("/usage?since=week");
    expect(page.status).toBe(400);
    expect(textOf(page.html)).toContain(
      'since "week" is not a duration: write a number and a unit m, h, d or w, such as 7d.',
    );
  });
});
