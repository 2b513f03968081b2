/**
 * The memories as the person in charge sees them (`picklebot memory`, `/memory` and
 * `/forget` in chat, the dashboard): which memory a name picks, its budget, and how it is
 * shown with its size.
 */
import { UserError } from "../../base/errors.js";
import { memoryChars } from "../../base/memory-text.js";
import { isPersonKey, PERSON_KEY_FORMS } from "../../base/person-key.js";
import {
  AGENT_SCOPE,
  type Memory,
  type MemoryChange,
  type MemoryScope,
} from "../../ports/index.js";
import { type AgentDefinition, builtInAgent } from "../definition.js";
import type { EditTarget } from "./editing.js";

/** One memory of one agent, with the budget its agent gives it. */
export interface OwnedMemory extends EditTarget {
  agentId: string;
  scope: MemoryScope;
}

/**
 * The memory `scope` (`agent` or a person key) of `agent`, for the owner to read and
 * change. Throws UserError when the scope is neither, or the agent has memory off.
 */
export function ownedMemory(
  agent: AgentDefinition,
  scope: string,
  secrets: readonly string[],
): OwnedMemory {
  if (scope !== AGENT_SCOPE && !isPersonKey(scope)) {
    throw new UserError(
      `"${scope}" names no memory; write agent (its notes) or ${PERSON_KEY_FORMS}`,
    );
  }
  const budget = memoryBudget(agent, scope);
  if (budget === null) {
    throw new UserError(`agent ${agent.id} has no memory: its AGENT.md says memory: false`);
  }
  return {
    agentId: agent.id,
    scope,
    label: memoryLabel(agent.id, scope),
    budget,
    quote: true,
    secrets,
  };
}

/** `the notes of agent pickle`, `agent pickle's memory of telegram:1001`. */
export function memoryLabel(agentId: string, scope: MemoryScope): string {
  return scope === AGENT_SCOPE
    ? `the notes of agent ${agentId}`
    : `agent ${agentId}'s memory of ${scope}`;
}

/** The budget of memory `scope` of `agent`; null when the agent has memory off. */
export function memoryBudget(agent: AgentDefinition, scope: MemoryScope): number | null {
  if (agent.memory === null) return null;
  return scope === AGENT_SCOPE ? agent.memory.agentChars : agent.memory.personChars;
}

/** `used of budget characters (percent%)`, as every view of a memory says how full it is. */
export function fullness(text: string, budget: number): string {
  const used = memoryChars(text);
  return `${used} of ${budget} characters (${Math.round((used / budget) * 100)}%)`;
}

/** The loaded agents, the built-in default agent included when `agents/` lacks it. */
export interface AgentsOfMemory {
  agents: ReadonlyMap<string, AgentDefinition>;
  defaultAgentId: string;
}

/** The definition of a memory's agent; undefined for an agent no longer in the workspace. */
export function agentOfMemory(
  { agents, defaultAgentId }: AgentsOfMemory,
  agentId: string,
): AgentDefinition | undefined {
  return agents.get(agentId) ?? (agentId === defaultAgentId ? builtInAgent(agentId) : undefined);
}

/** The memories longer than their agent's budget for them (after a link merged two, or a budget lowered). */
export function memoriesOverBudget(
  memories: readonly Memory[],
  agents: AgentsOfMemory,
): Array<{ memory: Memory; budget: number }> {
  return memories.flatMap((memory) => {
    const agent = agentOfMemory(agents, memory.agentId);
    const budget = agent && memoryBudget(agent, memory.scope);
    return budget && memoryChars(memory.text) > budget ? [{ memory, budget }] : [];
  });
}

/** `agent (job …, call …)`, `cli`, `dashboard`, `chat`. */
export function whoChanged(change: MemoryChange): string {
  const where = [
    change.jobId && `job ${change.jobId}`,
    change.callId && `call ${change.callId}`,
  ].filter(Boolean);
  return where.length === 0 ? change.by : `${change.by} (${where.join(", ")})`;
}

/** The entry a change wrote or removed, on one line, shortened. */
export function whatChanged(change: MemoryChange): string {
  const text =
    (change.action === "remove" || change.action === "clear" ? change.previous : change.entry) ??
    "";
  const line = text.replace(/\s+/g, " ").trim();
  return line.length > 60 ? `${line.slice(0, 59)}…` : line;
}
