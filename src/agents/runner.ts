import type { UserError } from "../base/errors.js";
import { type Config, secretValues } from "../config/index.js";
import type {
  ChatSchedules,
  Clock,
  HistoryStore,
  ModelProvider,
  ReplyTarget,
  Tool,
  ToolResultBlock,
} from "../ports/index.js";
import { type ApprovalAsker, gateTools } from "./approval-gate.js";
import { agentPolicy } from "./approval-policy.js";
import { type BatchJob, createBatchProvider, hasBatches } from "./batch-provider.js";
import {
  type CompactionOptions,
  type CompactionResult,
  compactSession,
  contextSize,
  describeCompaction,
} from "./compaction.js";
import { contextWindowOf, formatContextUsage } from "./context-budget.js";
import { recordControlPlaneWrite } from "./control-plane-log.js";
import {
  type AgentDefinition,
  formatLocalTime,
  modelOf,
  renderSystemPrompt,
  resolveAgent,
} from "./definition.js";
import { runTurn, type TurnEvents, type TurnResult } from "./loop.js";
import { parseMcpSelector } from "./mcp/names.js";
import type { SkillDefinition } from "./skill-file.js";
import { type LoadedSkills, NO_SKILLS, skillListing, skillsOfAgent } from "./skills.js";
import {
  createToolbox,
  type MessagePoster,
  type SubagentDelegate,
  type SubagentOptions,
} from "./tools/index.js";

/** What {@link AgentRunner} is built from. */
export interface AgentRunnerOptions {
  workspace: string;
  config: Config;
  agents: Map<string, AgentDefinition>;
  /**
   * Agents whose AGENT.md is broken, by id: their turns fail with the error, and the
   * built-in default never stands in for them. (Default: none)
   */
  brokenAgents?: ReadonlyMap<string, UserError>;
  /**
   * The workspace's skills as they are now (the catalog's, which a reload replaces);
   * each turn lists its agent's in the system prompt and loads them with `skill`.
   * (Default: none)
   */
  skills?: () => LoadedSkills;
  history: HistoryStore;
  provider: ModelProvider;
  clock: Clock;
  /**
   * Where `post_message` posts during a turn: the job's chat through the outbox (the
   * server), the terminal (`picklebot chat`), or nowhere (undefined: the tool says so).
   */
  postMessage: (request: RunRequest) => MessagePoster | undefined;
  /**
   * The schedules `schedule` works on during a turn: the chat's, in the server; none
   * (undefined: the tool says so) elsewhere. (Default: none)
   */
  schedules?: (request: RunRequest) => ChatSchedules | undefined;
  /**
   * How `subagent` runs a task: as a child job through the queue (the server), or in
   * place (`picklebot chat`). (Default: the tool says it cannot)
   */
  delegate?: SubagentDelegate;
  /**
   * Who is asked about a call the agent's approval policy marks `ask`: the owner in the
   * job's chat (the server) or at the terminal (`picklebot chat`). (Default: nobody; such
   * a call is refused)
   */
  approvals?: (request: RunRequest) => ApprovalAsker | undefined;
  /**
   * The check before each model call of a turn: its budgets (docs/guides/cost.md,
   * "Budgets"). (Default: none)
   */
  budget?: (request: RunRequest) => (() => Promise<void>) | undefined;
  /**
   * Where the tools of an agent's `mcp:` entries come from (picklebot.yaml
   * `mcp_servers`). (Default: none; such entries give no tools)
   */
  mcp?: McpToolSource;
}

/** The `schedules` option of a turn's toolbox: given only when there are some. */
function schedulesOf(schedules: ChatSchedules | undefined): { schedules?: ChatSchedules } {
  return schedules === undefined ? {} : { schedules };
}

/** True for a tool-list entry of a built-in tool, false for an `mcp:` entry. */
function isBuiltInTool(entry: string): boolean {
  return parseMcpSelector(entry) === null;
}

