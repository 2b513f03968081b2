/**
 * The memories as the person in charge sees them (`picklebot memory`, `/memory` and
 * `/forget` in chat, the dashboard): which memory a name picks, its budget, and how it is
 * shown with its size.
 */
import { UserError } from "../../base/errors.js";
import { memoryChars } from "../../base/memory-text.js";
import { isPersonKey, PERSON_KEY_FORMS } from "../../base/person-key.js";
import { AGENT_SCOPE, type MemoryScope } from "../../ports/index.js";
import type { AgentDefinition } from "../definition.js";
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
  if (agent.memory === null) {
    throw new UserError(`agent ${agent.id} has no memory: its AGENT.md says memory: false`);
  }
  const notes = scope === AGENT_SCOPE;
  return {
    agentId: agent.id,
    scope,
    label: notes ? `the notes of agent ${agent.id}` : `agent ${agent.id}'s memory of ${scope}`,
    budget: notes ? agent.memory.agentChars : agent.memory.personChars,
    quote: true,
    secrets,
  };
}

/** `used of budget characters (percent%)`, as every view of a memory says how full it is. */
export function fullness(text: string, budget: number): string {
  const used = memoryChars(text);
  return `${used} of ${budget} characters (${Math.round((used / budget) * 100)}%)`;
}
