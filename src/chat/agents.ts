/**
 * Which agent a chat talks to:
 *
 *   bound by picklebot.yaml (`bindings`)? ── yes ─► that agent, always; `/agent NAME` refuses
 *      │ no
 *   the agent of the chat's current session (`/agent NAME` started it), if it still exists
 *      │ none
 *   `default_agent`
 *
 * The choice is stored as a new session of the chat's key with the chosen agent (what
 * `/new` does with the same agent): durable, and the next job of the chat resumes it.
 */
import { type AgentDefinition, builtInAgent } from "../agents/definition.js";
import type { AgentMemory } from "../agents/memory/settings.js";
import type { ChatAddress } from "../base/chat-address.js";
import { chatSessionKey } from "../base/session-key.js";
import type { Config } from "../config/index.js";
import type { HistoryStore, Session } from "../ports/index.js";

/** What `/agent` shows of an agent. */
export interface AgentSummary {
  id: string;
  name: string;
  description: string;
  /** Its memory's budgets (`/memory`, `/forget`); null when its AGENT.md says `memory: false`. */
  memory: AgentMemory | null;
}

/** One entry of `bindings` in picklebot.yaml. */
export interface ChatBinding {
  chat: ChatAddress;
  agent: string;
}

/** The agents chats may talk to, and the chats picklebot.yaml pins to one. */
export interface ChatAgentDirectory {
  /** `default_agent`: a chat that chose none and is bound to none talks to it. */
  defaultAgentId: string;
  /** Every agent, the default one included (built in when `agents/` lacks it). */
  agents: readonly AgentSummary[];
  /** `bindings`, in file order. */
  bindings: readonly ChatBinding[];
}

/** The directory of a workspace: its loaded agents, `default_agent` and `bindings`. */
export function chatAgentDirectory(
  config: Pick<Config, "default_agent" | "bindings">,
  agents: ReadonlyMap<string, AgentDefinition>,
  broken: ReadonlyMap<string, unknown> = new Map(),
): ChatAgentDirectory {
  const all = new Map(agents);
  if (!all.has(config.default_agent) && !broken.has(config.default_agent)) {
    all.set(config.default_agent, builtInAgent(config.default_agent));
  }
  return {
    defaultAgentId: config.default_agent,
    agents: [...all.values()]
      .map(({ id, name, description, memory }) => ({ id, name, description, memory }))
      .sort((a, b) => a.id.localeCompare(b.id)),
    bindings: config.bindings,
  };
}

/** A chat's agent, and where that comes from. */
export interface ChatAgent {
  agentId: string;
  /** The picklebot.yaml entry that pins the chat to it (`bindings[0]`), or null when none does. */
  pinnedBy: string | null;
}

/** Answers "which agent?" for chats (`/agent` itself is a chat command: commands.ts). */
export class ChatAgents {
  readonly #directory: ChatAgentDirectory;
  readonly #history: HistoryStore;

  constructor(directory: ChatAgentDirectory, history: HistoryStore) {
    this.#directory = directory;
    this.#history = history;
  }

  /** The agent the chat's next message goes to. */
  async current(chat: ChatAddress): Promise<ChatAgent> {
    const index = this.#directory.bindings.findIndex(
      (binding) => binding.chat.platform === chat.platform && binding.chat.chatId === chat.chatId,
    );
    const binding = this.#directory.bindings[index];
    if (binding) return { agentId: binding.agent, pinnedBy: `bindings[${index}]` };
    const session = await this.#history.currentSession(chatSessionKey(chat));
    return { agentId: this.#chosenAgent(session), pinnedBy: null };
  }

  /** The current session's agent while it still exists; otherwise the default. */
  #chosenAgent(session: Session | null): string {
    const known = this.#directory.agents.some((agent) => agent.id === session?.agentId);
    return session && known ? session.agentId : this.#directory.defaultAgentId;
  }
}
