/**
 * The picklebot server: composes storage, queue, frontends and workers for a workspace
 * and runs them under the supervisor.
 *
 *   start(): lock workspace ─► open storage ─► listen on HTTP
 *            ─► recover this host's running jobs ─► start workers
 *   stop():  stop workers (running jobs finish within job_timeout_s) ─► close HTTP
 *            ─► close storage ─► release the lock
 */
import { hostname } from "node:os";
import { join } from "node:path";
import type { AgentDefinition } from "../agents/definition.js";
import { AgentRunner } from "../agents/runner.js";
import { createPostMessageTool } from "../agents/tools/post-message.js";
import type { Config } from "../config/index.js";
import { toError, UserError } from "../errors.js";
import { LogFrontend } from "../frontends/log.js";
import { FrontendRegistry } from "../frontends/registry.js";
import type { Logger } from "../log.js";
import type { ChatPlatformKind, JobAdmin, JobQueue, ModelProvider } from "../ports.js";
import { openStorage, type Storage } from "../storage.js";
import { AgentWorker } from "./agent-worker.js";
import { allowedUserIds, enabledPlatforms, loadPlatformFactory } from "./bus/platforms.js";
import { MessageBusWorker } from "./bus/worker.js";
import type { CronStateStore } from "./cron/state.js";
import { CronWorker } from "./cron/worker.js";
import { HttpEndpoint } from "./http.js";
import { ServerMetrics } from "./metrics.js";
import { Supervisor } from "./supervisor.js";
import { type Clock, systemClock } from "./worker.js";
import { acquireWorkspaceLock, type WorkspaceLock } from "./workspace-lock.js";

/** What a server is started with. */
export interface ServerOptions {
  workspace: string;
  config: Config;
  agents: Map<string, AgentDefinition>;
  provider: ModelProvider;
  logger: Logger;
  clock?: Clock;
}

/** How often queue depth gauges are refreshed. */
const QUEUE_DEPTH_INTERVAL_MS = 5000;

/** A running server. */
export class PicklebotServer {
  /** `host:port` of the HTTP endpoint, or null when it is disabled. */
  httpAddress: string | null = null;
  readonly metrics = new ServerMetrics();
  readonly frontends = new FrontendRegistry();
  readonly #options: ServerOptions;
  readonly #lock: WorkspaceLock;
  readonly #storage: Storage;
  readonly #queue: JobQueue & JobAdmin;
  readonly #supervisor: Supervisor;
  #http: HttpEndpoint | null = null;
  #bus: MessageBusWorker | null = null;
  #depthTimer: NodeJS.Timeout | null = null;

  private constructor(options: ServerOptions) {
    this.#options = options;
    const clock = options.clock ?? systemClock;
    this.#lock = acquireWorkspaceLock(options.config.history.path);
    this.#storage = openStorage(options.config, clock);
    this.#queue = this.#storage.queue;
    this.#supervisor = new Supervisor({ clock, logger: options.logger, metrics: this.metrics });
  }

  /** Starts a server; throws UserError when the workspace is locked by another one. */
  static async start(options: ServerOptions): Promise<PicklebotServer> {
    const server = new PicklebotServer(options);
    try {
      await server.#start();
      return server;
    } catch (error) {
      await server.stop();
      throw error;
    }
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
    const { config, logger } = this.#options;
    const clock = this.#options.clock ?? systemClock;
    // First, so that a port already in use stops the start before any job is claimed.
    await this.#startHttp();
    const workerId = hostname();
    this.frontends.register(new LogFrontend(logger.child({ frontend: "console" })));
    const agentWorker = this.#agentWorker(workerId, clock);
    this.#bus = await this.#createBus(agentWorker, clock);
    // The bus registers its chat frontends as it starts: before the agent worker, so
    // that a job recovered at start-up finds its chat's frontend.
    if (this.#bus) this.#supervisor.start(this.#bus);
    this.#supervisor.start(agentWorker);
    this.#supervisor.start(
      new CronWorker({
        cronDir: join(this.#options.workspace, "crons"),
        defaults: { agentId: config.default_agent, timezone: config.timezone },
        queue: this.#queue,
        state: this.#storage.cronState,
        clock,
        logger: logger.child({ worker: "cron" }),
        maxAttempts: config.workers.max_attempts,
      }),
    );
    this.#depthTimer = setInterval(() => void this.#refreshQueueDepth(), QUEUE_DEPTH_INTERVAL_MS);
    this.#depthTimer.unref();
    await this.#refreshQueueDepth();
  }

  async #createBus(agentWorker: AgentWorker, clock: Clock): Promise<MessageBusWorker | null> {
    const { config, logger } = this.#options;
    if (enabledPlatforms(config).length === 0) return null;
    return new MessageBusWorker({
      createPlatforms: await loadPlatformFactory(config, { logger }),
      allowedUserIds: (platform) => allowedUserIds(config, platform),
      agentId: config.default_agent,
      queue: this.#queue,
      history: this.#storage.history,
      pairing: this.#storage.pairing,
      outbox: this.#storage.outbox,
      frontends: this.frontends,
      stopSession: (key) => agentWorker.stopSession(key),
      clock,
      logger: logger.child({ worker: "bus" }),
    });
  }

