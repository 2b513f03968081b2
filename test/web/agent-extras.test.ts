/**
 * The Agents page's extras from the live catalog and MCP servers: the skills an agent
 * gets (and the ones its AGENT.md names that do not exist), and the MCP servers its tools
 * name with their state, a server never being started just to be shown.
 */
import { afterEach, describe, expect, it } from "vitest";
import { AgentCatalog } from "../../src/agents/catalog.js";
import { McpServers } from "../../src/agents/mcp/servers.js";
import { agentExtras } from "../../src/web/agent-extras.js";
import { stdioFake } from "../fakes/mcp.js";
import { testConfig } from "../helpers/config.js";
import { makeWorkspace, type TempWorkspace } from "../helpers/workspace.js";

let ws: TempWorkspace;
let servers: McpServers;

afterEach(async () => {
  await servers.stop();
  ws.remove();
});

const AGENT = `---
name: Scout
description: Looks things up
tools: [read, "mcp:used", "mcp:idle/echo"]
skills: [weather, tides]
---
You scout.`;

const WEATHER = `---
name: weather
description: How to read a forecast
---
Body that stays out of the listing.`;

describe("agentExtras", () => {
  it("lists the agent's skills and its MCP servers with their state, starting none", async () => {
    ws = makeWorkspace({
      "agents/scout/AGENT.md": AGENT,
      "skills/weather/SKILL.md": WEATHER,
    });
    const config = testConfig(ws.dir, { mcp_servers: { used: stdioFake(), idle: stdioFake() } });
    servers = new McpServers({ servers: config.mcp_servers, surroundings: { workspace: ws.dir } });
    const catalog = new AgentCatalog(ws.dir);
    catalog.load();
    await servers.toolsFor(["mcp:used"]);

    const groups = await agentExtras(catalog, () => servers)("scout");

    expect(groups[0]).toEqual({
      heading: "Skills",
      items: [
        { name: "weather", state: "loaded", detail: "How to read a forecast" },
        {
          name: "tides",
          state: "missing",
          detail: expect.stringContaining("skills/tides/SKILL.md"),
        },
      ],
    });
    const [used, idle] = groups[1]?.items ?? [];
    expect(groups[1]?.heading).toBe("MCP servers");
    expect(used).toMatchObject({
      name: "used",
      state: "ready",
      detail: expect.stringContaining("used__"),
    });
    expect(idle).toEqual({ name: "idle", state: "idle", detail: "stdio; not used yet" });
  });
});
