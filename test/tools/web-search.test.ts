import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { gateTools } from "../../src/agents/approval-gate.js";
import { createToolbox, runToolCalls } from "../../src/agents/tools/index.js";
import { createBraveBackend } from "../../src/agents/tools/search-backends.js";
import { UNTRUSTED_NOTE } from "../../src/agents/tools/web-fetch.js";
import {
  createWebSearchTool,
  type TurnSearchContext,
  turnSearchOf,
  type WebSearchSettings,
} from "../../src/agents/tools/web-search.js";
import { ToolRetry } from "../../src/base/errors.js";
import {
  type FakeBrave,
  type FakeSearchEngine,
  startFakeBrave,
  startFakeSearxng,
} from "../fakes/search-engines.js";
import { createTempWorkspace, type TempWorkspace } from "./workspace.js";

const HITS = [
  {
    title: "Municipal pool",
    url: "https://pool.example/hours",
    snippet: "Open 7:00 to 21:00",
    date: "2026-11-20T10:00:00Z",
  },
  { title: "Swim club", url: "https://club.example/", snippet: "Lessons on Tuesdays" },
];

let temp: TempWorkspace;
let searxng: FakeSearchEngine;
let closedSearxng: FakeSearchEngine;
let brave: FakeBrave;

beforeAll(async () => {
  temp = createTempWorkspace();
  searxng = await startFakeSearxng();
  closedSearxng = await startFakeSearxng({ jsonEnabled: false });
  brave = await startFakeBrave({ apiKey: "brave-key" });
  searxng.hits = HITS;
  brave.hits = HITS;
});

afterEach(() => {
  searxng.answer = null;
  brave.answer = null;
  brave.refuseWith = null;
});

afterAll(async () => {
  await Promise.all([searxng.close(), closedSearxng.close(), brave.close()]);
  temp.remove();
});

function settings(fields: Partial<WebSearchSettings>): WebSearchSettings {
  return { max_per_turn: 5, timeout_s: 15, api_key: undefined, ...fields };
}

const ANTHROPIC_ALLOWED: TurnSearchContext = { anthropicModel: true, policy: "allow" };

function searchTool(fields: Partial<WebSearchSettings>, context = ANTHROPIC_ALLOWED) {
  const { tool } = turnSearchOf(settings(fields), context);
  if (tool === null) throw new Error("the model API searches: there is no tool");
  return createWebSearchTool(tool);
}

describe("web_search on SearXNG", () => {
  it("returns title, URL, date and snippet, marked as untrusted web content", async () => {
    const tool = searchTool({ backend: "searxng", base_url: searxng.url });
    const text = await tool.run({ query: "pool opening hours" }, temp.context());
    expect(text.startsWith(UNTRUSTED_NOTE)).toBe(true);
    expect(text).toContain('<untrusted-content source="web search: pool opening hours">');
    expect(text).toContain(
      "1. Municipal pool\n   https://pool.example/hours\n   date: 2026-11-20T10:00:00Z\n   Open 7:00 to 21:00",
    );
    expect(text).toContain("2. Swim club\n   https://club.example/\n   Lessons on Tuesdays");
    expect(searxng.queries.at(-1)?.get("format")).toBe("json");
  });

  it("returns at most count results", async () => {
    const tool = searchTool({ backend: "searxng", base_url: `${searxng.url}/` });
    const text = await tool.run({ query: "pool", count: 1 }, temp.context());
    expect(text).toContain("Municipal pool");
    expect(text).not.toContain("Swim club");
  });

  it("says how to enable the JSON format when the instance refuses it with 403", async () => {
    const tool = searchTool({ backend: "searxng", base_url: closedSearxng.url });
    await expect(tool.run({ query: "pool" }, temp.context())).rejects.toThrow(
      /refused the JSON format \(HTTP 403\): enable it in the instance's settings\.yml with `search: formats: \[html, json\]`/,
    );
  });

  it("refuses an answer in HTML, naming base_url", async () => {
    searxng.answer = "html";
    const tool = searchTool({ backend: "searxng", base_url: searxng.url });
    await expect(tool.run({ query: "pool" }, temp.context())).rejects.toThrow(
      `SearXNG at ${searxng.url} answered with HTML, not JSON: tools.web_search.base_url must be`,
    );
  });

  it("retries a search that times out, then tells the model", async () => {
    searxng.answer = "hang";
    const tool = searchTool({ backend: "searxng", base_url: searxng.url, timeout_s: 0.2 });
    const error = await tool.run({ query: "pool" }, temp.context()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ToolRetry);
    expect(String(error)).toContain(`SearXNG at ${searxng.url} did not answer within 0.2 s`);
    const run = await runToolCalls(
      [tool],
      [{ type: "tool_use", id: "call_1", name: "web_search", input: { query: "pool" } }],
      temp.context(),
      [],
      async () => {},
    );
    expect(run.results[0]).toMatchObject({ is_error: true });
    expect(run.results[0]?.content).toMatch(/did not answer within 0\.2 s \(tried 4 times\)/);
  });

  it("tells a backend that is down", async () => {
    searxng.answer = "down";
    const tool = searchTool({ backend: "searxng", base_url: searxng.url });
    await expect(tool.run({ query: "pool" }, temp.context())).rejects.toThrow(
      `could not reach SearXNG at ${searxng.url}`,
    );
  });

  it("refuses searches past the limit of the turn", async () => {
    const tool = searchTool({ backend: "searxng", base_url: searxng.url, max_per_turn: 2 });
    await tool.run({ query: "one" }, temp.context());
    await tool.run({ query: "two" }, temp.context());
    const asked = searxng.queries.length;
    await expect(tool.run({ query: "three" }, temp.context())).rejects.toThrow(
      "this turn already ran 2 searches, the limit (tools.web_search.max_per_turn)",
    );
    expect(searxng.queries.length).toBe(asked);
  });
});

