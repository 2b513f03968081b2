import type { UserError } from "../base/errors.js";
import {
  type Config,
  DEFAULT_MODEL_ENTRY,
  type ModelEntry,
  modelChain,
  modelEntrySection,
  secretValues,
} from "../config/index.js";
import type {
  ChatSchedules,
  Clock,
  HistoryStore,
  JobSender,
  MediaReader,
  MemoryStore,
  ModelProvider,
  RecallStore,
  ReplyTarget,
  Tool,
  ToolResultBlock,
} from "../ports/index.js";
import { type ApprovalAsker, gateTools } from "./approval-gate.js";
import { agentPolicy, decide } from "./approval-policy.js";
import { type BatchJob, createBatchProvider, hasBatches } from "./batch-provider.js";
import {
  type CompactionOptions,
  type CompactionResult,
  compactSession,
  contextSize,
  describeCompaction,
  type MemorySaveOptions,
} from "./compaction.js";
import { contextWindowOf, formatContextUsage, hasKnownContextWindow } from "./context-budget.js";
import { recordControlPlaneWrite } from "./control-plane-log.js";
import {
  type AgentDefinition,
  formatLocalDate,
  formatLocalTime,
  renderSystemPrompt,
  resolveAgent,
} from "./definition.js";
import { runTurn, type TurnEvents, type TurnResult } from "./loop.js";
import { parseMcpSelector } from "./mcp/names.js";
import { type RunMemory, runMemoryOf } from "./memory/conversation.js";
import { currentMemory, sessionSnapshot } from "./memory/prompt.js";
import { chainProvider, fallbackNotice, ModelCooldowns } from "./model-chain.js";
import { createModelProvider } from "./providers/index.js";
import type { SkillDefinition } from "./skill-file.js";
import { type LoadedSkills, NO_SKILLS, skillListing, skillsOfAgent } from "./skills.js";
import {
  createToolbox,
  type FileSender,
  type MessagePoster,
  type SubagentDelegate,
  type SubagentOptions,
  type ToolboxOptions,
  type TurnSearch,
  turnSearchOf,
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
  /** The default entry's provider (`llm:`); other named models get theirs from the registry. */
  provider: ModelProvider;
  /**
   * Reads the files people sent, for the providers of the other named models. (Default:
   * none; their requests holding an image or a PDF fail, saying so)
   */
  readMedia?: MediaReader;
  clock: Clock;
  /**
   * Where `post_message` posts during a turn: the job's chat through the outbox (the
   * server), the terminal (`picklebot chat`), or nowhere (undefined: the tool says so).
   */
  postMessage: (request: RunRequest) => MessagePoster | undefined;
  /**
   * Where `send_file` sends during a turn: the job's chat through the outbox (the server),
   * or nowhere (undefined: the tool says so). (Default: nowhere)
   */
  sendFile?: (request: RunRequest) => FileSender | undefined;
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
  /**
   * The agents' memory and the sessions' snapshots (the storage's). (Default: none;
   * turns run without memory)
   */
  memoryStores?: { memory: MemoryStore; recall: RecallStore };
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
  /**
   * Who sent the message the turn answers (a chat job's `sender`): whose memory it
   * reads and writes. (Default: the owner for the terminal and the dashboard, else nobody)
   */
  sender?: JobSender | null;
  /** Results of calls that finished before the job parked (`Job.toolResults`). */
  finishedResults?: readonly ToolResultBlock[];
  /**
   * The named model (or model id) the turn uses instead of its agent's and its session's
   * (`/model`). (Default: the session's, else the agent's)
   */
  model?: string;
  /**
   * The job sends its model calls through the batch API (a `batch: true` cron); normal
   * calls when the provider has none. (Default: normal calls)
   */
  batch?: BatchJob;
}

/**
 * A session to compact: whose, and who the conversation is with (whose memory the save
 * before a summary writes). Without a session key, the session's own.
 */
export type CompactRequest = Pick<RunRequest, "agentId" | "sessionId" | "signal" | "jobId"> &
  Partial<Pick<RunRequest, "sessionKey" | "sender" | "replyTo">>;

/**
 * Runs turns of any agent: resolves the agent, renders its prompt, builds its tools and
 * hands everything to the agent loop. Shared by `picklebot chat` and the AgentWorker.
 */
/** The memory tools of a run, and what they are built with. */
interface RunMemoryTools {
  names: string[];
  options: Pick<ToolboxOptions, "memory" | "recall">;
}

