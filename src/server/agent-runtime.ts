/**
 * The agent runtime as the server composes it, every piece built up front: the approval
 * desk, the budget guard, the agents' runner with its subagent delegate, the session
 * stopper (`/stop`, across the cluster in PostgreSQL mode) and the {@link AgentWorker} that
 * claims jobs and drives their turns. The supervisor starts the worker; the chat wing's
 * receiver reaches the rest through {@link AgentRuntime.chatControls}.
 */

import { ApprovalDesk } from "../agents/approval-desk.js";
import { BudgetGuard } from "../agents/budget.js";
import type { AgentCatalog } from "../agents/catalog.js";
import { contextWindowOf, toolResultMaxChars } from "../agents/context-budget.js";
import type { AgentDefinition } from "../agents/definition.js";
import type { McpServers } from "../agents/mcp/servers.js";
import { MediaIntake } from "../agents/media/intake.js";
import { MediaStore } from "../agents/media/store.js";
import { AgentRunner } from "../agents/runner.js";
import { chatAddressOf } from "../base/chat-address.js";
import { PicklebotError, type UserError } from "../base/errors.js";
import type { Logger } from "../base/log.js";
import type { ChatSenders } from "../chat/senders.js";
import type { ChatAgentControls } from "../chat/wing.js";
import { allowedUserIds, type Config } from "../config/index.js";
import { chatSchedulesOfTurn } from "../cron/chat-schedules.js";
import type { FrontendRegistry } from "../frontends/registry.js";
import type {
  Clock,
  EventSink,
  JobAdmin,
  JobQueue,
  MediaReader,
  ModelProvider,
  ReplyTarget,
  SessionStopper,
  Storage,
} from "../ports/index.js";
import { AgentWorker } from "./agent-worker.js";
import type { ServerMetrics } from "./metrics.js";
import { queueSubagents } from "./subagents.js";

/** A workspace's agents and model, as the server and its agent runtime are given them. */
export interface WorkspaceAgents {
  workspace: string;
  config: Config;
  agents: Map<string, AgentDefinition>;
  /** Agents whose AGENT.md is broken: their jobs fail with the error. (Default: none) */
  brokenAgents?: ReadonlyMap<string, UserError>;
  /**
   * The agents and skills, reloaded while the server runs when their files change (its
   * maps are `agents` and `brokenAgents`). (Default: none; no skills, no reload)
   */
  catalog?: AgentCatalog;
  provider: ModelProvider;
  /** Reads the files people sent, for the providers of named models. (Default: none) */
  readMedia?: MediaReader;
}

/** Options of {@link AgentRuntime}. */
export interface AgentRuntimeOptions extends WorkspaceAgents {
  storage: Storage;
  queue: JobQueue & JobAdmin;
  /** Where the agent worker opens each job's reply. */
  frontends: FrontendRegistry;
  /** The chat wing's sending half: `post_message`, approval questions, budget notices. */
  senders: ChatSenders;
  /** The MCP servers of picklebot.yaml. (Default: none) */
  mcp?: McpServers;
  /** This process's instance id: the `lockedBy` of the jobs it claims. */
  workerId: string;
  /**
   * PostgreSQL mode: the agents whose jobs this process claims (read at each claim).
   * (Default: every job)
   */
  claimedAgents?: string[];
  clock: Clock;
  logger: Logger;
  metrics: ServerMetrics;
  events: EventSink;
}

/** The agents' side of one server process. */
export class AgentRuntime {
  /** Asks the owner about tool calls and takes the answers. */
  readonly desk: ApprovalDesk;
  readonly runner: AgentRunner;
  /** Aborts a session's running job wherever it runs (`/stop`, a stopped job's subagents). */
  readonly stopper: SessionStopper;
  /** Claims jobs and drives their turns; the supervisor runs it. */
  readonly worker: AgentWorker;
  readonly #options: AgentRuntimeOptions;
  /** Notices already logged (for jobs without a chat), by key. */
  readonly #logged = new Set<string>();

  constructor(options: AgentRuntimeOptions) {
    this.#options = options;
    this.desk = this.#approvalDesk();
    this.runner = this.#runner(this.#budgetGuard());
    this.worker = this.#agentWorker();
    this.stopper = this.#sessionStopper();
  }

  /** What the chat receiver asks of the agents: `/stop`, button answers, `/status`. */
  chatControls(): ChatAgentControls {
    return {
      stopSession: (key) => this.stopper.stop(key),
      answerChoice: (press, platform) => this.desk.answerPress(press, platform),
      contextUsage: (agentId, sessionId) => this.runner.contextUsage(agentId, sessionId),
      chainOf: (agentId, model) => this.runner.modelsShown(agentId, model),
    };
  }

