/**
 * Which agent a chat talks to, and `/agent`:
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
import type { ChatAddress } from "../base/chat-address.js";
import { chatSessionKey } from "../base/session-key.js";
import type { Config } from "../config/index.js";
import type { HistoryStore, Session } from "../ports/index.js";

/** What `/agent` shows of an agent. */
export interface AgentSummary {
  id: string;
  name: string;
  description: string;
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
      .map(({ id, name, description }) => ({ id, name, description }))
      .sort((a, b) => a.id.localeCompare(b.id)),
    bindings: config.bindings,
  };
}

/** A chat's agent, and where that comes from. */
export interface ChatAgent {
  agentId: string;
  /** Index in `bindings` of the entry that pins the chat, or null when none does. */
  binding: number | null;
}

/** Answers "which agent?" for chats, and switches them (`/agent NAME`). */
export class ChatAgents {
  readonly #directory: ChatAgentDirectory;
  readonly #history: HistoryStore;

  constructor(directory: ChatAgentDirectory, history: HistoryStore) {
    this.#directory = directory;
    this.#history = history;
  }

  /** The agent the chat's next message goes to. */
  async current(chat: ChatAddress): Promise<ChatAgent> {
    const binding = this.#bindingOf(chat);
    if (binding !== null) return { agentId: this.#bindingAt(binding).agent, binding };
    const session = await this.#history.currentSession(chatSessionKey(chat));
    return { agentId: this.#chosenAgent(session), binding: null };
  }

  /** `/agent`: every agent, the chat's current one marked. */
  async list(chat: ChatAddress): Promise<string> {
    const { agentId, binding } = await this.current(chat);
    const lines = this.#directory.agents.map(
      (agent) =>
        `${agent.id === agentId ? "▸" : "•"} ${agent.id}: ${agent.name}, ${agent.description}`,
    );
    const footer =
      binding === null
        ? "Switch with /agent NAME (starts a new conversation)."
        : `This chat is pinned to ${agentId} by ${bindingKey(binding)} in picklebot.yaml.`;
    return [`Agents (this chat: ${agentId}):`, ...lines, footer].join("\n");
  }

  /**
   * `/agent NAME`: starts a new session of the chat with that agent, unless the chat is
   * bound or the name is unknown. Returns the answer for the chat.
   */
  async switchTo(chat: ChatAddress, name: string): Promise<string> {
    const binding = this.#bindingOf(chat);
    if (binding !== null) {
      const pinned = this.#bindingAt(binding).agent;
      return `This chat is pinned to ${pinned} by ${bindingKey(binding)} in picklebot.yaml; edit that entry to change its agent.`;
    }
    const agent = this.#directory.agents.find(
      (candidate) => candidate.id.toLowerCase() === name.toLowerCase(),
    );
    if (!agent) {
      const ids = this.#directory.agents.map((candidate) => candidate.id).join(", ");
      return `There is no agent "${name}". Agents: ${ids}. Send /agent to see what each does.`;
    }
    const session = await this.#history.createSession({
      key: chatSessionKey(chat),
      agentId: agent.id,
    });
    return `Switched to ${agent.id} (${agent.name}), in a new conversation (${session.id}).`;
  }

  #bindingOf(chat: ChatAddress): number | null {
    const index = this.#directory.bindings.findIndex(
      (binding) => binding.chat.platform === chat.platform && binding.chat.chatId === chat.chatId,
    );
    return index < 0 ? null : index;
  }

  #bindingAt(index: number): ChatBinding {
    const binding = this.#directory.bindings[index];
    if (!binding) throw new RangeError(`no binding at ${index}`);
    return binding;
  }

  /** The current session's agent while it still exists; otherwise the default. */
  #chosenAgent(session: Session | null): string {
    const known = this.#directory.agents.some((agent) => agent.id === session?.agentId);
    return session && known ? session.agentId : this.#directory.defaultAgentId;
  }
}

/** `bindings[0]`: the key of an entry, as error messages name it. */
function bindingKey(index: number): string {
  return `bindings[${index}]`;
}
