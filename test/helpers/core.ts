/**
 * The agent core, built in-process the way the server builds it: storage opened by
 * `openStorage` from a temp workspace (memory or SQLite queue, SQLite history), the real
 * Anthropic SDK pointed at the fake API, the chat senders (chat frontend and outbox
 * delivery) over a {@link FakeChatPlatform}, an {@link AgentWorker}, and the
 * {@link MessageBusWorker} receiving from the same platform, all on the test clock.
 *
 *   const core = await openCore();
 *   core.start();                       // the AgentWorker; start({ bus: true }) adds the bus
 *   const job = await core.enqueue("hello");
 *   await core.waitForJob(job.id, (job) => job.state === "done");
 *   await core.close();
 */

import { ApprovalDesk } from "../../src/agents/approval-desk.js";
import { BudgetGuard } from "../../src/agents/budget.js";
import { loadAgents } from "../../src/agents/definition.js";
import { createAnthropicProvider } from "../../src/agents/providers/anthropic.js";
import { AgentRunner } from "../../src/agents/runner.js";
import { chatAgentDirectory } from "../../src/chat/agents.js";
import { MessageBusWorker } from "../../src/chat/receiver.js";
import { ChatSenders } from "../../src/chat/senders.js";
import { type Config, modelEntryNames, secretValues } from "../../src/config/index.js";
import { ChatHeartbeatDesk } from "../../src/cron/chat-heartbeats.js";
import { chatSchedulesOfTurn } from "../../src/cron/chat-schedules.js";
import { withMemoryEvents } from "../../src/events/memory-changed.js";
import { FrontendRegistry } from "../../src/frontends/registry.js";
import {
  type Checkpoint,
  type EventSink,
  type Job,
  type NewJob,
  RESUME_MARKER,
  type Storage,
} from "../../src/ports/index.js";
import { AgentWorker, type AgentWorkerOptions } from "../../src/server/agent-worker.js";
import { ServerMetrics } from "../../src/server/metrics.js";
import { queueSubagents } from "../../src/server/subagents.js";
import { openStorage } from "../../src/storage/index.js";
import {
  type FakeAnthropic,
  type FakeReplySource,
  startFakeAnthropic,
} from "../fakes/anthropic.js";
import { FakeChatPlatform } from "../fakes/chat-platform.js";
import { TestClock } from "./clock.js";
import { testConfig } from "./config.js";
import { type LogLine, recordingLogger } from "./log.js";
import { waitFor } from "./wait.js";
import { makeWorkspace, type TempWorkspace } from "./workspace.js";

/** The chat the core's jobs reply to (on the fake Telegram). */
export const CHAT_ID = "42";
/** The session key of {@link CHAT_ID}. */
export const CHAT_KEY = `telegram:${CHAT_ID}`;
/** The Telegram user the bus admits (`allowed_user_ids`). */
export const OWNER_ID = "7";

/** Options of {@link openCore}. */
export interface CoreOptions {
  /** (Default: memory) */
  queue?: "memory" | "sqlite";
  /** A migrated PostgreSQL database: queue and history there instead. (Default: none) */
  postgresUrl?: string;
  /** Where the worker and the chat senders publish events. (Default: nowhere) */
  events?: EventSink;
  /** `workers.job_timeout_s`. (Default: 300) */
  jobTimeoutS?: number;
  /** Wraps the storage's checkpoint (e.g. to lose the lock first). (Default: as is) */
  checkpoint?: (storage: Storage) => Checkpoint;
  /** More files of the workspace (e.g. an `agents/pickle/AGENT.md` with other tools). */
  files?: Record<string, string>;
  /** `llm.context_window`. (Default: the model's) */
  contextWindow?: number;
  /** The fake model refuses prompts over this many tokens. (Default: no limit) */
  promptTokenLimit?: number;
  /** `history.max_messages`. (Default: 200) */
  maxMessages?: number;
  /** Whether the fake model has `count_tokens`. (Default: true) */
  countTokens?: boolean;
  /** `workers.outage_budget_s`. (Default: 300) */
  outageBudgetS?: number;
  /** The fake model's answer when its script is empty. (Default: "ok") */
  defaultReply?: FakeReplySource;
  /** `budget` of picklebot.yaml, as written there. (Default: none) */
  budget?: Record<string, unknown>;
  /** `llm.prices` of picklebot.yaml, as written there. (Default: none) */
  prices?: Record<string, unknown>;
  /** `workers.subagent_timeout_s`. (Default: 3600) */
  subagentTimeoutS?: number;
  /** `workers.agent_concurrency`. (Default: 2) */
  concurrency?: number;
  /** `bindings` of picklebot.yaml, as written there. (Default: none) */
  bindings?: Array<{ chat: string; agent: string }>;
  /** `telegram.bot_token` (a configured secret). (Default: none) */
  botToken?: string;
  /** `heartbeats` of picklebot.yaml, as written there. (Default: none) */
  heartbeats?: Record<string, unknown>;
}

