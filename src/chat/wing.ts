/**
 * The chat wing as the server composes it: the whole chat path, receiving and sending.
 *
 *   built (every process): the {@link ChatSenders} of the enabled platforms, which register
 *                          a chat Frontend per platform, so a chat job streams and delivers
 *                          its reply from whichever process runs it (in a cluster, a
 *                          platform not enabled here leaves the reply in the outbox for
 *                          the leader)
 *   leaderWorkers(agents): for one leadership term, the receiver ({@link MessageBusWorker}:
 *                          platforms ─► inbox ─► queue) and the outbox retry loops
 *   close():               releases the platforms' clients once the last job has finished
 *
 * A message leaves the wing once (the inbox enqueues a job) and comes back once (the agent
 * worker opens a reply on the chat Frontend).
 */
import type { Logger } from "../base/log.js";
import { secretRedactor } from "../base/redact.js";
import {
  allowedUserIds,
  type Config,
  modelEntryNames,
  secretValues,
  workspacePrices,
} from "../config/index.js";
import type { FrontendRegistry } from "../frontends/registry.js";
import type {
  ChatHeartbeats,
  ChatPlatform,
  ChatReplyTarget,
  Clock,
  EventSink,
  IncomingChoice,
  JobAdmin,
  JobQueue,
  SpokenReplyMode,
  Storage,
  Worker,
} from "../ports/index.js";
import type { ChatAgentDirectory } from "./agents.js";
import type { ChatModels } from "./commands.js";
import { type BusConnection, MessageBusWorker } from "./receiver.js";
import { ChatSenders } from "./senders.js";
import { type SpokenReplies, TextToSpeech } from "./speech.js";

/** Options of {@link ChatWing}. */
export interface ChatWingOptions {
  config: Config;
  /** Builds the enabled platforms, fresh and unstarted, each call; null when none is enabled. */
  platforms: (() => ChatPlatform[]) | null;
  storage: Pick<Storage, "outbox" | "pairing" | "history" | "usage" | "memory" | "recall">;
  queue: JobQueue & JobAdmin;
  /** Where the chat Frontends are registered for the agent worker. */
  frontends: FrontendRegistry;
  /** The agents chats may talk to, read anew at each use (agents come and go on reload). */
  agents: ChatAgentDirectory;
  /**
   * When an agent's replies are also spoken (its `voice_replies`), asked at each reply;
   * spoken only with `text_to_speech` configured. (Default: none)
   */
  voiceReplies?: (agentId: string) => SpokenReplyMode | undefined;
  /** This process's instance id: the holder of its delivery leases. */
  holder: string;
  /**
   * Other servers share the outbox (PostgreSQL mode): replies to a platform not enabled
   * here wait there for the leader. (Default: false)
   */
  sharedOutbox?: boolean;
  clock: Clock;
  /** The server's logger: the senders log as `worker: "chat"`, the receiver as `"bus"`. */
  logger: Logger;
  events: EventSink;
  /** A chat's reminders, for `/reminders`. (Default: none) */
  reminders?: (chat: ChatReplyTarget) => Promise<string>;
  /** A chat's heartbeat, for `/heartbeat`. (Default: none) */
  heartbeats?: ChatHeartbeats;
}

/** What the receiver asks of the agents' side: `/stop`, button answers, `/status`. */
export interface ChatAgentControls {
  /** Aborts a session's running job wherever it runs; false when none runs. */
  stopSession(sessionKey: string): Promise<boolean>;
  /** Takes an approval's button press; resolves once it is durably handled. */
  answerChoice(press: IncomingChoice, platform: ChatPlatform): Promise<void>;
  /** A session's size against its agent's window. */
  contextUsage(agentId: string, sessionId: string): Promise<{ tokens: number; window: number }>;
  /** The named models a conversation calls, in order (`/model`, `/status`). */
  chainOf: ChatModels["chainOf"];
}

/** The chat path of one server process. */
export class ChatWing {
  /** Sends, edits and delivers replies; `post_message` and notices go through it. */
  readonly senders: ChatSenders;
  readonly #options: ChatWingOptions;
  /** The receiver of the current leadership term, for `/healthz`. */
  #receiver: MessageBusWorker | null = null;

  constructor(options: ChatWingOptions) {
    this.#options = options;
    this.senders = new ChatSenders({
      platforms: options.platforms?.() ?? [],
      outbox: options.storage.outbox,
      historyPath: options.config.history.path,
      frontends: options.frontends,
      holder: options.holder,
      clock: options.clock,
      logger: options.logger.child({ worker: "chat" }),
      events: options.events,
      sharedOutbox: options.sharedOutbox ?? false,
      ...spokenReplies(options),
    });
  }

  /**
   * The workers of one leadership term: the receiver and the outbox retry loops; none
   * when no platform is enabled.
   */
  leaderWorkers(controls: ChatAgentControls): Worker[] {
    const { platforms, config, storage, queue, agents, clock, logger } = this.#options;
    if (!platforms) return [];
    this.#receiver = new MessageBusWorker({
      createPlatforms: platforms,
      allowedUserIds: (platform) => allowedUserIds(config, platform),
      agents,
      queue,
      history: storage.history,
      pairing: storage.pairing,
      senders: this.senders,
      stopSession: (key) => controls.stopSession(key),
      answerChoice: (press, platform) => controls.answerChoice(press, platform),
      contextUsage: (agentId, sessionId) => controls.contextUsage(agentId, sessionId),
      usage: storage.usage,
      models: {
        names: modelEntryNames(config),
        chainOf: (agentId, model) => controls.chainOf(agentId, model),
      },
      pricing: { prices: workspacePrices(config), timezone: config.timezone },
      redact: secretRedactor(secretValues(config)),
      ...(this.#options.reminders ? { reminders: this.#options.reminders } : {}),
      ...(this.#options.heartbeats ? { heartbeats: this.#options.heartbeats } : {}),
      memory: storage.memory,
      recall: storage.recall,
      clock,
      logger: logger.child({ worker: "bus" }),
    });
    return [this.#receiver, ...this.senders.deliveries()];
  }

  /** Each platform's connection state while this process receives (leads), else none. */
  connections(): BusConnection[] {
    return this.#receiver?.connections() ?? [];
  }

  /** Releases the platforms' clients (after the last job finished). */
  close(): Promise<void> {
    return this.senders.close();
  }
}

/** The spoken replies of the senders: none without `text_to_speech` or `voiceReplies`. */
function spokenReplies({ config, voiceReplies }: ChatWingOptions): {
  speech?: SpokenReplies;
} {
  if (!config.text_to_speech || !voiceReplies) return {};
  return { speech: { modeOf: voiceReplies, tts: new TextToSpeech(config.text_to_speech) } };
}
