import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadAgents } from "../../src/agents/definition.js";
import { type AgentsSectionDeps, agentsSection } from "../../src/web/sections/agents.js";
import { CAREFUL_AGENT } from "../helpers/approvals.js";
import { testConfig } from "../helpers/config.js";
import { mountSection, type SectionClient, textOf } from "../helpers/section-app.js";
import { makeWorkspace, type TempWorkspace } from "../helpers/workspace.js";

const SCOUT = `---
name: Scout
description: Reads the web for you
model: claude-haiku-4-5
tools: [web_fetch, read]
web_fetch:
  allow_domains: [example.org]
budget:
  daily_usd: 1
---
You scout.`;

let ws: TempWorkspace;

beforeEach(() => {
  ws = makeWorkspace({
    "agents/pickle/AGENT.md": CAREFUL_AGENT,
    "agents/scout/AGENT.md": SCOUT,
    "agents/broken/AGENT.md": "---\ntools: [teleport]\n---\nx",
  });
});

afterEach(() => ws.remove());

function client(extras?: AgentsSectionDeps["describeExtras"]): SectionClient {
  const config = testConfig(ws.dir);
  return mountSection(
    agentsSection({
      loadAgents: () => loadAgents(ws.dir),
      config,
      ...(extras ? { describeExtras: extras } : {}),
    }),
  );
}

describe("the Agents section", () => {
  it("lists each agent with its model, tools and budget, and the definitions that failed", async () => {
    const page = await client().get("/agents");
    expect(page.status).toBe(200);
    const text = textOf(page.html);
    expect(text).toContain(
      "pickle (Pickle) Runs commands, asking first claude-sonnet-4-6 bash, write workspace's only",
    );
    expect(text).toContain(
      "scout (Scout) Reads the web for you claude-haiku-4-5 web_fetch, read $1 a day",
    );
    expect(text).toContain("Definitions that did not load (these agents do not run)");
    expect(text).toMatch(/broken\/AGENT\.md.*teleport/);
  });

  it("shows the built-in default agent when agents/ does not define it", async () => {
    ws.remove();
    ws = makeWorkspace();
    const text = textOf((await client().get("/agents/pickle")).html);
    expect(text).toContain("Pickle (pickle) General assistant");
    expect(text).toContain("Defined in built-in");
  });

  it("shows an agent's tools with the approval each call needs, and its system prompt", async () => {
    const text = textOf((await client().get("/agents/pickle")).html);
    expect(text).toContain("bash ask the owner first");
    expect(text).toContain(
      "write by path: notes/**: allow; **: deny; other paths run without asking",
    );
    expect(text).toContain("System prompt You are Pickle.");
    const scout = textOf((await client().get("/agents/scout")).html);
    expect(scout).toContain("web_fetch run without asking only example.org");
  });

  it("shows what describeExtras reports (skills, MCP servers) with their state", async () => {
    const dashboard = client(async (agentId) => [
      {
        heading: "Skills",
        items: [{ name: "weather", state: "loaded", detail: `for ${agentId}` }],
      },
      {
        heading: "MCP servers",
        items: [{ name: "github", state: "failed", detail: "connection refused" }],
      },
    ]);
    const page = await dashboard.get("/agents/scout");
    expect(textOf(page.html)).toContain(
      "Skills weather loaded for scout MCP servers github failed connection refused",
    );
    expect(page.html).toContain('class="badge state-failed"');
  });

  it("answers an unknown or broken agent with a 404 page that says why", async () => {
    const unknown = await client().get("/agents/scoot");
    expect(unknown.status).toBe(404);
    expect(textOf(unknown.html)).toContain('unknown agent "scoot"; did you mean "scout"?');
    const broken = await client().get("/agents/broken");
    expect(broken.status).toBe(404);
    expect(textOf(broken.html)).toContain(
      'agent "broken" is broken and does not run until its definition is fixed',
    );
  });
});
