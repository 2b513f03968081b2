/**
 * Where the owner names one tool of an MCP server: `approvals` entries
 * (`mcp:<server>/<tool>`), an agent's `tools:` entries, and a server's `include` and
 * `exclude`. Such a name can only be checked once the server has listed its tools; one
 * that names no tool matches nothing (an approval that never asks, an exclude that
 * excludes nothing), so each is reported with a "did you mean" as soon as the list is
 * known (docs/decisions/policy-names-checked.md).
 */
import type { ApprovalPolicy, Config } from "../../config/index.js";
import { closestMatch } from "../../config/suggest.js";
import { parseMcpSelector } from "./names.js";

/** One place that names one tool of one server. */
export interface McpToolReference {
  /** The file and key it is written under (`/…/picklebot.yaml: approvals.policy`). */
  where: string;
  /** The entry as written: `mcp:github/get_issue`, or `get_issue` in include/exclude. */
  entry: string;
  server: string;
  tool: string;
  /** What the entry does while it names no tool, for the owner. */
  effect: string;
}

/** An agent as far as its MCP names go (an `AgentDefinition` fits). */
export interface AgentNames {
  /** Its AGENT.md. */
  source: string;
  tools: readonly string[];
  approvals: ApprovalPolicy;
}

const APPROVAL_EFFECT = "it decides no call, so the tool you meant runs without this rule";
const EXCLUDE_EFFECT = "it excludes nothing, so the tool you meant is offered to agents";
const INCLUDE_EFFECT = "it includes nothing";
const TOOLS_EFFECT = "it gives the agent no tool";

/**
 * Every tool-level MCP name of picklebot.yaml (`config`, read from `configFile`) and of
 * `agents`.
 */
export function mcpToolReferences(
  config: Pick<Config, "approvals" | "mcp_servers">,
  agents: Iterable<AgentNames>,
  configFile: string,
): McpToolReference[] {
  const references = selectorReferences(
    Object.keys(config.approvals.policy),
    `${configFile}: approvals.policy`,
    APPROVAL_EFFECT,
  );
  for (const [server, settings] of Object.entries(config.mcp_servers)) {
    const where = `${configFile}: mcp_servers.${server}`;
    for (const tool of settings.include ?? []) {
      references.push({
        where: `${where}.include`,
        entry: tool,
        server,
        tool,
        effect: INCLUDE_EFFECT,
      });
    }
    for (const tool of settings.exclude ?? []) {
      references.push({
        where: `${where}.exclude`,
        entry: tool,
        server,
        tool,
        effect: EXCLUDE_EFFECT,
      });
    }
  }
  for (const agent of agents) {
    references.push(
      ...selectorReferences(
        Object.keys(agent.approvals),
        `${agent.source}: approvals`,
        APPROVAL_EFFECT,
      ),
      ...selectorReferences(agent.tools, `${agent.source}: tools`, TOOLS_EFFECT),
    );
  }
  return references;
}

function selectorReferences(entries: readonly string[], where: string, effect: string) {
  return entries.flatMap((entry): McpToolReference[] => {
    const selector = parseMcpSelector(entry);
    if (selector?.tool === undefined) return [];
    return [{ where, entry, server: selector.server, tool: selector.tool, effect }];
  });
}

/**
 * One warning per reference to `server` that names none of the tools it `listed`, with
 * the closest listed name when there is one (a typo in case included).
 */
export function unknownToolWarnings(
  server: string,
  listed: readonly string[],
  references: readonly McpToolReference[],
): string[] {
  return references
    .filter((reference) => reference.server === server && !listed.includes(reference.tool))
    .map((reference) => {
      const match = closestMatch(reference.tool, listed);
      const suggestion =
        match === undefined ? "" : `; did you mean "${written(reference, match)}"?`;
      return (
        `${reference.where}: "${reference.entry}" names no tool of MCP server "${server}"` +
        `${suggestion} (${reference.effect}; \`picklebot mcp list\` shows its tools)`
      );
    });
}

/** The entry as it is written when it names `tool`. */
function written(reference: McpToolReference, tool: string): string {
  return reference.entry.startsWith("mcp:") ? `mcp:${reference.server}/${tool}` : tool;
}