export class AgentRunner {
  readonly #options: AgentRunnerOptions;
  /** Windows the API named in "prompt is too long" refusals, by model: smaller than the table's. */
  readonly #learnedWindows = new Map<string, number>();
  /** Windows the provider reported for models the table does not know, by model. */
  readonly #providerWindows = new Map<string, number>();
  /** The providers of named models other than the default, made on first use. */
  readonly #providers = new Map<string, ModelProvider>();
  readonly #cooldowns: ModelCooldowns;

  constructor(options: AgentRunnerOptions) {
    this.#options = options;
    this.#cooldowns = new ModelCooldowns(
      options.clock,
      options.config.llm.fallback_cooldown_s * 1000,
    );
  }

  /**
   * The named models a turn of `agent` calls, in order: the request's model (a cron's, a
   * chat's) or the agent's, then the agent's fallbacks (else that entry's own).
   */
  modelChain(agent: Pick<AgentDefinition, "model" | "fallbacks">, model?: string): ModelEntry[] {
    return modelChain(this.#options.config, {
      model: model ?? agent.model,
      fallbacks: agent.fallbacks,
    });
  }

  /**
   * The named models a conversation of `agentId` calls, in order, with `model` (its
   * session's `/model`, null for none): what `/model` and `/status` show.
   */
  modelsShown(agentId: string, model: string | null): Array<{ name: string; model: string }> {
    const agent = this.#options.agents.get(agentId) ?? {};
    return this.modelChain(agent, model ?? undefined).map((entry) => ({
      name: entry.name,
      model: entry.llm.model,
    }));
  }

  /** The model a turn names: the request's, else its session's `/model` choice. */
  async #chosenModel(
    request: Pick<RunRequest, "model" | "sessionId">,
  ): Promise<string | undefined> {
    if (request.model !== undefined) return request.model;
    return (await this.#options.history.getSession(request.sessionId))?.model ?? undefined;
  }

  /** The provider of a named model: the default entry's is the one the runner was given. */
  #providerOf(entry: ModelEntry): ModelProvider {
    if (entry.name === DEFAULT_MODEL_ENTRY) return this.#options.provider;
    let provider = this.#providers.get(entry.name);
    if (!provider) {
      const section = modelEntrySection(entry.name);
      provider = createModelProvider(entry.llm, this.#options.readMedia, section);
      this.#providers.set(entry.name, provider);
    }
    return provider;
  }

  /** The head of the agent's chain: the model its turns call first, with its settings. */
  #head(agent: AgentDefinition, model?: string): { entry: ModelEntry; maxTokens: number } {
    const [entry] = this.modelChain(agent, model);
    if (!entry) throw new RangeError("a model chain has at least its head");
    return { entry, maxTokens: agent.maxTokens ?? entry.llm.max_tokens };
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
  async compact(
    request: CompactRequest,
    options: { force?: boolean } = {},
  ): Promise<CompactionResult | null> {
    await this.#lookUpWindow(this.#head(this.agent(request.agentId)).entry, request.signal);
    const compaction = {
      ...this.#compaction(request),
      memorySave: () => this.#memorySave(request),
    };
    const compacted = await compactSession(request.sessionId, compaction, options);
    // The summary starts the session afresh: its next turn takes a new memory snapshot.
    if (compacted) await this.#options.memoryStores?.recall.retake(request.sessionId);
    return compacted;
  }

  /**
   * `/compact`: compacts the session now, whatever its size; with what it did in one
   * sentence for the person who asked (the chats and the terminal say the same).
   */
  async compactNow(
    request: CompactRequest,
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
    const model = await this.#chosenModel({ sessionId });
    const [head] = this.modelChain(agents.get(agentId) ?? {}, model);
    if (!head) return { tokens, window: 0 };
    await this.#lookUpWindow(head);
    return { tokens, window: this.#windowOf(head) };
  }

  #compaction(request: Pick<RunRequest, "agentId" | "signal" | "jobId">): CompactionOptions {
    const { history, config } = this.#options;
    const { entry, maxTokens } = this.#head(this.agent(request.agentId));
    return {
      history,
      provider: this.#providerOf(entry),
      model: entry.llm.model,
      contextWindow: this.#windowOf(entry),
      maxTokens,
      maxMessages: config.history.max_messages,
      tailTokens: config.history.keep_verbatim_tokens,
      signal: request.signal,
      ...(request.jobId === undefined ? {} : { jobId: request.jobId }),
    };
  }

  /**
   * The memory save before a summary (see compaction.ts): the run's `memory` tool, when
   * the session's run may write memory and the agent's policy allows `memory` without
   * asking (nobody is asked during a compaction); nothing otherwise.
   */
  async #memorySave(request: CompactRequest): Promise<MemorySaveOptions | null> {
    const { memoryStores: stores, config, workspace, history } = this.#options;
    if (!stores) return null;
    const agent = this.agent(request.agentId);
    const policy = agentPolicy(config.approvals.policy, agent.approvals);
    if (decide(policy, "memory", {}).action !== "allow") return null;
    const sessionKey =
      request.sessionKey ?? (await history.getSession(request.sessionId))?.key ?? null;
    if (sessionKey === null) return null;
    const conversation = { ...request, sessionKey };
    const memory = await this.#memoryOf(agent, conversation);
    const tool = this.#memoryTools(memory, conversation).options.memory;
    const [memoryTool] = tool ? createToolbox(["memory"], { memory: tool }) : [];
    if (!memory || !memoryTool) return null;
    return {
      tool: memoryTool,
      memory: await currentMemory(memory, stores.memory),
      context: {
        workspace,
        signal: request.signal,
        agentId: agent.id,
        sessionKey,
        historyPath: config.history.path,
        ...(request.jobId === undefined ? {} : { jobId: request.jobId }),
      },
    };
  }

  /**
   * The window of an entry's model: its `context_window`, else the table's, else the
   * provider's (its model list's or its default; see {@link #lookUpWindow}), else the
   * table's default; or a smaller one learned from a refusal.
   */
  #windowOf(entry: ModelEntry): number {
    const { model, context_window } = entry.llm;
    const listed = this.#providerWindows.get(model);
    const known = contextWindowOf(model, context_window, listed);
    return Math.min(known, this.#learnedWindows.get(model) ?? known);
  }

  /**
   * Asks the entry's provider, once per model, for the window of a model that neither its
   * `context_window` nor the table knows (an OpenAI-compatible endpoint's model list).
   */
  async #lookUpWindow(entry: ModelEntry, signal?: AbortSignal): Promise<void> {
    const { model, context_window } = entry.llm;
    const provider = this.#providerOf(entry);
    if (!provider.contextWindow || this.#providerWindows.has(model)) return;
    if (context_window !== undefined || hasKnownContextWindow(model)) return;
    const window = await provider.contextWindow(model, signal);
    if (!signal?.aborted) this.#providerWindows.set(model, window);
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

  /**
   * The provider of a turn: its chain of named models, or through the batch API of its
   * first for a batch job, when that has one (a batch call has no fallback).
   */
  #providerFor(request: RunRequest, chain: readonly ModelEntry[]): ModelProvider {
    const { config, clock } = this.#options;
    const links = chain.map((entry) => ({
      name: entry.name,
      provider: this.#providerOf(entry),
      model: entry.llm.model,
      maxTokens: entry.llm.max_tokens,
    }));
    const provider = links[0]?.provider;
    if (!request.batch || !provider || !hasBatches(provider))
      return chainProvider(links, this.#cooldowns);
    const maxSteps = config.llm.batch_max_steps;
    return createBatchProvider({ provider, job: request.batch, maxSteps, clock });
  }

  /**
   * The built-in tools of the agent's turn (the `skill` tool when it has skills), before
   * the approval gate; without `web_search` when the model API searches itself.
   */
  #toolsOf(
    agent: AgentDefinition,
    request: RunRequest,
    skills: readonly SkillDefinition[],
    search: TurnSearch,
    memoryTools: RunMemoryTools,
  ): Tool[] {
    const { config } = this.#options;
    const names = agent.tools.filter(
      (name) => isBuiltInTool(name) && !(name === "web_search" && search.tool === null),
    );
    const withSkills = skills.length > 0 ? [...names, "skill"] : names;
    return createToolbox([...withSkills, ...memoryTools.names], {
      ...memoryTools.options,
      bashSandbox: {
        kind: config.tools.bash.sandbox,
        network: agent.bashNetwork ?? config.tools.bash.network,
        historyPath: config.history.path,
      },
      fetchPrivateAddresses: config.tools.web_fetch.allow_private_addresses,
      ...(agent.webFetch ? { fetchAllowDomains: agent.webFetch.allowDomains } : {}),
      ...(search.tool ? { webSearch: search.tool } : {}),
      postMessage: this.#options.postMessage(request),
      sendFile: this.#options.sendFile?.(request),
      ...schedulesOf(this.#options.schedules?.(request)),
      subagents: this.#subagents(agent),
      skills,
    });
  }

  /** The run's memory (whose it reads and writes), or null when it runs without. */
  async #memoryOf(
    agent: AgentDefinition,
    request: Pick<RunRequest, "sessionKey" | "sender" | "replyTo">,
  ): Promise<RunMemory | null> {
    const stores = this.#options.memoryStores;
    if (!stores) return null;
    return runMemoryOf(
      {
        agent,
        sessionKey: request.sessionKey,
        ...(request.sender === undefined ? {} : { sender: request.sender }),
        ...(request.replyTo === undefined ? {} : { replyTo: request.replyTo }),
      },
      stores,
    );
  }

  /** The memory section of the session's system prompt: its snapshot (see memory/prompt.ts). */
  async #memorySection(memory: RunMemory | null, request: RunRequest, now: Date): Promise<string> {
    const stores = this.#options.memoryStores;
    if (!memory || !stores) return "";
    const { sessionId, sessionKey } = request;
    const timezone = this.#options.config.timezone;
    const snapshot = await sessionSnapshot(
      memory,
      { sessionId, sessionKey, now, timezone },
      stores,
    );
    return snapshot === "" ? "" : `\n\n${snapshot}`;
  }

  /** The memory tools of a run and what they are built with (none without memory). */
  #memoryTools(memory: RunMemory | null, request: Pick<RunRequest, "sessionId">): RunMemoryTools {
    const stores = this.#options.memoryStores;
    const { config, history, clock } = this.#options;
    const names: string[] = [];
    const options: RunMemoryTools["options"] = {};
    if (!memory || !stores) return { names, options };
    if (memory.writable) {
      names.push("memory");
      const secrets = secretValues(config);
      options.memory = {
        store: stores.memory,
        run: memory,
        sessionId: request.sessionId,
        clock,
        secrets,
      };
    }
    if (memory.recall) {
      names.push("session_search", "session_read");
      const formatDate = (at: number) => formatLocalDate(new Date(at), config.timezone);
      options.recall = { recall: stores.recall, history, scope: memory.recall, formatDate };
    }
    return { names, options };
  }

  /**
   * Runs or resumes the turn at the end of the session; when a fallback answered, the
   * reply starts with one line saying which and why.
   */
  async run(request: RunRequest): Promise<TurnResult> {
    const result = await this.#run(request);
    if (!result.fallback) return result;
    const notice = fallbackNotice(result.fallback, this.#options.config.llm.fallback_cooldown_s);
    return { ...result, notice, text: `${notice}\n\n${result.text}` };
  }

  async #run(request: RunRequest): Promise<TurnResult> {
    const { workspace, config, history, clock } = this.#options;
    const agent = this.agent(request.agentId);
    const model = await this.#chosenModel(request);
    const chain = this.modelChain(agent, model);
    const { entry, maxTokens } = this.#head(agent, model);
    await this.#lookUpWindow(entry, request.signal);
    const mcpTools = (await this.#options.mcp?.toolsFor(agent.tools)) ?? [];
    const now = new Date(clock.now());
    const skills = this.#skillsOf(agent);
    const listing = skillListing(skills, workspace, config.skills.max_listing_chars);
    const policy = agentPolicy(config.approvals.policy, agent.approvals);
    const search = turnSearchOf(config.tools.web_search, {
      // The turn's model, not llm:'s: another provider's adapter sends no server tool.
      anthropicModel: entry.llm.provider === "anthropic",
      policy: decide(policy, "web_search", {}).action,
    });
    const memory = await this.#memoryOf(agent, request);
    const memoryTools = this.#memoryTools(memory, request);
    return runTurn({
      sessionId: request.sessionId,
      history,
      provider: this.#providerFor(request, chain),
      system:
        renderSystemPrompt(agent, { workspace, now, timezone: config.timezone }) +
        listing.text +
        (await this.#memorySection(memory, request, now)),
      currentTime: formatLocalTime(now, config.timezone),
      model: entry.llm.model,
      maxTokens,
      tools: gateTools(
        this.#toolsOf(agent, request, skills, search, memoryTools).concat(mcpTools),
        policy,
        this.#options.approvals?.(request),
        (write) => recordControlPlaneWrite(config.history.path, { at: clock.now(), ...write }),
      ),
      serverTools: search.serverTools,
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
      contextWindow: this.#windowOf(entry),
      onSmallerWindow: (tokens) => this.#learnedWindows.set(entry.llm.model, tokens),
      events: request.events,
    });
  }
}
