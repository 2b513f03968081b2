/**
 * The picklebot server: composes storage, the chat wing, the agent runtime, the web wing
 * and the workers of a workspace, and runs them under the supervisor.
 *
 *   start(): lock workspace (SQLite mode) ─► open storage ─► import the enabled chat
 *            platforms' adapters ─► build every part up front: the frontends (console,
 *            web replies, and the chat wing's, so every process streams and delivers the
 *            replies of the chat jobs it runs), the MCP servers, the agent runtime
 *            (approvals, budget, runner, subagents, the AgentWorker), the HTTP endpoint
 *            with the dashboard, the leader's workers ─► listen on HTTP ─► register this
 *            instance (PostgreSQL mode) ─► requeue orphans (SQLite mode) ─► start workers:
 *            the AgentWorker, the definitions watch, the queue depth gauges, and the
 *            LeaderWorker, which runs the leader-only workers (crons, chat receiving and
 *            outbox retries, retention, cluster upkeep) while this process holds the lease
 *   stop():  stop workers (running jobs finish within job_timeout_s) ─► close the chat
 *            clients ─► deregister ─► close HTTP ─► close storage ─► release the lock
 *
 * In SQLite mode the process is alone with its storage and always the leader.
 */
import { hostname } from "node:os";
import { join } from "node:path";
import { reachedBudget, unpricedBudgetedModel } from "../agents/budget.js";
import { definedAgentIds } from "../agents/definition.js";
import { watchModelKey } from "../agents/model-key-watch.js";
import { describeBashSandbox } from "../agents/tools/index.js";
import { systemClock } from "../base/clock.js";
import { toError, UserError } from "../base/errors.js";
import type { Logger } from "../base/log.js";
import { packageInfo } from "../base/package-info.js";
import { Refusal } from "../base/refusal.js";
import { type ChatAgentDirectory, chatAgentDirectory } from "../chat/agents.js";
import { OutboxFiles } from "../chat/outbox-files.js";
import { loadPlatformFactory } from "../chat/platforms.js";
import type { BusConnection } from "../chat/receiver.js";
import { ChatWing } from "../chat/wing.js";
import {
  jobRetentionHours,
  modelEntryNames,
  runnablePlatforms,
  workspacePrices,
} from "../config/index.js";
import { ChatHeartbeatDesk, configuredHeartbeats } from "../cron/chat-heartbeats.js";
import { chatScheduleListing } from "../cron/chat-schedules.js";
import { ChatHeartbeatWorker } from "../cron/heartbeat-worker.js";
import { ScheduleWorker } from "../cron/schedule-worker.js";
import { CronWorker } from "../cron/worker.js";
import { announcingEnqueues } from "../events/enqueued.js";
import { EventHub } from "../events/hub.js";
import { withMemoryEvents } from "../events/memory-changed.js";
import { LogFrontend } from "../frontends/log.js";
import { FrontendRegistry } from "../frontends/registry.js";
import type { HttpEndpoint } from "../http/endpoint.js";
import type {
  ChatPlatform,
  Clock,
  CronStateStore,
  InstanceInfo,
  JobAdmin,
  JobQueue,
  Leadership,
  Storage,
  Worker,
} from "../ports/index.js";
import { DATABASE_FILE, defaultInstanceId, openStorage } from "../storage/index.js";
import { acquireWorkspaceLock, LOCK_FILE, type WorkspaceLock } from "../storage/workspace-lock.js";
import { WebReplies } from "../web/replies.js";
import { AgentRuntime, type WorkspaceAgents } from "./agent-runtime.js";
import { JOBS_RECOVERED } from "./agent-worker.js";
import { BatchPoller } from "./batch-poller.js";
import { LeaderWorker, soleLeadership } from "./cluster/leader.js";
import { ClusterUpkeepWorker, Heartbeat } from "./cluster/upkeep.js";
import { DefinitionsWorker } from "./definitions-watch.js";
import { FileIdentityWatch } from "./file-identity.js";
import { type McpRuntime, startMcpRuntime } from "./mcp-reload.js";
import { ServerMetrics } from "./metrics.js";
import { QueueDepthWorker } from "./queue-depth.js";
import { RetentionWorker } from "./retention.js";
import { listenHttp, serverHttpEndpoint } from "./server-http.js";
import { Supervisor } from "./supervisor.js";

