/**
 * The owner's sections of the dashboard (Crons, Agents, Memory, Pairing, Approvals, Usage), built
 * from what the server already holds, in nav order.
 */
import type { AgentCatalog } from "../../agents/catalog.js";
import {
  type AgentDefinition,
  definedAgentIds,
  type LoadedAgents,
  loadAgents,
} from "../../agents/definition.js";
import { redactSecrets } from "../../base/redact.js";
import { allowedUserIds, type Config } from "../../config/index.js";
import { secretValues } from "../../config/redact.js";
import { loadWorkspaceCrons } from "../../cron/admin.js";
import type { DashboardSection } from "../../http/env.js";
import type { Clock, JobAdmin, JobQueue, Storage } from "../../ports/index.js";
import { type AgentsSectionDeps, agentsSection } from "./agents.js";
import { approvalsSection } from "./approvals.js";
import { cronsSection } from "./crons.js";
import { memorySection } from "./memory.js";
import { pairingSection } from "./pairing.js";
import { usageSection } from "./usage.js";

/** What {@link ownerSections} builds the sections from. */
export interface OwnerSectionsOptions {
  workspace: string;
  config: Config;
  storage: Storage;
  /** The server's queue (it publishes an event per enqueued job), or the storage's. */
  queue: JobQueue & JobAdmin;
  clock: Clock;
  /** The agents the server runs (and checks budgets against). */
  agents: ReadonlyMap<string, AgentDefinition>;
  /** The live agents (hot reloaded). (Default: `agents/` read again at each page) */
  catalog?: AgentCatalog;
  /** Skills, MCP servers of an agent. (Default: none) */
  describeExtras?: AgentsSectionDeps["describeExtras"];
}

/** The catalog's agents as {@link loadAgents} gives them, or `agents/` read again. */
function agentLoader(workspace: string, catalog: AgentCatalog | undefined): () => LoadedAgents {
  if (!catalog) return () => loadAgents(workspace);
  return () => ({
    agents: new Map(catalog.agents),
    broken: new Map(catalog.broken),
    errors: [...catalog.broken.values()],
  });
}

/** Crons, Agents, Memory, Pairing, Approvals and Usage. */
export function ownerSections(options: OwnerSectionsOptions): DashboardSection[] {
  const { workspace, config, storage, queue, clock, agents } = options;
  const loadAgentsNow = agentLoader(workspace, options.catalog);
  const knownAgentIds = () => {
    const { agents: valid, broken } = loadAgentsNow();
    return definedAgentIds(valid, broken);
  };
  return [
    cronsSection({
      loadCrons: () => loadWorkspaceCrons(workspace, config, knownAgentIds()),
      state: storage.cronState,
      queue,
      history: storage.history,
      clock,
      maxAttempts: config.workers.max_attempts,
      schedules: storage.schedules,
    }),
    agentsSection({
      loadAgents: loadAgentsNow,
      config,
      ...(options.describeExtras ? { describeExtras: options.describeExtras } : {}),
    }),
    memorySection({
      memory: storage.memory,
      agents: () => ({ agents: loadAgentsNow().agents, defaultAgentId: config.default_agent }),
      secrets: secretValues(config),
      clock,
      timezone: config.timezone,
    }),
    pairingSection({
      pairing: storage.pairing,
      outbox: storage.outbox,
      clock,
      inAllowedUserIds: (platform, userId) => allowedUserIds(config, platform).has(userId),
      timezone: config.timezone,
    }),
    approvalsSection({
      approvals: storage.approvals,
      queue,
      clock,
      timezone: config.timezone,
      redact: (text) => redactSecrets(text, secretValues(config)),
    }),
    usageSection({ ledger: storage.usage, config, agents, clock }),
  ];
}
