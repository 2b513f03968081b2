/**
 * The picklebot server: composes storage, queue, frontends and workers for a workspace
 * and runs them under the supervisor.
 *
 *   start(): lock workspace (SQLite mode) ─► open storage ─► listen on HTTP
 *            ─► register this instance (PostgreSQL mode) ─► register the frontends, the
 *               chat ones included (ChatSenders: every process streams and delivers the
 *               replies of the chat jobs it runs) ─► start workers: the AgentWorker
 *               (recovers its running jobs), the queue depth gauges, and the
 *               LeaderWorker, which runs the leader-only workers (crons, chat receiving
 *               and outbox retries, cluster upkeep) while this process holds the lease
 *   stop():  stop workers (running jobs finish within job_timeout_s) ─► close the chat
 *            clients ─► deregister ─► close HTTP ─► close storage ─► release the lock
 *
 * In SQLite mode the process is alone with its storage and always the leader.
 */
import { hostname } from "node:os";
import { join } from "node:path";
import type { AgentCatalog } from "../agents/catalog.js";
import { type AgentDefinition, definedAgentIds } from "../agents/definition.js";
import { AgentRunner } from "../agents/runner.js";
import { describeBashSandbox } from "../agents/tools/index.js";
import { chatAddressOf } from "../base/chat-address.js";
import { systemClock } from "../base/clock.js";
import { toError, UserError } from "../base/errors.js";
import type { Logger } from "../base/log.js";
import { packageInfo } from "../base/package-info.js";
import { type Config, jobRetentionHours } from "../config/index.js";
import { LogFrontend } from "../frontends/log.js";
import { allowedUserIds, loadPlatformFactory, runnablePlatforms } from "../frontends/platforms.js";
import { FrontendRegistry } from "../frontends/registry.js";
import type {
  ChatPlatform,
  Clock,
  CronStateStore,
  InstanceInfo,
  JobAdmin,
  JobQueue,
  Leadership,
  ModelProvider,
  ReplyTarget,
  SessionStopper,
  Storage,
  Worker,
} from "../ports/index.js";
import { DATABASE_FILE, defaultInstanceId, openStorage } from "../storage/index.js";
import { AgentWorker, JOBS_RECOVERED } from "./agent-worker.js";
import { ApprovalDesk } from "./approvals.js";
import { BatchPoller } from "./batch-poller.js";
import { BudgetGuard } from "./budget.js";
import { type ChatAgentDirectory, chatAgentDirectory } from "./bus/chat-agents.js";
import { ChatSenders } from "./bus/senders.js";
import { MessageBusWorker } from "./bus/worker.js";
import { LeaderWorker, soleLeadership } from "./cluster/leader.js";
import { ClusterUpkeepWorker, Heartbeat } from "./cluster/upkeep.js";
import { CronWorker } from "./cron/worker.js";
import { WebReplies } from "./dashboard/web-replies.js";
import { DefinitionsWorker } from "./definitions-watch.js";
import { announcingEnqueues } from "./events/enqueued.js";
import { EventHub } from "./events/hub.js";
import { FileIdentityWatch } from "./file-identity.js";
import type { HttpEndpoint } from "./http.js";
import { type McpRuntime, startMcpRuntime } from "./mcp-reload.js";
import { ServerMetrics } from "./metrics.js";
import { QueueDepthWorker } from "./queue-depth.js";
import { RetentionWorker } from "./retention.js";
import { listenHttp } from "./server-http.js";
import { queueSubagents } from "./subagents.js";
import { Supervisor } from "./supervisor.js";
import { acquireWorkspaceLock, LOCK_FILE, type WorkspaceLock } from "./workspace-lock.js";

/** What a server is started with. */
export interface ServerOptions {
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
  logger: Logger;
  clock?: Clock;
}

const VERSION = packageInfo().version;