/** What a server is started with. */
export interface ServerOptions extends WorkspaceAgents {
  logger: Logger;
  clock?: Clock;
}

const VERSION = packageInfo().version;

/** What the server has opened before its parts are built. */
interface Opened {
  /** The workspace lock (SQLite mode), or null (PostgreSQL mode). */
  lock: WorkspaceLock | null;
  storage: Storage;
  /** Builds the enabled chat platforms, fresh each call; null when none is enabled. */
  platforms: (() => ChatPlatform[]) | null;
}

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
  /** Replies of silent jobs (web chats among them) as they are written, for the dashboard. */
  readonly #webReplies = new WebReplies();
  /** The chat path: the senders in every process, the receiver while this process leads. */
  readonly #chat: ChatWing;
  readonly #mcp: McpRuntime;
  /** Approvals, budget, runner, subagents, the session stopper and the AgentWorker. */
  readonly #agents: AgentRuntime;
  /** The HTTP endpoint with the dashboard, or null when `http.enabled` is false. */
  readonly #http: HttpEndpoint | null;
  readonly #leader: LeaderWorker;
  /** PostgreSQL mode: this instance's heartbeat. */
  readonly #heartbeat: Heartbeat | null;
  #registered = false;
  /** SQLite mode: watches the database and lock files for being deleted or replaced. */
  readonly #watch: FileIdentityWatch | null;
  /** Why the storage can no longer be trusted (its files vanished), once it happened. */
  #lostReason: string | null = null;
  /** The model API's refusal of the key, while the last call was refused. */
  readonly #modelKey: Refusal;
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

  private constructor(options: ServerOptions, { lock, storage, platforms }: Opened) {
    const { workspace, config, logger } = options;
    this.#modelKey = new Refusal(logger);
    this.#options = { ...options, provider: watchModelKey(options.provider, this.#modelKey) };
    this.metrics = new ServerMetrics({ prices: workspacePrices(config) });
    this.#clock = options.clock ?? systemClock;
    this.#lock = lock;
    this.#instance = instanceInfo(options, storage.cluster !== null);
    this.events = new EventHub({
      instance: storage.cluster ? this.#instance.id : "local",
      onDropped: (count) => this.metrics.eventsDropped.inc(count),
      forward: storage.cluster ? (event) => storage.cluster?.events.send(event) : undefined,
    });
    this.#storage = withMemoryEvents(storage, this.events);
    this.#queue = announcingEnqueues(storage.queue, this.events);
    this.#supervisor = new Supervisor({
      clock: this.#clock,
      logger,
      metrics: this.metrics,
      events: this.events,
    });
    this.frontends.register(new LogFrontend(logger.child({ frontend: "console" })));
    this.frontends.register(this.#webReplies);
    this.#chat = new ChatWing({
      config,
      platforms,
      storage: this.#storage,
      queue: this.#queue,
      frontends: this.frontends,
      agents: this.#chatAgents(),
      voiceReplies: (agentId) => options.agents.get(agentId)?.voiceReplies,
      holder: this.#instance.id,
      sharedOutbox: storage.cluster !== null,
      clock: this.#clock,
      logger,
      events: this.events,
      reminders: (chat) => chatScheduleListing(storage.schedules, this.#clock, chat),
      heartbeats: new ChatHeartbeatDesk({ store: storage.schedules, clock: this.#clock, config }),
    });
    this.#mcp = startMcpRuntime({
      workspace,
      config,
      logger: logger.child({ worker: "mcp" }),
      agents: () => options.agents.values(),
    });
    this.#agents = this.#agentRuntime();
    this.#http = serverHttpEndpoint(this.#httpParts());
    this.#leader = new LeaderWorker({
      leadership: this.#leadership(),
      holder: this.#instance.id,
      workers: () => this.#leaderOnlyWorkers(),
      clock: this.#clock,
      logger: logger.child({ worker: "leader" }),
      metrics: this.metrics,
      events: this.events,
    });
    this.#heartbeat = storage.cluster
      ? new Heartbeat({
          cluster: storage.cluster.store,
          instance: this.#instance,
          intervalMs: config.cluster.heartbeat_s * 1000,
          logger: logger.child({ worker: "heartbeat" }),
        })
      : null;
    this.#watch = lock ? this.#fileWatch() : null;
  }

  /** Starts a server; throws UserError when the workspace is locked by another one. */
  static async start(options: ServerOptions): Promise<PicklebotServer> {
    const { config, logger } = options;
    // Several processes share PostgreSQL storage; the single-server lock is SQLite's.
    const lock =
      config.queue.backend === "postgres" ? null : acquireWorkspaceLock(config.history.path);
    let storage: Storage | null = null;
    let server: PicklebotServer;
    try {
      storage = await openStorage(config, options.clock ?? systemClock);
      const platforms =
        runnablePlatforms(config).length === 0 ? null : await loadPlatformFactory(config, logger);
      server = new PicklebotServer(options, { lock, storage, platforms });
    } catch (error) {
      await storage?.close();
      lock?.release();
      throw error;
    }
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

  /**
   * True once every chat platform this process runs is connected (at once when it runs
   * none: no platform enabled, or a PostgreSQL server that is not the leader).
   */
  chatConnected(): boolean {
    if (!this.isLeader) return true;
    const buses = this.#chat.connections();
    const expected = runnablePlatforms(this.#options.config).length;
    return buses.length === expected && buses.every((bus) => bus.state === "connected");
  }

  /** True while this process runs the leader-only workers (always, in SQLite mode). */
  get isLeader(): boolean {
    return this.#leader.isLeader;
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
    this.#watch?.start();
    // First, so that a port already in use stops the start before any job is claimed.
    await this.#listen();
    await this.#joinCluster();
    if (this.#lock) await this.#requeueOrphans();
    this.#supervisor.start(this.#agents.worker);
    this.#startDefinitionsWorker();
    this.#supervisor.start(this.#leader);
    this.#supervisor.start(
      new QueueDepthWorker({
        queue: this.#queue,
        metrics: this.metrics,
        logger: this.#options.logger.child({ worker: "queue-depth" }),
      }),
    );
  }

  #agentRuntime(): AgentRuntime {
    const { workspace, config, agents, brokenAgents, catalog, provider, logger } = this.#options;
    const { readMedia } = this.#options;
    return new AgentRuntime({
      workspace,
      config,
      agents,
      ...(brokenAgents === undefined ? {} : { brokenAgents }),
      ...(catalog === undefined ? {} : { catalog }),
      provider,
      ...(readMedia === undefined ? {} : { readMedia }),
      storage: this.#storage,
      queue: this.#queue,
      frontends: this.frontends,
      senders: this.#chat.senders,
      mcp: this.#mcp.servers,
      workerId: this.#instance.id,
      // PostgreSQL mode: claim only the jobs of agents this process has (capability routing).
      ...(this.#storage.cluster ? { claimedAgents: this.#instance.agents } : {}),
      clock: this.#clock,
      logger,
      metrics: this.metrics,
      events: this.events,
    });
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
  #leaderOnlyWorkers(): Worker[] {
    const { config, logger, workspace, agents, brokenAgents } = this.#options;
    const workers: Worker[] = [
      new CronWorker({
        cronDir: join(workspace, "crons"),
        defaults: {
          agentId: config.default_agent,
          timezone: config.timezone,
          agentIds: definedAgentIds(agents, brokenAgents),
          modelNames: modelEntryNames(config),
        },
        queue: this.#queue,
        state: this.#storage.cronState,
        clock: this.#clock,
        logger: logger.child({ worker: "cron" }),
        maxAttempts: config.workers.max_attempts,
        events: this.events,
      }),
      new ScheduleWorker({
        store: this.#storage.schedules,
        queue: this.#queue,
        outbox: this.#storage.outbox,
        clock: this.#clock,
        logger: logger.child({ worker: "schedules" }),
        maxAttempts: config.workers.max_attempts,
      }),
      new ChatHeartbeatWorker({
        store: this.#storage.schedules,
        cronState: this.#storage.cronState,
        configured: configuredHeartbeats(config),
        queue: this.#queue,
        outbox: this.#storage.outbox,
        reachedBudget: (agentId) =>
          reachedBudget(
            { ledger: this.#storage.usage, config, agents, clock: this.#clock },
            agentId,
          ),
        unpricedModel: (agentId) => unpricedBudgetedModel({ config, agents }, agentId),
        clock: this.#clock,
        logger: logger.child({ worker: "chat-heartbeats" }),
        maxAttempts: config.workers.max_attempts,
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
        files: new OutboxFiles(config.history.path, this.#clock),
        retentionMs: jobRetentionHours(config) * 3_600_000,
        clock: this.#clock,
        logger: logger.child({ worker: "retention" }),
      }),
      ...this.#chat.leaderWorkers(this.#agents.chatControls()),
    );
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
    this.#heartbeat?.start();
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

  /**
   * Holding the workspace lock proves no other server uses this database, so every job
   * marked running was left by a process that died, whatever host name or id it had (a
   * recreated container, a renamed host, a restored backup): all are requeued at once.
   */
  async #requeueOrphans(): Promise<void> {
    const recovered = await this.#queue.requeueRunning();
    if (recovered > 0) this.#options.logger.info({ recovered }, JOBS_RECOVERED);
  }

  /** What the HTTP endpoint and the dashboard are given of this server. */
  #httpParts() {
    const { workspace, config, agents, catalog, logger } = this.#options;
    return {
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
      stopper: this.#agents.stopper,
      webReplies: this.#webReplies,
      mcp: this.#mcp.servers,
      logger,
    };
  }

  async #listen(): Promise<void> {
    if (!this.#http) return;
    this.httpAddress = await listenHttp(this.#http, this.#options.config, this.#options.workspace);
    this.#lock?.announce({ http: this.httpAddress });
  }

  /** Why the server is not healthy, one sentence each; empty when it is. */
  #unhealthyReasons(buses: readonly BusConnection[]): string[] {
    const { config, brokenAgents } = this.#options;
    const defaultBroken = brokenAgents?.get(config.default_agent);
    return [
      ...(this.#lostReason === null ? [] : [`storage lost: ${this.#lostReason}`]),
      ...this.#supervisor
        .health()
        .filter((worker) => worker.state !== "running")
        .map((worker) => `worker ${worker.name} is ${worker.state}`),
      ...buses
        .filter((bus) => bus.state !== "connected")
        .map((bus) => bus.refusal ?? `${bus.platform} is ${bus.state}`),
      ...(defaultBroken === undefined
        ? []
        : [`the default agent "${config.default_agent}" is broken: ${defaultBroken.message}`]),
      ...(this.#modelKey.current === null ? [] : [this.#modelKey.current]),
    ];
  }

  /** SQLite mode: notices the database or the lock being deleted or replaced. */
  #fileWatch(): FileIdentityWatch {
    const dir = this.#options.config.history.path;
    return new FileIdentityWatch([join(dir, DATABASE_FILE), join(dir, LOCK_FILE)], (reason) => {
      this.#lostReason = reason;
      const error = new UserError(
        `${reason}; the server stops so that nothing more is written where no one will find it. Restore the database with picklebot restore, or start again to begin with an empty one`,
      );
      this.#options.logger.error({ reason }, "storage lost: stopping the server");
      this.#onLost(error);
    });
  }

  /**
   * `/healthz`: unhealthy, with the reasons, while a worker restarts, a chat platform is
   * not connected, the storage vanished, or the default agent is broken (every job that
   * names no agent fails until its AGENT.md is fixed).
   */
  async #health() {
    const buses = this.isLeader ? this.#chat.connections() : [];
    const lost = this.#lostReason === null ? {} : { storage: this.#lostReason };
    const unhealthy = this.#unhealthyReasons(buses);
    return {
      healthy: unhealthy.length === 0,
      ...(unhealthy.length === 0 ? {} : { unhealthy }),
      ...lost,
      instance: this.#instance.id,
      leader: this.isLeader,
      workers: [...this.#supervisor.health(), ...this.#leader.health()],
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
    await this.#mcp.stop();
    await this.#chat.close();
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