  /** Posts into a chat through the outbox; delivered now when its bus runs. */
  async #postToChat(
    platform: ChatPlatformKind,
    chatId: string,
    text: string,
    dedupeKey: string,
  ): Promise<boolean> {
    if (this.#bus) return this.#bus.post(platform, chatId, text, dedupeKey);
    const now = (this.#options.clock ?? systemClock).now();
    await this.#storage.outbox.submit({ dedupeKey, platform, chatId }, text, now);
    return false;
  }

  #agentWorker(workerId: string, clock: Clock): AgentWorker {
    const { workspace, config, agents, provider, logger } = this.#options;
    const history = this.#storage.history;
    const runner = new AgentRunner({
      workspace,
      config,
      agents,
      history,
      provider,
      clock,
      extraTools: (_agent, _key, request) =>
        request.jobId && request.replyTo
          ? [
              createPostMessageTool({
                target: request.replyTo,
                jobId: request.jobId,
                post: (...args) => this.#postToChat(...args),
              }),
            ]
          : [],
    });
    return new AgentWorker({
      workerId,
      queue: this.#queue,
      history,
      checkpoint: this.#storage.checkpoint,
      runner,
      frontends: this.frontends,
      concurrency: config.workers.agent_concurrency,
      jobTimeoutMs: config.workers.job_timeout_s * 1000,
      clock,
      logger: logger.child({ worker: "agent" }),
      metrics: this.metrics,
    });
  }

  async #startHttp(): Promise<void> {
    const { http } = this.#options.config;
    if (!http.enabled) return;
    this.#http = new HttpEndpoint({
      host: http.host,
      port: http.port,
      registry: this.metrics.registry,
      health: () => this.#health(),
    });
    try {
      this.httpAddress = await this.#http.listen();
      this.#lock.announce({ http: this.httpAddress });
    } catch (error) {
      throw listenError(error, http.host, http.port);
    }
  }

  /** `/healthz`: unhealthy while a worker restarts or a chat platform is not connected. */
  async #health() {
    const buses = this.#bus?.connections() ?? [];
    return {
      healthy: this.#supervisor.healthy() && buses.every((bus) => bus.state === "connected"),
      workers: this.#supervisor.health(),
      queue: await this.#queue.counts(),
      buses,
      outbox: await this.#storage.outbox.summary(),
    };
  }

  async #refreshQueueDepth(): Promise<void> {
    this.metrics.setQueueDepth(await this.#queue.counts());
  }

  /** Stops taking work, lets running jobs finish (within job_timeout_s), closes everything. */
  async stop(): Promise<void> {
    if (this.#depthTimer) clearInterval(this.#depthTimer);
    await this.#supervisor.stop();
    await this.#http?.close();
    await this.#storage.close();
    this.#lock.release();
  }
}

/** Why the HTTP endpoint could not listen: a setting in picklebot.yaml, when it is one. */
function listenError(thrown: unknown, host: string, port: number): Error {
  const code = (thrown as NodeJS.ErrnoException).code;
  if (code === "EADDRINUSE") {
    return new UserError(
      `http.port ${port} in picklebot.yaml is already in use on ${host}; choose another port or set http.enabled: false`,
      { cause: thrown },
    );
  }
  if (code === "EACCES") {
    return new UserError(
      `http.port ${port} in picklebot.yaml needs root to listen on; choose a port above 1023 or set http.enabled: false`,
      { cause: thrown },
    );
  }
  if (code === "EADDRNOTAVAIL" || code === "ENOTFOUND") {
    return new UserError(
      `http.host ${host} in picklebot.yaml is not an address of this machine; use 127.0.0.1, or 0.0.0.0 for every interface`,
      { cause: thrown },
    );
  }
  return toError(thrown);
}
