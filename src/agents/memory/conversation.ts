/**
 * Whose memory a run reads and writes (docs/guides/memory.md, "Who sees what"):
 *
 *   agent's `memory: false`           ─► none: no memory in the prompt, no memory tools
 *   the conversation's person         ─► the sender of a private chat (a DM), the owner
 *                                        (terminal, dashboard), a cron's delivery chat's
 *                                        person; none in a group, a subagent, a cron
 *                                        delivering nowhere or to a group
 *   the prompt shows                  ─► the agent's notes, and that person's memory
 *   `memory` about "person" writes    ─► the sender of the message being answered (in a
 *                                        group too: their own memory, never another's)
 *   `session_search` reads            ─► that person's sessions with this agent (through
 *                                        their links); in a group, the group's sessions
 *   writable                          ─► not for a cron, a subagent or `read_only: true`
 */
import { chatAddressOf } from "../../base/chat-address.js";
import { senderOfSessionKey } from "../../base/person-key.js";
import { chatSessionKey, parseSessionKey } from "../../base/session-key.js";
import type {
  JobSender,
  MemoryStore,
  PersonLink,
  RecallScope,
  RecallStore,
  ReplyTarget,
} from "../../ports/index.js";
import type { AgentMemory } from "./settings.js";

/** The memory of one run: its settings, and whose memory it reads and writes. */
export interface RunMemory {
  agentId: string;
  settings: AgentMemory;
  /** Whether the run has the `memory` tool. */
  writable: boolean;
  /** The person the conversation is with alone, whose memory the prompt shows; or null. */
  person: string | null;
  /** Whose memory `about: "person"` writes: the sender being answered, or null. */
  writer: string | null;
  /** Whose conversations `session_search` reads, or null when none are the run's to read. */
  recall: RecallScope | null;
}

/** What a run's memory is worked out from. */
export interface RunConversation {
  /** The agent's id and memory settings (null: memory off). */
  agent: { id: string; memory: AgentMemory | null };
  sessionKey: string;
  /** Who sent the message being answered (a chat job's). (Default: from the session key) */
  sender?: JobSender | null;
  /** Where the job's reply goes: a cron's delivery chat. */
  replyTo?: ReplyTarget;
}

/** The run's memory, or null when its agent has memory off. */
export async function runMemoryOf(
  conversation: RunConversation,
  stores: { memory: MemoryStore; recall: RecallStore },
): Promise<RunMemory | null> {
  const { agent, sessionKey } = conversation;
  if (agent.memory === null) return null;
  const key = parseSessionKey(sessionKey);
  const sender = conversation.sender ?? senderOfSessionKey(sessionKey);
  const person = sender?.direct
    ? sender.person
    : key?.kind === "cron"
      ? await deliveryPerson(conversation.replyTo, stores.recall)
      : null;
  const recall: RecallScope | null = person
    ? { agentId: agent.id, persons: sharingKeys(await stores.memory.links(), person) }
    : key?.kind === "chat"
      ? { agentId: agent.id, sessionKey }
      : null;
  return {
    agentId: agent.id,
    settings: agent.memory,
    writable: !agent.memory.readOnly && key?.kind !== "cron" && key?.kind !== "subagent",
    person,
    writer: sender?.person ?? person,
    recall,
  };
}

/** The person of the chat a cron delivers to, from that chat's sessions; null for none. */
async function deliveryPerson(
  replyTo: ReplyTarget | undefined,
  recall: RecallStore,
): Promise<string | null> {
  const chat = replyTo && chatAddressOf(replyTo);
  return chat ? recall.personOf(chatSessionKey(chat)) : null;
}

/** Every person key sharing `person`'s memory: the key its link leads to, and those linked to it. */
export function sharingKeys(links: readonly PersonLink[], person: string): string[] {
  const root = links.find((link) => link.person === person)?.linkedTo ?? person;
  return [root, ...links.filter((link) => link.linkedTo === root).map((link) => link.person)];
}
