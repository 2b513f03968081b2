/**
 * `web_search` end to end: `picklebot chat` (the built CLI) with an agent that lists it,
 * against the fake model and the fake search engines; with `backend: anthropic`, the
 * model API's own search, sent back on the next turn and priced in `picklebot usage`.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  type FakeAnthropic,
  lastUserText,
  requestAt,
  startFakeAnthropic,
} from "../fakes/anthropic.js";
import { startFakeOpenAi } from "../fakes/openai.js";
import {
  type FakeBrave,
  type FakeSearchEngine,
  startFakeBrave,
  startFakeSearxng,
} from "../fakes/search-engines.js";
import { runCli } from "../helpers/cli.js";
import { fakeModelConfig, makeWorkspace, type TempWorkspace } from "../helpers/workspace.js";

const RESEARCHER =
  "---\nname: Researcher\ndescription: looks things up\ntools: [web_search, web_fetch]\n---\nLook things up.\n";

const HITS = [
  {
    title: "Municipal pool",
    url: "https://pool.example/hours",
    snippet: "Open 7:00 to 21:00",
    date: "2026-11-20",
  },
];

let fake: FakeAnthropic;
let searxng: FakeSearchEngine;
let brave: FakeBrave;
let ws: TempWorkspace;

beforeEach(async () => {
  fake = await startFakeAnthropic();
  searxng = await startFakeSearxng();
  brave = await startFakeBrave({ apiKey: "brave-key" });
  searxng.hits = HITS;
  brave.hits = HITS;
});

afterEach(async () => {
  await Promise.all([fake.close(), searxng.close(), brave.close()]);
  ws.remove();
});

function workspaceSearchingWith(webSearch: string): void {
  ws = makeWorkspace({
    "picklebot.yaml": fakeModelConfig(fake.url, `tools:\n  web_search:\n${webSearch}`),
    "agents/researcher/AGENT.md": RESEARCHER,
  });
}

const chat = (input: string) =>
  runCli(["chat", "--workspace", ws.dir, "--agent", "researcher"], { input });

/** The tools every agent has while its memory is on (the default). */
const MEMORY_TOOLS = ["memory", "session_search", "session_read"];

/** The model searches, then repeats what the search gave it. */
function scriptSearchThenEcho(): void {
  fake.script(
    { toolUses: [{ name: "web_search", input: { query: "pool opening hours" } }] },
    (request) => ({ text: `found: ${lastUserText(request)}` }),
  );
}

describe("web_search in picklebot chat", () => {
  it("gives the model SearXNG's results, marked as untrusted web content", async () => {
    workspaceSearchingWith(`    backend: searxng\n    base_url: ${searxng.url}\n`);
    scriptSearchThenEcho();
    const result = await chat("when is the pool open?\n");
    expect(result.code).toBe(0);
    expect(result.stderr).toContain("· web_search: pool opening hours");
    const toolNames = requestAt(fake, 0).body.tools?.map((tool) => tool.name);
    expect(toolNames).toEqual(["web_search", "web_fetch", ...MEMORY_TOOLS]);
    const sent = lastUserText(requestAt(fake, 1));
    expect(sent).toContain('<untrusted-content source="web search: pool opening hours">');
    expect(sent).toContain("1. Municipal pool\n   https://pool.example/hours\n   date: 2026-11-20");
    expect(searxng.queries.at(-1)?.get("q")).toBe("pool opening hours");
  });

  it("gives the model Brave's results", async () => {
    workspaceSearchingWith(
      `    backend: brave\n    base_url: ${brave.url}\n    api_key: brave-key\n`,
    );
    scriptSearchThenEcho();
    const result = await chat("when is the pool open?\n");
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("Municipal pool");
    expect(result.stdout).toContain("Open 7:00 to 21:00");
  });

  it("tells the model, not the person, when Brave's quota is exhausted", async () => {
    workspaceSearchingWith(
      `    backend: brave\n    base_url: ${brave.url}\n    api_key: brave-key\n`,
    );
    brave.refuseWith = "QUOTA_LIMITED";
    scriptSearchThenEcho();
    const result = await chat("when is the pool open?\n");
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("found: Brave Search's quota of the Free plan is exhausted");
  });
});

