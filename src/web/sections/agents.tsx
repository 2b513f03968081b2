/**
 * The Agents section: every agent of `agents/` (and the built-in default when `agents/`
 * does not define it), its model, tools with the approval each call needs, subagents,
 * budget and system prompt; definitions that fail to load, with their error. Skills and
 * MCP servers join through {@link AgentsSectionDeps.describeExtras}, the one place a
 * later feature adds what it knows about an agent.
 *
 *   GET /      the agents, and the broken definitions
 *   GET /:id   one agent; an unknown id ─► 404 naming the known ones
 */
import { Hono } from "hono";
import { agentPolicy } from "../../agents/approval-policy.js";
import {
  type AgentDefinition,
  builtInAgent,
  type LoadedAgents,
  resolveAgent,
} from "../../agents/definition.js";
import { UserError } from "../../base/errors.js";
import type { Config } from "../../config/index.js";
import type { DashboardEnv, DashboardSection } from "../../http/env.js";
import { AgentDetail, type AgentExtraGroup, AgentList } from "./agent-pages.js";
import { notFoundPage } from "./ui.js";

/** What the Agents section reads. */
export interface AgentsSectionDeps {
  /** Loads `agents/` as the server does (`loadAgents(workspace)`). */
  loadAgents: () => LoadedAgents;
  /** The default agent, model and approval policy. */
  config: Config;
  /** What other features know of an agent: skills, MCP servers. (Default: nothing) */
  describeExtras?: (agentId: string) => Promise<AgentExtraGroup[]>;
}

/** The Agents section, mounted at `/agents`. */
export function agentsSection(deps: AgentsSectionDeps): DashboardSection {
  const app = new Hono<DashboardEnv>();
  app.get("/", (c) => {
    const loaded = deps.loadAgents();
    return c.render(
      <AgentList
        c={c}
        agents={listedAgents(loaded, deps.config)}
        broken={loaded.errors}
        defaultModel={deps.config.llm.model}
      />,
      { title: "Agents" },
    );
  });
  app.get("/:id", async (c) => {
    const loaded = deps.loadAgents();
    let agent: AgentDefinition;
    try {
      agent = resolveAgent(
        loaded.agents,
        c.req.param("id"),
        deps.config.default_agent,
        loaded.broken,
      );
    } catch (error) {
      if (!(error instanceof UserError)) throw error;
      return notFoundPage(c, error.message, "the agents");
    }
    const extras = (await deps.describeExtras?.(agent.id)) ?? [];
    return c.render(
      <AgentDetail
        agent={agent}
        policy={agentPolicy(deps.config.approvals.policy, agent.approvals)}
        defaultModel={deps.config.llm.model}
        extras={extras}
      />,
      { title: `Agent ${agent.id}` },
    );
  });
  return { path: "agents", label: "Agents", app };
}

/** The loaded agents by id, with the built-in default when it is not defined nor broken. */
function listedAgents(loaded: LoadedAgents, config: Config): AgentDefinition[] {
  const agents = [...loaded.agents.values()];
  const id = config.default_agent;
  if (!loaded.agents.has(id) && !loaded.broken.has(id)) agents.push(builtInAgent(id));
  return agents.sort((a, b) => a.id.localeCompare(b.id));
}