  #approvalDesk(): ApprovalDesk {
    const { config, storage, queue, senders, clock, logger } = this.#options;
    return new ApprovalDesk({
      store: storage.approvals,
      queue,
      platform: (kind) => senders.platform(kind),
      isOwner: async (platform, userId) =>
        allowedUserIds(config, platform).has(userId) ||
        (await storage.pairing.isApproved(platform, userId)),
      timeoutMs: config.approvals.timeout_s * 1000,
      clock,
      logger: logger.child({ worker: "approvals" }),
    });
  }

  #budgetGuard(): BudgetGuard {
    const { config, agents, storage, clock } = this.#options;
    return new BudgetGuard({
      ledger: storage.usage,
      config,
      agents,
      clock,
      notify: (target, text, key) => this.#notice(target, text, key),
    });
  }

  #runner(budget: BudgetGuard): AgentRunner {
    const { workspace, config, agents, brokenAgents, catalog, provider, storage, queue } =
      this.#options;
    const { readMedia } = this.#options;
    const { senders, mcp, clock } = this.#options;
    return new AgentRunner({
      workspace,
      config,
      agents,
      ...(brokenAgents === undefined ? {} : { brokenAgents }),
      ...(catalog === undefined ? {} : { skills: () => catalog.skills }),
      history: storage.history,
      provider,
      ...(readMedia === undefined ? {} : { readMedia }),
      clock,
      postMessage: (request) => senders.poster(request),
      sendFile: (request) => senders.fileSender(request),
      schedules: (request) =>
        chatSchedulesOfTurn(request, { store: storage.schedules, clock, config }),
      delegate: queueSubagents({
        queue,
        history: storage.history,
        clock,
        timeoutMs: config.workers.subagent_timeout_s * 1000,
        stopRunning: (key) => this.stopper.stop(key),
      }),
      approvals: (request) => this.desk.asker(request),
      budget: (request, models) => budget.checker(request, models),
      memoryStores: storage,
      ...(mcp ? { mcp } : {}),
    });
  }

  #agentWorker(): AgentWorker {
    const { config, storage, queue, frontends, workerId, claimedAgents } = this.#options;
    const { clock, logger, metrics, events } = this.#options;
    return new AgentWorker({
      workerId,
      agentIds: claimedAgents,
      queue,
      history: storage.history,
      checkpoint: storage.checkpoint,
      failJob: storage.failJob,
      outageBudgetMs: config.workers.outage_budget_s * 1000,
      runner: this.runner,
      frontends,
      concurrency: config.workers.agent_concurrency,
      jobTimeoutMs: config.workers.job_timeout_s * 1000,
      clock,
      logger: logger.child({ worker: "agent" }),
      metrics,
      stopRunning: (key) => this.stopper.stop(key),
      waitSettled: (wait) => this.desk.isSettled(wait),
      onBudgetExceeded: config.budget.on_exceeded,
      events,
      media: this.#mediaIntake(),
    });
  }

  /** Reads the files people send in chats, from the platforms this process can send to. */
  #mediaIntake(): MediaIntake {
    const { config, senders, logger } = this.#options;
    return new MediaIntake({
      store: new MediaStore(config.history.path),
      download: async (kind, attachment, signal) => {
        const platform = senders.platform(kind);
        if (!platform)
          throw new PicklebotError(`${kind} is not enabled on this server`, { retryable: true });
        return platform.download(attachment, signal);
      },
      ...(config.speech_to_text ? { speech: config.speech_to_text } : {}),
      maxTextChars: toolResultMaxChars(
        contextWindowOf(config.llm.model, config.llm.context_window),
      ),
      logger: logger.child({ worker: "media" }),
    });
  }

  /** `/stop`: across the cluster in PostgreSQL mode, in this process otherwise. */
  #sessionStopper(): SessionStopper {
    const stopHere = (key: string) => this.worker.stopSession(key);
    const relay = this.#options.storage.cluster?.stops;
    if (!relay) return { stop: async (key) => stopHere(key) };
    const logger = this.#options.logger.child({ worker: "stops" });
    return relay.start(stopHere, (error) =>
      logger.warn({ error: error.message }, "the /stop listener hit an error; it listens on"),
    );
  }

  /**
   * A notice for the owner, once per key: into the target's chat through the outbox
   * (whose dedupe key makes it once), or, for a job without a chat, to the log once per
   * process.
   */
  async #notice(target: ReplyTarget | undefined, text: string, key: string): Promise<void> {
    const address = target ? chatAddressOf(target) : null;
    if (address) return this.#options.senders.submit(address.platform, address.chatId, text, key);
    if (this.#logged.has(key)) return;
    this.#logged.add(key);
    this.#options.logger.warn({ notice: key }, text);
  }
}