describe("web_search on the anthropic backend", () => {
  it("offers the API's server tool, sends its blocks back on the next turn, and prices the search", async () => {
    workspaceSearchingWith("    backend: anthropic\n    max_per_turn: 3\n");
    fake.script(
      {
        text: "The pool opens at 7:00.",
        webSearch: {
          query: "pool opening hours",
          results: [{ title: "Municipal pool", url: "https://pool.example/hours" }],
        },
        usage: { input_tokens: 100, output_tokens: 10, cache_read_input_tokens: 0 },
      },
      { text: "You're welcome.", usage: { input_tokens: 100, output_tokens: 10 } },
    );
    const result = await chat("when is the pool open?\nthanks\n");
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("The pool opens at 7:00.");
    expect(fake.refused).toEqual([]);
    const tools = requestAt(fake, 0).body.tools ?? [];
    expect(tools.map((tool) => tool.name)).toEqual(["web_fetch", ...MEMORY_TOOLS, "web_search"]);
    expect(tools.at(-1)).toMatchObject({
      type: "web_search_20250305",
      name: "web_search",
      max_uses: 3,
    });
    const replied = requestAt(fake, 1).body.messages[1]?.content as Array<{ type: string }>;
    expect(replied.map((block) => block.type)).toEqual([
      "server_tool_use",
      "web_search_tool_result",
      "text",
    ]);

    const usage = await runCli(["usage", "--json", "--workspace", ws.dir]);
    const report = JSON.parse(usage.stdout) as {
      total: { webSearches?: number; cacheRead: number; cacheWrite: number; costUsd: number };
    };
    expect(report.total).toMatchObject({ webSearches: 1, cacheRead: 0, cacheWrite: 0 });
    // claude-sonnet-4-6: 200 input at $3/M and 20 output at $15/M, and one search at $0.01.
    expect(report.total.costUsd).toBeCloseTo((200 * 3 + 20 * 15) / 1e6 + 0.01, 9);
    const table = await runCli(["usage", "--workspace", ws.dir]);
    expect(table.stdout).toMatch(/CACHE WRITE +WEB SEARCHES +USD\n/);
    expect(table.stdout).toMatch(/\ntotal +2 +200 +20 +0 +0 +1 +\$0\.0109\n/);
  });
});

describe("web_search on the anthropic backend, for an agent on another provider", () => {
  it("is a tool that tells the model why it cannot search, not a server tool the endpoint drops", async () => {
    const openai = await startFakeOpenAi();
    try {
      ws = makeWorkspace({
        "picklebot.yaml": fakeModelConfig(
          fake.url,
          [
            "tools:",
            "  web_search:",
            "    backend: anthropic",
            "models:",
            "  gpt:",
            "    provider: openai-compatible",
            `    base_url: ${openai.url}`,
            "    model: local-model",
          ].join("\n"),
        ),
        "agents/researcher/AGENT.md": RESEARCHER.replace("tools:", "model: gpt\ntools:"),
      });
      openai.script(
        { text: "", toolCalls: [{ name: "web_search", input: { query: "pool" } }] },
        { text: "no search" },
      );
      const result = await chat("when is the pool open?\n");
      expect(result.code).toBe(0);
      const [first, second] = openai.requests;
      const names = (first?.body.tools ?? []).map((tool) => tool.function.name);
      expect(names).toContain("web_search");
      expect(JSON.stringify(second?.body.messages)).toContain(
        "which only an Anthropic model can use",
      );
      expect(fake.requests).toHaveLength(0);
    } finally {
      await openai.close();
    }
  });
});
