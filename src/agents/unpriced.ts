/**
 * Models in use that no price knows (docs/decisions/unpriced-models.md): each model of
 * each agent's chain (its `model`, else `llm.model`, then each of its fallbacks; the
 * built-in default agent's when `agents/` does not define it), looked up in the price
 * table with `llm.prices` and the entries' `prices` over it. Such a model's
 * calls count as $0; while a budget applies to its agent they are refused (budget.ts).
 * Reported at server start, by `picklebot doctor` and on the dashboard's Usage page.
 */
import { type Config, workspacePrices } from "../config/index.js";
import { budgetApplies } from "./budget.js";
import { type AgentDefinition, builtInAgent, chainModelsOf } from "./definition.js";
import { priceOf, unpricedFix } from "./prices.js";

/** A model that agents call and that has no price. */
export interface UnpricedModel {
  model: string;
  /** The agents that call it, sorted. */
  agentIds: string[];
  /** Those of them a budget applies to: their model calls are refused. */
  refusedAgentIds: string[];
}

/** The unpriced models of the workspace's agents, sorted by model. */
export function unpricedModels(
  config: Config,
  agents: ReadonlyMap<string, AgentDefinition>,
): UnpricedModel[] {
  const byModel = new Map<string, UnpricedModel>();
  const prices = workspacePrices(config);
  for (const agent of agentsInUse(config, agents)) {
    const unpriced = chainModelsOf(agent, config).filter((model) => !priceOf(model, prices));
    for (const model of new Set(unpriced)) {
      const entry = byModel.get(model) ?? { model, agentIds: [], refusedAgentIds: [] };
      entry.agentIds.push(agent.id);
      if (budgetApplies(config, agent)) entry.refusedAgentIds.push(agent.id);
      byModel.set(model, entry);
    }
  }
  return [...byModel.values()]
    .map((entry) => ({
      ...entry,
      agentIds: entry.agentIds.sort(),
      refusedAgentIds: entry.refusedAgentIds.sort(),
    }))
    .sort((a, b) => a.model.localeCompare(b.model));
}

/** What an unpriced model means for its agents, in one sentence (without the fix). */
export function unpricedProblem({ model, agentIds, refusedAgentIds }: UnpricedModel): string {
  const agents = `agent${agentIds.length === 1 ? "" : "s"} ${agentIds.join(", ")}`;
  const one = refusedAgentIds.length === 1;
  const refused =
    refusedAgentIds.length === 0
      ? ""
      : `; ${one ? "a budget applies" : "budgets apply"} to ${refusedAgentIds.join(", ")}, ` +
        `so ${one ? "its" : "their"} model calls are refused`;
  return `model "${model}" (${agents}) has no price: its calls count as $0${refused}`;
}

/** {@link unpricedProblem} and its fix, for the log. */
export function unpricedWarning(entry: UnpricedModel): string {
  return `${unpricedProblem(entry)}; ${unpricedFix(entry.model)}`;
}

/** The defined agents, and the built-in default agent when `agents/` has none by its name. */
function agentsInUse(
  config: Config,
  agents: ReadonlyMap<string, AgentDefinition>,
): AgentDefinition[] {
  const defined = [...agents.values()];
  return agents.has(config.default_agent)
    ? defined
    : [...defined, builtInAgent(config.default_agent)];
}
