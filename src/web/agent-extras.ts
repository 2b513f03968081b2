/**
 * What the Agents page shows of an agent beyond its AGENT.md: the skills it gets and the
 * MCP servers its tools name, with their state as they stand (a server is never started
 * just to be shown).
 */
import type { AgentCatalog } from "../agents/catalog.js";
import { builtInAgent } from "../agents/definition.js";
import { EVERY_MCP_SERVER, parseMcpSelector } from "../agents/mcp/names.js";
import type { McpServers } from "../agents/mcp/servers.js";
import { skillsOfAgent } from "../agents/skills.js";
import type { AgentExtraGroup } from "./sections/agent-pages.js";

/** `describeExtras` of the Agents section over the live catalog and MCP servers. */
export function agentExtras(
  catalog: AgentCatalog,
  mcp: () => McpServers | null,
): (agentId: string) => Promise<AgentExtraGroup[]> {
  return async (agentId) => {
    const agent = catalog.agents.get(agentId) ?? builtInAgent(agentId);
    const { skills, missing } = skillsOfAgent(catalog.skills, agent);
    const groups: AgentExtraGroup[] = [
      {
        heading: "Skills",
        items: [
          ...skills.map((skill) => ({
            name: skill.name,
            state: "loaded",
            detail: skill.description,
          })),
          ...missing.map((name) => ({
            name,
            state: "missing",
            detail: `named in AGENT.md, but no skills/${name}/SKILL.md exists`,
          })),
        ],
      },
    ];
    const servers = mcpServersOf(agent.tools, mcp());
    if (servers.length > 0) groups.push({ heading: "MCP servers", items: servers });
    return groups;
  };
}

function mcpServersOf(tools: readonly string[], mcp: McpServers | null) {
  const named = new Set<string>();
  for (const entry of tools) {
    const selector = parseMcpSelector(entry);
    if (selector === null) continue;
    for (const server of selector.server === EVERY_MCP_SERVER
      ? (mcp?.names ?? [])
      : [selector.server])
      named.add(server);
  }
  const states = new Map((mcp?.states() ?? []).map((report) => [report.name, report]));
  return [...named].map((name) => {
    const report = states.get(name);
    if (!report) return { name, state: "not configured", detail: "not in mcp_servers" };
    const detail =
      report.error ??
      (report.tools.length > 0 ? report.tools.join(", ") : `${report.transport}; not used yet`);
    return { name, state: report.state, detail };
  });
}