/** The tools an agent's `mcp:` entries name, from the workspace's MCP servers. */
export interface McpToolSource {
  toolsFor(entries: readonly string[]): Promise<Tool[]>;
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
  /** Results of calls that finished before the job parked (`Job.toolResults`). */
  finishedResults?: readonly ToolResultBlock[];
  /**
   * The job sends its model calls through the batch API (a `batch: true` cron); normal
   * calls when the provider has none. (Default: normal calls)
   */
  batch?: BatchJob;
}

/**
 * Runs turns of any agent: resolves the agent, renders its prompt, builds its tools and
 * hands everything to the agent loop. Shared by `picklebot chat` and the AgentWorker.
 */
export class AgentRunner {
  readonly #options: AgentRunnerOptions;
  /** Windows the API named in "prompt is too long" refusals, by model: smaller than the table's. */
  readonly #learnedWindows = new Map<string, number>();

  constructor(options: AgentRunnerOptions) {
    this.#options = options;
  }

  /**
   * The agent with this id (the built-in default for `default_agent` when `agents/` has
   * none); throws UserError for an unknown or broken agent.
   */
  agent(agentId: string): AgentDefinition {
    const { agents, config, brokenAgents } = this.#options;
    return resolveAgent(agents, agentId, config.default_agent, brokenAgents);
  }

  /**
   * Compacts the session (see compaction.ts) when its next turn would pass
   * COMPACT_BEFORE of the agent's window, or whenever `force` is set; null when it did not.
   */
  compact(
    request: Pick<RunRequest, "agentId" | "sessionId" | "signal" | "jobId">,
    options: { force?: boolean } = {},
  ): Promise<CompactionResult | null> {
    return compactSession(request.sessionId, this.#compaction(request), options);
  }

  /**
   * `/compact`: compacts the session now, whatever its size; with what it did in one
   * sentence for the person who asked (the chats and the terminal say the same).
   */
  async compactNow(
    request: Pick<RunRequest, "agentId" | "sessionId" | "signal" | "jobId">,
  ): Promise<{ compacted: CompactionResult | null; report: string }> {
    const compacted = await this.compact(request, { force: true });
    if (compacted) return { compacted, report: `Compacted: ${describeCompaction(compacted)}.` };
    const usage = await this.contextUsage(request.agentId, request.sessionId);
    return { compacted, report: `Nothing to compact yet; ${formatContextUsage(usage)}.` };
  }

  /**
   * The session's size (estimated tokens of its next request) against its agent's window;
   * an agent this workspace does not have (another server's, in a cluster) counts with the
   * default model's.
   */
  async contextUsage(
    agentId: string,
    sessionId: string,
  ): Promise<{ tokens: number; window: number }> {
    const { history, config, agents } = this.#options;
    const tokens = await contextSize(history, sessionId, config.history.max_messages);
    const model = modelOf(agents.get(agentId), config);
    return { tokens, window: this.#windowOf(model) };
  }

  #compaction(request: Pick<RunRequest, "agentId" | "signal" | "jobId">): CompactionOptions {
    const { history, provider, config } = this.#options;
    const agent = this.agent(request.agentId);
    return {
      history,
      provider,
      model: modelOf(agent, config),
      contextWindow: this.#contextWindow(agent),
      maxTokens: agent.maxTokens ?? config.llm.max_tokens,
      maxMessages: config.history.max_messages,
      signal: request.signal,
      ...(request.jobId === undefined ? {} : { jobId: request.jobId }),
    };
  }

  #contextWindow(agent: AgentDefinition): number {
    return this.#windowOf(modelOf(agent, this.#options.config));
  }