/** A running server. */
export class PicklebotServer {
  /** `host:port` of the HTTP endpoint, or null when it is disabled. */
  httpAddress: string | null = null;
  readonly metrics: ServerMetrics;
  /** The event stream of this process (`GET /events`, `picklebot events`). */
  readonly events: EventHub;
  readonly frontends = new FrontendRegistry();
  readonly #options: ServerOptions;
  readonly #clock: Clock;
  readonly #lock: WorkspaceLock | null;
  readonly #storage: Storage;
  readonly #queue: JobQueue & JobAdmin;
  readonly #supervisor: Supervisor;
  readonly #instance: InstanceInfo;
  /** The agents' runner, made with the agent worker (before any bus). */
  #runner: AgentRunner | null = null;
  /** Aborts a session's running job wherever it runs (`/stop`, a stopped job's subagents). */
  #stopper: SessionStopper | null = null;
  /** Asks the owner about tool calls; the chat bus hands it the button presses. */
  #desk: ApprovalDesk | null = null;
  #mcp: McpRuntime | null = null;
  /** Notices already logged (for jobs without a chat), by key. */
  readonly #logged = new Set<string>();
  #leader: LeaderWorker | null = null;
  #heartbeat: Heartbeat | null = null;
  #registered = false;
  #http: HttpEndpoint | null = null;
  /** Replies of silent jobs (web chats among them) as they are written, for the dashboard. */
  readonly #webReplies = new WebReplies();
  #chat: ChatSenders | null = null;
  /** The receiving bus of the current leadership term, if this process leads. */
  #bus: MessageBusWorker | null = null;
  /** SQLite mode: watches the database and lock files for being deleted or replaced. */
  #watch: FileIdentityWatch | null = null;
  /** Why the storage can no longer be trusted (its files vanished), once it happened. */
  #lostReason: string | null = null;
  #onLost: (error: UserError) => void = () => {};
  /**
   * Settles when the database or the lock file this process opened is deleted or replaced
   * (SQLite mode): the caller should exit with the error at once, without `stop()`, whose
   * drain would let running jobs write on into the lost file. From then on `/healthz`
   * answers 503 with the reason. Never settles in PostgreSQL mode.
   */
  readonly lost: Promise<UserError> = new Promise((resolve) => {
    this.#onLost = resolve;
  });