describe("web_search on Brave", () => {
  it("sends the key and returns the results as plain text with their age", async () => {
    const tool = searchTool({ backend: "brave", base_url: brave.url, api_key: "brave-key" });
    const text = await tool.run({ query: "pool hours", count: 2 }, temp.context());
    expect(text).toContain(
      "1. Municipal pool\n   https://pool.example/hours\n   date: 2026-11-20T10:00:00Z\n   Open 7:00 to 21:00",
    );
    expect(brave.queries.at(-1)?.get("count")).toBe("2");
  });

  it("names the key when Brave refuses it (401)", async () => {
    const tool = searchTool({ backend: "brave", base_url: brave.url, api_key: "wrong-key" });
    const error = String(await tool.run({ query: "pool" }, temp.context()).catch((e) => e));
    expect(error).toContain("Brave Search refused the key (HTTP 401: The provided subscription");
    expect(error).toContain("tools.web_search.api_key");
    expect(error).not.toContain("wrong-key");
  });

  it("says the quota is exhausted on a 429 QUOTA_LIMITED", async () => {
    brave.refuseWith = "QUOTA_LIMITED";
    const tool = searchTool({ backend: "brave", base_url: brave.url, api_key: "brave-key" });
    const error = await tool.run({ query: "pool" }, temp.context()).catch((e: unknown) => e);
    expect(error).not.toBeInstanceOf(ToolRetry);
    expect(String(error)).toContain(
      "Brave Search's quota of the Free plan is exhausted (HTTP 429: Request quota limit exceeded for plan.)",
    );
  });

  it("retries a 429 RATE_LIMITED", async () => {
    brave.refuseWith = "RATE_LIMITED";
    const tool = searchTool({ backend: "brave", base_url: brave.url, api_key: "brave-key" });
    const error = await tool.run({ query: "pool" }, temp.context()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ToolRetry);
  });

  it("refuses a query over Brave's 400 characters before sending it", async () => {
    const tool = searchTool({ backend: "brave", base_url: brave.url, api_key: "brave-key" });
    const asked = brave.queries.length;
    await expect(tool.run({ query: "x".repeat(401) }, temp.context())).rejects.toThrow(
      'web_search: "query": Too big: expected string to have <=400 characters',
    );
    expect(brave.queries.length).toBe(asked);
  });

  it("passes on what Brave refuses as invalid (422) with its detail", async () => {
    const backend = createBraveBackend("brave-key", { baseUrl: brave.url, timeoutMs: 5000 });
    await expect(backend.search("", 5, new AbortController().signal)).rejects.toThrow(
      "Brave Search refused the search (HTTP 422: Unable to validate request parameter(s))",
    );
  });
});

describe("web_search without a backend", () => {
  it("tells the model no backend is configured and where the owner sets one", async () => {
    const tool = searchTool({});
    await expect(tool.run({ query: "pool" }, temp.context())).rejects.toThrow(
      "web_search: no search backend is configured; the owner sets tools.web_search.backend in picklebot.yaml",
    );
  });
});

describe("web_search with the anthropic backend", () => {
  it("is the model API's server tool when the model is on Anthropic and the policy allows it", () => {
    const search = turnSearchOf(
      settings({ backend: "anthropic", max_per_turn: 3 }),
      ANTHROPIC_ALLOWED,
    );
    expect(search).toEqual({ tool: null, serverTools: [{ kind: "web_search", maxUses: 3 }] });
  });

  it("stays a tool that says why when the policy asks, so the gate can ask", async () => {
    const tool = searchTool({ backend: "anthropic" }, { anthropicModel: true, policy: "ask" });
    await expect(tool.run({ query: "pool" }, temp.context())).rejects.toThrow(
      "an approvals policy of ask cannot apply; the owner allows web_search or picks searxng or brave",
    );
  });

  it("tells the model the backend needs an Anthropic model", async () => {
    const tool = searchTool({ backend: "anthropic" }, { anthropicModel: false, policy: "allow" });
    await expect(tool.run({ query: "pool" }, temp.context())).rejects.toThrow(
      "which only an Anthropic model can use",
    );
  });
});

describe("web_search under the approvals policy", () => {
  it("is refused by a deny entry before any search is sent", async () => {
    const search = turnSearchOf(settings({ backend: "searxng", base_url: searxng.url }), {
      anthropicModel: true,
      policy: "deny",
    });
    const [tool] = gateTools(
      createToolbox(["web_search"], search.tool ? { webSearch: search.tool } : {}),
      { web_search: "deny" },
      undefined,
    );
    const asked = searxng.queries.length;
    await expect(tool?.run({ query: "pool" }, temp.context())).rejects.toThrow(
      "web_search: the owner's approvals policy refuses this call (web_search: deny)",
    );
    expect(searxng.queries.length).toBe(asked);
  });
});
