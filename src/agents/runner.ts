import type { Config } from "../config/index.js";
import type { Clock, HistoryStore, ModelProvider, ReplyTarget, Tool } from "../ports/index.js";
import {
  type AgentDefinition,
  formatLocalTime,
  renderSystemPrompt,
  resolveAgent,
} from "./definition.js";
import { runTurn, type TurnEvents, type TurnResult } from "./loop.js";
import { createToolbox } from "./tools/index.js";

/** What {@link AgentRunner} is built from. */
export interface AgentRunnerOptions {
  workspace: string;
  config: Config;
  agents: Map<string, AgentDefinition>;
  history: HistoryStore;
  provider: ModelProvider;
  clock: Clock;
  /** Tools that need server parts (subagent, post_message), by name. (Default: none) */
  extraTools?: (agent: AgentDefinition, sessionKey: string, request: RunRequest) => Tool[];
}

/** One turn to run: whose, where, and who is watching. */
export interface RunRequest {
  agentId: string;
  sessionId: string;
  sessionKey: string;
  signal: AbortSignal;
  events?: TurnEvents;
  /** The job the turn belongs to, when a worker runs one. */
  jobId?: string;
  /** Where the job's reply goes (post_message posts there). */
  replyTo?: ReplyTarget;
}

/**
 * Runs turns of any agent: resolves the agent, renders its prompt, builds its tools and
 * hands everything to the agent loop. Shared by `picklebot chat` and the AgentWorker.
 */
export class AgentRunner {
  readonly #options: AgentRunnerOptions;

  constructor(options: AgentRunnerOptions) {
    this.#options = options;
  }

  /** The agent with this id (the built-in default for `default_agent`); throws UserError. */
  agent(agentId: string): AgentDefinition {
    return resolveAgent(this.#options.agents, agentId, this.#options.config.default_agent);
  }

  /** Runs or resumes the turn at the end of the session. */
  run(request: RunRequest): Promise<TurnResult> {
    const { workspace, config, history, provider, clock } = this.#options;
    const agent = this.agent(request.agentId);
    const extraTools = this.#options.extraTools?.(agent, request.sessionKey, request) ?? [];
    const now = new Date(clock.now());
    return runTurn({
      sessionId: request.sessionId,
      history,
      provider,
      system: renderSystemPrompt(agent, { workspace, now, timezone: config.timezone }),
      currentTime: formatLocalTime(now, config.timezone),
      model: agent.model ?? config.llm.model,
      maxTokens: agent.maxTokens ?? config.llm.max_tokens,
      tools: createToolbox(agent.tools, { extraTools }),
      toolContext: {
        workspace,
        signal: request.signal,
        agentId: agent.id,
        sessionKey: request.sessionKey,
      },
      maxMessages: config.history.max_messages,
      events: request.events,
    });
  }
}