  private constructor(options: ServerOptions, lock: WorkspaceLock | null, storage: Storage) {
    this.#options = options;
    this.metrics = new ServerMetrics({ prices: options.config.llm.prices });
    this.#clock = options.clock ?? systemClock;
    this.#lock = lock;
    this.#storage = storage;
    this.#instance = instanceInfo(options, storage.cluster !== null);
    this.events = new EventHub({
      instance: storage.cluster ? this.#instance.id : "local",
      onDropped: (count) => this.metrics.eventsDropped.inc(count),
      forward: storage.cluster ? (event) => storage.cluster?.events.send(event) : undefined,
    });
    this.#queue = announcingEnqueues(storage.queue, this.events);
    this.#supervisor = new Supervisor({
      clock: this.#clock,
      logger: options.logger,
      metrics: this.metrics,
      events: this.events,
    });
  }

  /** Starts a server; throws UserError when the workspace is locked by another one. */
  static async start(options: ServerOptions): Promise<PicklebotServer> {
    const { config } = options;
    // Several processes share PostgreSQL storage; the single-server lock is SQLite's.
    const lock =
      config.queue.backend === "postgres" ? null : acquireWorkspaceLock(config.history.path);
    let storage: Storage;
    try {
      storage = await openStorage(config, options.clock ?? systemClock);
    } catch (error) {
      lock?.release();
      throw error;
    }
    const server = new PicklebotServer(options, lock, storage);
    try {
      await server.#start();
      return server;
    } catch (error) {
      await server.stop();
      throw error;
    }
  }

  /** This process's instance id (the `lockedBy` of the jobs it claims). */
  get instanceId(): string {
    return this.#instance.id;
  }

  /** True while this process runs the leader-only workers (always, in SQLite mode). */
  get isLeader(): boolean {
    return this.#leader?.isLeader ?? false;
  }

  /** Where the cron worker records fired occurrences. */
  get cronState(): CronStateStore {
    return this.#storage.cronState;
  }

  /** The job queue, for tools and frontends that enqueue. */
  get queue(): JobQueue & JobAdmin {
    return this.#queue;
  }

  async #start(): Promise<void> {
    this.#watchFiles();
    // First, so that a port already in use stops the start before any job is claimed.
    await this.#startHttp();
    await this.#joinCluster();
    this.frontends.register(new LogFrontend(this.#options.logger.child({ frontend: "console" })));
    this.frontends.register(this.#webReplies);
    // Before the agent worker, so that a job recovered at start-up finds its chat's frontend.
    const platforms = await this.#platformFactory();
    const chat = new ChatSenders({
      platforms: platforms?.() ?? [],
      outbox: this.#storage.outbox,
      frontends: this.frontends,
      holder: this.#instance.id,
      clock: this.#clock,
      logger: this.#options.logger.child({ worker: "chat" }),
      events: this.events,
    });
    this.#chat = chat;
    if (this.#lock) await this.#requeueOrphans();
    const { workspace, config, logger } = this.#options;
    this.#mcp = startMcpRuntime({ workspace, config, logger: logger.child({ worker: "mcp" }) });
    const agentWorker = this.#agentWorker(this.#instance.id, this.#clock, chat);
    const stopHere = (key: string) => agentWorker.stopSession(key);
    const stopper = this.#sessionStopper(stopHere);
    this.#stopper = stopper;
    this.#supervisor.start(agentWorker);
    this.#startDefinitionsWorker();
    this.#leader = new LeaderWorker({
      leadership: this.#leadership(),
      holder: this.#instance.id,
      workers: () =>
        this.#leaderOnlyWorkers(
          platforms ? () => this.#createBus(platforms, chat, stopper) : () => null,
        ),
      clock: this.#clock,
      logger: this.#options.logger.child({ worker: "leader" }),
      metrics: this.metrics,
      events: this.events,
    });
    this.#supervisor.start(this.#leader);
    this.#supervisor.start(
      new QueueDepthWorker({
        queue: this.#queue,
        metrics: this.metrics,
        logger: this.#options.logger.child({ worker: "queue-depth" }),
      }),
    );
  }

  /** Reloads the agents and skills when their files change (each process its own). */
  #startDefinitionsWorker(): void {
    const { catalog, workspace, config, logger } = this.#options;
    if (!catalog) return;
    this.#supervisor.start(
      new DefinitionsWorker({
        catalog,
        settings: {
          workspace,
          maxListingChars: config.skills.max_listing_chars,
          defaultAgentId: config.default_agent,
        },
        logger: logger.child({ worker: "definitions" }),
        onAgentsChanged: () => this.#claimLoadedAgents(),
      }),
    );
  }

  /**
   * PostgreSQL mode: claims the jobs of the agents loaded now. The agent worker reads this
   * list at each claim; the instance's row (`status`) keeps the list it started with.
   */
  #claimLoadedAgents(): void {
    const claimed = this.#instance.agents;
    claimed.splice(0, claimed.length, ...agentIdsOf(this.#options));
  }

  /** `/stop` of the chat bus: across the cluster in PostgreSQL mode, in this process otherwise. */
  #sessionStopper(stopHere: (sessionKey: string) => boolean): SessionStopper {
    const relay = this.#storage.cluster?.stops;
    if (!relay) return { stop: async (key) => stopHere(key) };
    const logger = this.#options.logger.child({ worker: "stops" });
    return relay.start(stopHere, (error) =>
      logger.warn({ error: error.message }, "the /stop listener hit an error; it listens on"),
    );
  }

  /** Builds the enabled chat platforms (fresh each call), or null when none is enabled. */
  async #platformFactory(): Promise<(() => ChatPlatform[]) | null> {
    const { config, logger } = this.#options;
    if (runnablePlatforms(config).length === 0) return null;
    return loadPlatformFactory(config, logger);
  }

  /** The chat bus's receiving half, for one leadership term. */
  #createBus(
    createPlatforms: () => ChatPlatform[],
    senders: ChatSenders,
    stopper: SessionStopper,
  ): MessageBusWorker {
    const { config, logger } = this.#options;
    return new MessageBusWorker({
      createPlatforms,
      allowedUserIds: (platform) => allowedUserIds(config, platform),
      agents: this.#chatAgents(),
      queue: this.#queue,
      history: this.#storage.history,
      pairing: this.#storage.pairing,
      senders,
      stopSession: (key) => stopper.stop(key),
      answerChoice: (press, platform) => this.#requireDesk().answerPress(press, platform),
      contextUsage: (agentId, sessionId) => this.#requireRunner().contextUsage(agentId, sessionId),
      usage: this.#storage.usage,
      pricing: { prices: config.llm.prices, timezone: config.timezone },
      clock: this.#clock,
      logger: logger.child({ worker: "bus" }),
    });
  }

  /** The chat's agent directory, read anew at each use: agents come and go on reload. */
  #chatAgents(): ChatAgentDirectory {
    const { config, agents, brokenAgents } = this.#options;
    return {
      defaultAgentId: config.default_agent,
      bindings: config.bindings,
      get agents() {
        return chatAgentDirectory(config, agents, brokenAgents).agents;
      },
    };
  }

  /**
   * The workers only one process of a cluster runs: started when this process becomes the
   * leader, stopped when it stops being it.
   */
  #leaderOnlyWorkers(createBus: () => MessageBusWorker | null): Worker[] {
    const { config, logger, workspace, agents, brokenAgents } = this.#options;
    const workers: Worker[] = [
      new CronWorker({
        cronDir: join(workspace, "crons"),
        defaults: {
          agentId: config.default_agent,
          timezone: config.timezone,
          agentIds: definedAgentIds(agents, brokenAgents),
        },
        queue: this.#queue,
        state: this.#storage.cronState,
        clock: this.#clock,
        logger: logger.child({ worker: "cron" }),
        maxAttempts: config.workers.max_attempts,
        events: this.events,
      }),
    ];
    const batches = this.#options.provider.batches;
    if (batches) {
      workers.push(
        new BatchPoller({
          queue: this.#queue,
          batches,
          clock: this.#clock,
          logger: logger.child({ worker: "batch-poller" }),
          intervalMs: config.llm.batch_poll_s * 1000,
        }),
      );
    }
    workers.push(
      new RetentionWorker({
        queue: this.#queue,
        outbox: this.#storage.outbox,
        retentionMs: jobRetentionHours(config) * 3_600_000,
        clock: this.#clock,
        logger: logger.child({ worker: "retention" }),
      }),
    );
    this.#bus = createBus();
    if (this.#bus) workers.push(this.#bus, ...(this.#chat?.deliveries() ?? []));
    const cluster = this.#storage.cluster;
    if (cluster) {
      workers.push(
        new ClusterUpkeepWorker({
          cluster: cluster.store,
          intervalMs: config.cluster.heartbeat_s * 1000,
          orphanAfterMs: config.cluster.instance_ttl_s * 1000,
          clock: this.#clock,
          logger: logger.child({ worker: "cluster" }),
          events: this.events,
        }),
      );
    }
    return workers;
  }

  /** PostgreSQL mode: registers this process and starts its heartbeat. */
  async #joinCluster(): Promise<void> {
    const cluster = this.#storage.cluster;
    if (!cluster) return;
    const logger = this.#options.logger.child({ worker: "events" });
    cluster.events.start(
      (event) => {
        if (event.instance !== this.#instance.id) this.events.relay(event);
      },
      (error) => logger.warn({ error: error.message }, "cluster event stream trouble"),
    );
    await cluster.store.register(this.#instance);
    this.#registered = true;
    this.events.publish({ type: "instance.joined", subject: this.#instance.id });
    this.#heartbeat = new Heartbeat({
      cluster: cluster.store,
      instance: this.#instance,
      intervalMs: this.#options.config.cluster.heartbeat_s * 1000,
      logger: this.#options.logger.child({ worker: "heartbeat" }),
    });
    this.#heartbeat.start();
  }

  #leadership(): Leadership {
    const cluster = this.#storage.cluster;
    if (!cluster) return soleLeadership;
    const ttlMs = this.#options.config.cluster.leader_ttl_s * 1000;
    return {
      acquire: (holder) => cluster.store.acquireLeadership(holder, ttlMs),
      release: (holder) => cluster.store.releaseLeadership(holder),
      renewMs: ttlMs / 2,
    };
  }

  #requireRunner(): AgentRunner {
    if (!this.#runner) throw new Error("the agent runner is made before the chat bus");
    return this.#runner;
  }

  /**
   * Holding the workspace lock proves no other server uses this database, so every job
   * marked running was left by a process that died, whatever host name or id it had (a
   * recreated container, a renamed host, a restored backup): all are requeued at once.
   */
  async #requeueOrphans(): Promise<void> {
    const recovered = await this.#queue.requeueRunning();
    if (recovered > 0) this.#options.logger.info({ recovered }, JOBS_RECOVERED);
  }

  #agentWorker(workerId: string, clock: Clock, chat: ChatSenders): AgentWorker {
    const { workspace, config, agents, brokenAgents, catalog, provider, logger } = this.#options;
    const history = this.#storage.history;
    const desk = new ApprovalDesk({
      store: this.#storage.approvals,
      queue: this.#queue,
      platform: (kind) => chat.platform(kind),
      isOwner: async (platform, userId) =>
        allowedUserIds(config, platform).has(userId) ||
        (await this.#storage.pairing.isApproved(platform, userId)),
      timeoutMs: config.approvals.timeout_s * 1000,
      clock,
      logger: logger.child({ worker: "approvals" }),
    });
    this.#desk = desk;
    const budget = new BudgetGuard({
      ledger: this.#storage.usage,
      config,
      agents,
      clock,
      notify: (target, text, key) => this.#notice(chat, target, text, key),
    });
    const runner = new AgentRunner({
      workspace,
      config,
      agents,
      ...(brokenAgents === undefined ? {} : { brokenAgents }),
      ...(catalog === undefined ? {} : { skills: () => catalog.skills }),
      history,
      provider,
      clock,
      postMessage: (request) => chat.poster(request),
      delegate: queueSubagents({
        queue: this.#queue,
        history,
        clock,
        timeoutMs: config.workers.subagent_timeout_s * 1000,
        stopRunning: (key) => this.#requireStopper().stop(key),
      }),
      approvals: (request) => desk.asker(request),
      budget: (request) => budget.checker(request),
      ...(this.#mcp ? { mcp: this.#mcp.servers } : {}),
    });
    this.#runner = runner;
    return new AgentWorker({
      workerId,
      // PostgreSQL mode: claim only the jobs of agents this process has (capability routing).
      agentIds: this.#storage.cluster ? this.#instance.agents : undefined,
      queue: this.#queue,
      history,
      checkpoint: this.#storage.checkpoint,
      failJob: this.#storage.failJob,
      outageBudgetMs: config.workers.outage_budget_s * 1000,
      runner,
      frontends: this.frontends,
      concurrency: config.workers.agent_concurrency,
      jobTimeoutMs: config.workers.job_timeout_s * 1000,
      clock,
      logger: logger.child({ worker: "agent" }),
      metrics: this.metrics,
      stopRunning: (key) => this.#requireStopper().stop(key),
      waitSettled: (wait) => desk.isSettled(wait),
      onBudgetExceeded: config.budget.on_exceeded,
      events: this.events,
    });
  }

  /**
   * A notice for the owner, once per key: into the target's chat through the outbox
   * (whose dedupe key makes it once), or, for a job without a chat, to the log once per
   * process.
   */
  async #notice(
    chat: ChatSenders,
    target: ReplyTarget | undefined,
    text: string,
    key: string,
  ): Promise<void> {
    const address = target ? chatAddressOf(target) : null;
    if (address) return chat.submit(address.platform, address.chatId, text, key);
    if (this.#logged.has(key)) return;
    this.#logged.add(key);
    this.#options.logger.warn({ notice: key }, text);
  }

  #requireDesk(): ApprovalDesk {
    if (!this.#desk) throw new Error("the approval desk is made before the chat bus");
    return this.#desk;
  }

  #requireStopper(): SessionStopper {
    if (!this.#stopper) throw new Error("the session stopper is made before any job runs");
    return this.#stopper;
  }

  async #startHttp(): Promise<void> {
    const { workspace, config, agents, catalog, logger } = this.#options;
    const listening = await listenHttp({
      workspace,
      config,
      agents,
      ...(catalog ? { catalog } : {}),
      storage: this.#storage,
      queue: this.#queue,
      clock: this.#clock,
      claimedAgents: () => [
        config.default_agent,
        ...this.#instance.agents.filter((id) => id !== config.default_agent),
      ],
      health: () => this.#health(),
      events: this.events,
      metrics: this.metrics,
      stopper: () => this.#requireStopper(),
      webReplies: this.#webReplies,
      mcp: () => this.#mcp?.servers ?? null,
      logger,
    });
    if (!listening) return;
    this.#http = listening.endpoint;
    this.httpAddress = listening.address;
    this.#lock?.announce({ http: this.httpAddress });
  }

  /** SQLite mode: notices the database or the lock being deleted or replaced. */
  #watchFiles(): void {
    if (!this.#lock) return;
    const dir = this.#options.config.history.path;
    this.#watch = new FileIdentityWatch(
      [join(dir, DATABASE_FILE), join(dir, LOCK_FILE)],
      (reason) => {
        this.#lostReason = reason;
        const error = new UserError(
          `${reason}; the server stops so that nothing more is written where no one will find it. Restore the database with picklebot restore, or start again to begin with an empty one`,
        );
        this.#options.logger.error({ reason }, "storage lost: stopping the server");
        this.#onLost(error);
      },
    );
    this.#watch.start();
  }

  /** `/healthz`: unhealthy while a worker restarts, a chat platform is not connected, or the storage vanished. */
  async #health() {
    const buses = this.isLeader ? (this.#bus?.connections() ?? []) : [];
    const lost = this.#lostReason === null ? {} : { storage: this.#lostReason };
    return {
      healthy:
        !this.#lostReason &&
        this.#supervisor.healthy() &&
        buses.every((bus) => bus.state === "connected"),
      ...lost,
      instance: this.#instance.id,
      leader: this.isLeader,
      workers: [...this.#supervisor.health(), ...(this.#leader?.health() ?? [])],
      queue: await this.#queue.counts(),
      buses,
      outbox: await this.#storage.outbox.summary(),
      brokenAgents: [...(this.#options.brokenAgents ?? new Map())].map(([id, error]) => ({
        id,
        error: error.message,
      })),
      // bubblewrap is probed once per process (probeBubblewrap keeps the answer).
      bash: describeBashSandbox({
        kind: this.#options.config.tools.bash.sandbox,
        network: this.#options.config.tools.bash.network,
      }),
    };
  }

  /**
   * Stops taking work, lets running jobs finish (within job_timeout_s), deregisters this
   * instance (its heartbeat goes on until then), closes everything.
   */
  async stop(): Promise<void> {
    this.#watch?.stop();
    await this.#supervisor.stop();
    await this.#mcp?.stop();
    await this.#chat?.close();
    await this.#heartbeat?.stop();
    if (this.#registered) {
      this.events.publish({ type: "instance.left", subject: this.#instance.id });
      await this.#storage.cluster?.store
        .deregister(this.#instance)
        .catch((error: unknown) =>
          this.#options.logger.warn({ error: toError(error).message }, "could not deregister"),
        );
    }
    await this.#http?.close();
    await this.#storage.close();
    this.#lock?.release();
  }
}

/**
 * Who this process is: in SQLite mode the host name (as before: a restart on the same
 * host recovers its jobs); in PostgreSQL mode `cluster.instance_id`, PICKLEBOT_INSTANCE_ID
 * or the host name.
 */
function instanceInfo(options: ServerOptions, clustered: boolean): InstanceInfo {
  const { config } = options;
  return {
    id: clustered ? (config.cluster.instance_id ?? defaultInstanceId()) : hostname(),
    hostname: hostname(),
    pid: process.pid,
    version: VERSION,
    agents: agentIdsOf(options),
    concurrency: config.workers.agent_concurrency,
    ttlMs: config.cluster.instance_ttl_s * 1000,
  };
}

/** The agents this process runs: the loaded ones and `default_agent`, sorted. */
function agentIdsOf({ config, agents }: Pick<ServerOptions, "config" | "agents">): string[] {
  return [...new Set([config.default_agent, ...agents.keys()])].sort();
}
