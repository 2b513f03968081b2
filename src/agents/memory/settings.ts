/** An agent's memory settings: AGENT.md's `memory` field (docs/guides/memory.md). */
export interface AgentMemory {
  /** The size of its notes, in characters. */
  agentChars: number;
  /** The size of what it knows about one person, in characters. */
  personChars: number;
  /** It reads its memory but has no `memory` tool to change it. */
  readOnly: boolean;
}

/**
 * Memory of an agent whose AGENT.md says nothing about it (the built-in agent too): about
 * a page of notes and half a page per person, what the peers allow, so it stays cheap to
 * send with every request.
 */
export const DEFAULT_MEMORY: AgentMemory = { agentChars: 2200, personChars: 1400, readOnly: false };

/** The largest budget a memory may have: beyond it memory is no longer cheap to send. */
export const MAX_MEMORY_CHARS = 20_000;