/** An in-process core, not yet running. */
export interface Core {
  ws: TempWorkspace;
  config: Config;
  clock: TestClock;
  storage: Storage;
  model: FakeAnthropic;
  platform: FakeChatPlatform;
  worker: AgentWorker;
  /** The worker's options, for building another one with some changed. */
  workerOptions: AgentWorkerOptions;
  lines: LogLine[];
  /** Runs the AgentWorker (and the chat bus and its outbox loops, when asked) until {@link Core.close}. */
  start(options?: { bus?: boolean }): void;
  /** Enqueues a chat job of {@link CHAT_KEY}; `overrides` change any field. */
  enqueue(message: string, overrides?: Partial<NewJob>): Promise<Job>;
  /**
   * Enqueues a chat job of {@link CHAT_KEY} as a crash leaves it: claimed, checkpointed
   * into `sessionId`, then requeued by recovery (call before {@link Core.start}).
   */
  enqueueInterrupted(sessionId: string, overrides?: Partial<NewJob>): Promise<Job>;
  /** Waits until the stored job satisfies `done`, and returns it. */
  waitForJob(id: string, done: (job: Job) => boolean, what?: string): Promise<Job>;
  /** Stops the worker, then closes storage and the fake API and deletes the workspace. */
  close(): Promise<void>;
}