  /** The window of `model`: the table's (or `llm.context_window`), or a smaller one learned. */
  #windowOf(model: string): number {
    const known = contextWindowOf(model, this.#options.config.llm.context_window);
    return Math.min(known, this.#learnedWindows.get(model) ?? known);
  }

  /**
   * What the agent's `subagent` tool may call: its `subagents` list, or every other agent
   * (the built-in default included); undefined when nothing can run a subagent.
   */
  #subagents(agent: AgentDefinition): SubagentOptions | undefined {
    const { delegate, agents, config } = this.#options;
    if (!delegate || !agent.tools.includes("subagent")) return undefined;
    const ids = agent.subagents ?? [
      ...new Set([config.default_agent, ...agents.keys()].filter((id) => id !== agent.id)),
    ];
    const callable = new Map<string, string>();
    for (const id of ids) {
      if (this.#options.brokenAgents?.has(id)) continue;
      const known = agents.get(id) ?? (id === config.default_agent ? this.agent(id) : undefined);
      if (known) callable.set(id, known.description);
    }
    return { delegate, callable, maxDepth: config.workers.subagent_max_depth };
  }

  /** The agent's skills; none when skills are off for it (`skills: []`) or the workspace has none. */
  #skillsOf(agent: AgentDefinition): SkillDefinition[] {
    return skillsOfAgent(this.#options.skills?.() ?? NO_SKILLS, agent).skills;
  }

  /** The provider of a turn: through the batch API for a batch job, when there is one. */
  #providerFor(request: RunRequest): ModelProvider {
    const { provider, config, clock } = this.#options;
    if (!request.batch || !hasBatches(provider)) return provider;
    const maxSteps = config.llm.batch_max_steps;
    return createBatchProvider({ provider, job: request.batch, maxSteps, clock });
  }

  /** Runs or resumes the turn at the end of the session. */
  async run(request: RunRequest): Promise<TurnResult> {
    const { workspace, config, history, clock } = this.#options;
    const agent = this.agent(request.agentId);
    const mcpTools = (await this.#options.mcp?.toolsFor(agent.tools)) ?? [];
    const now = new Date(clock.now());
    const skills = this.#skillsOf(agent);
    const listing = skillListing(skills, workspace, config.skills.max_listing_chars);
    return runTurn({
      sessionId: request.sessionId,
      history,
      provider: this.#providerFor(request),
      system:
        renderSystemPrompt(agent, { workspace, now, timezone: config.timezone }) + listing.text,
      currentTime: formatLocalTime(now, config.timezone),
      model: modelOf(agent, config),
      maxTokens: agent.maxTokens ?? config.llm.max_tokens,
      tools: gateTools(
        createToolbox(
          skills.length > 0
            ? [...agent.tools.filter(isBuiltInTool), "skill"]
            : agent.tools.filter(isBuiltInTool),
          {
            bashSandbox: {
              kind: config.tools.bash.sandbox,
              network: agent.bashNetwork ?? config.tools.bash.network,
              historyPath: config.history.path,
            },
            fetchPrivateAddresses: config.tools.web_fetch.allow_private_addresses,
            ...(agent.webFetch ? { fetchAllowDomains: agent.webFetch.allowDomains } : {}),
            postMessage: this.#options.postMessage(request),
            ...schedulesOf(this.#options.schedules?.(request)),
            subagents: this.#subagents(agent),
            skills,
          },
        ).concat(mcpTools),
        agentPolicy(config.approvals.policy, agent.approvals),
        this.#options.approvals?.(request),
        (write) => recordControlPlaneWrite(config.history.path, { at: clock.now(), ...write }),
      ),
      toolContext: {
        workspace,
        signal: request.signal,
        agentId: agent.id,
        sessionKey: request.sessionKey,
        historyPath: config.history.path,
        ...(request.jobId === undefined ? {} : { jobId: request.jobId }),
      },
      finishedResults: request.finishedResults,
      beforeModelCall: this.#options.budget?.(request),
      secrets: secretValues(config),
      maxMessages: config.history.max_messages,
      contextWindow: this.#contextWindow(agent),
      onSmallerWindow: (tokens) => this.#learnedWindows.set(modelOf(agent, config), tokens),
      events: request.events,
    });
  }
}