/** Builds the core on a fresh temp workspace. */
export async function openCore(options: CoreOptions = {}): Promise<Core> {
  const ws = makeWorkspace({ "notes.md": "Pickles are cucumbers in brine.\n", ...options.files });
  const model = await startFakeAnthropic({
    promptTokenLimit: options.promptTokenLimit,
    countTokens: options.countTokens,
    defaultReply: options.defaultReply,
  });
  const config = testConfig(ws.dir, {
    llm: {
      api_key: "test-key",
      base_url: model.url,
      timeout_s: 20,
      context_window: options.contextWindow,
      ...(options.prices ? { prices: options.prices } : {}),
    },
    ...(options.postgresUrl
      ? {
          queue: { backend: "postgres", url: options.postgresUrl, pool_size: 2 },
          history: { backend: "postgres", max_messages: options.maxMessages },
        }
      : {
          queue: { backend: options.queue ?? "memory" },
          history: { backend: "sqlite", max_messages: options.maxMessages },
        }),
    workers: {
      job_timeout_s: options.jobTimeoutS ?? 300,
      ...(options.subagentTimeoutS ? { subagent_timeout_s: options.subagentTimeoutS } : {}),
    },
    // The tests' web sites listen on 127.0.0.1, which web_fetch otherwise refuses.
    tools: { web_fetch: { allow_private_addresses: true } },
    bindings: options.bindings,
    ...(options.budget ? { budget: options.budget } : {}),
    ...(options.heartbeats ? { heartbeats: options.heartbeats } : {}),
    ...(options.botToken === undefined ? {} : { telegram: { bot_token: options.botToken } }),
  });
  const clock = new TestClock();
  const storage = await openStorage(config, clock);
  const { logger, lines } = recordingLogger(secretValues(config));
  const platform = new FakeChatPlatform();
  const frontends = new FrontendRegistry();
  const senders = new ChatSenders({
    platforms: [platform],
    outbox: storage.outbox,
    historyPath: config.history.path,
    frontends,
    holder: "test",
    clock,
    logger,
    editIntervalMs: 0,
    events: options.events,
  });
  const { agents, broken: brokenAgents } = loadAgents(ws.dir);
  const desk = new ApprovalDesk({
    store: storage.approvals,
    queue: storage.queue,
    platform: () => platform,
    isOwner: async (_platform, userId) => userId === OWNER_ID,
    timeoutMs: config.approvals.timeout_s * 1000,
    clock,
    logger,
  });
  const budget = new BudgetGuard({
    ledger: storage.usage,
    config,
    agents,
    clock,
    notify: async (target, text, key) => {
      if (target?.kind === "telegram") await senders.submit("telegram", target.chatId, text, key);
    },
  });
  const runner = new AgentRunner({
    workspace: ws.dir,
    config,
    agents,
    brokenAgents,
    history: storage.history,
    provider: createAnthropicProvider({ apiKey: "test-key", baseURL: model.url, maxRetries: 0 }),
    clock,
    postMessage: (request) => senders.poster(request),
    // As the server does: the schedule tool on the chat's schedules.
    schedules: (request) =>
      chatSchedulesOfTurn(request, { store: storage.schedules, clock, config }),
    delegate: queueSubagents({
      queue: storage.queue,
      history: storage.history,
      clock,
      timeoutMs: config.workers.subagent_timeout_s * 1000,
      stopRunning: async (key) => worker.stopSession(key),
    }),
    approvals: (request) => desk.asker(request),
    budget: (request) => budget.checker(request),
    // As the server does: its memory changes announced on the stream.
    memoryStores: options.events ? withMemoryEvents(storage, options.events) : storage,
  });
  const workerOptions: AgentWorkerOptions = {
    workerId: "worker-a",
    queue: storage.queue,
    history: storage.history,
    checkpoint: options.checkpoint?.(storage) ?? storage.checkpoint,
    failJob: storage.failJob,
    outageBudgetMs: (options.outageBudgetS ?? 300) * 1000,
    runner,
    frontends,
    concurrency: options.concurrency ?? 2,
    jobTimeoutMs: config.workers.job_timeout_s * 1000,
    clock,
    logger,
    metrics: new ServerMetrics(),
    pollMs: 10,
    waitSettled: (wait) => desk.isSettled(wait),
    onBudgetExceeded: config.budget.on_exceeded,
    events: options.events,
  };
  const worker = new AgentWorker(workerOptions);
  const bus = new MessageBusWorker({
    createPlatforms: () => [platform],
    allowedUserIds: () => new Set([OWNER_ID]),
    agents: chatAgentDirectory(config, agents),
    queue: storage.queue,
    history: storage.history,
    pairing: storage.pairing,
    senders,
    stopSession: async (key) => worker.stopSession(key),
    answerChoice: (press, from) => desk.answerPress(press, from),
    contextUsage: (agentId, sessionId) => runner.contextUsage(agentId, sessionId),
    usage: storage.usage,
    models: {
      names: modelEntryNames(config),
      chainOf: (agentId, model) => runner.modelsShown(agentId, model),
    },
    pricing: { prices: config.llm.prices, timezone: config.timezone },
    memory: storage.memory,
    recall: storage.recall,
    // As the server does: /heartbeat on the schedules store.
    heartbeats: new ChatHeartbeatDesk({ store: storage.schedules, clock, config }),
    clock,
    logger,
  });
  const controller = new AbortController();
  const running: Promise<void>[] = [];
  const enqueue = (message: string, overrides: Partial<NewJob> = {}) =>
    storage.queue.enqueue({
      agentId: "pickle",
      sessionKey: CHAT_KEY,
      message,
      mode: "chat",
      replyTo: { kind: "telegram", chatId: CHAT_ID },
      ...overrides,
    });
  return {
    ws,
    config,
    clock,
    storage,
    model,
    platform,
    worker,
    workerOptions,
    lines,
    start(options = {}) {
      running.push(worker.run(controller.signal));
      if (!options.bus) return;
      running.push(bus.run(controller.signal));
      // The leader-only outbox retry loops, as the server runs them next to the bus.
      for (const delivery of senders.deliveries()) running.push(delivery.run(controller.signal));
    },
    enqueue,
    async enqueueInterrupted(sessionId, overrides = {}) {
      const queued = await enqueue(RESUME_MARKER, overrides);
      const [claimed] = await storage.queue.claim("crashed-worker", 1);
      if (!claimed || claimed.id !== queued.id)
        throw new Error("enqueueInterrupted: call it before start()");
      await storage.queue.checkpoint(claimed, sessionId);
      await storage.queue.recover("crashed-worker");
      return (await storage.queue.get(queued.id)) as Job;
    },
    async waitForJob(id, done, what = `job ${id} to reach the expected state`) {
      return waitFor(async () => {
        const job = await storage.queue.get(id);
        return job && done(job) ? job : null;
      }, what);
    },
    async close() {
      controller.abort();
      await model.close();
      await Promise.all(running);
      await senders.close();
      await storage.close();
      ws.remove();
    },
  };
}
