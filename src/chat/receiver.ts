/**
 * MessageBusWorker: the receiving half of the chat buses, a leader-only worker (Telegram
 * allows one poller per token; one Discord gateway session is enough).
 *
 *   run(signal): build fresh platforms (platforms.ts) ─► start the outbox retry loops of
 *                the {@link ChatSenders} ─► connect every platform
 *                ─► each received message goes through the ChatInbox, one at a time in
 *                   arrival order (the platform's handler only appends it and returns)
 *   signal aborted (shutdown, or leadership lost): stop receiving (Telegram confirms its
 *                   update offset) ─► finish the messages already received ─► stop the
 *                   retry loops ─► resolve
 *
 * Sending is not here: every process has its ChatSenders, so replies are streamed and
 * delivered by whichever process runs the job, leader or not. A new leader polls from the
 * offset Telegram last confirmed; an update handed out again adds no job (its dedupe key)
 * and no second answer (the outbox key).
 */

import { StorageUnavailableError, toError } from "../base/errors.js";
import type { Logger } from "../base/log.js";
import { formatOutboxKey } from "../base/outbox-key.js";
import type {
  ChatPlatform,
  ChatPlatformKind,
  ChatPlatformState,
  Clock,
  HistoryStore,
  IncomingChatMessage,
  IncomingChoice,
  JobAdmin,
  JobQueue,
  PairingStore,
  Worker,
} from "../ports/index.js";
import type { ChatAgentDirectory } from "./agents.js";
import { ChatInbox, type ChatInboxOptions } from "./inbox.js";
import type { ChatSenders } from "./senders.js";

/** The log message written once a platform is connected (with a `platform` field). */
export const BUS_CONNECTED = "chat platform connected";

/** Options of {@link MessageBusWorker}. */
export interface MessageBusWorkerOptions {
  /** Builds the enabled platforms, fresh for each run (see `createPlatforms`). */
  createPlatforms: () => ChatPlatform[];
  /** User ids admitted by picklebot.yaml, per platform. */
  allowedUserIds: (platform: ChatPlatformKind) => Set<string>;
  /** The agents chats may talk to, `default_agent` and `bindings`. */
  agents: ChatAgentDirectory;
  queue: JobQueue & JobAdmin;
  history: HistoryStore;
  pairing: PairingStore;
  /** This process's sending half: answers go out through it, its retry loops run here. */
  senders: ChatSenders;
  /** Aborts the running job of a session key (`/stop`), wherever it runs; false when none runs. */
  stopSession: (sessionKey: string) => Promise<boolean>;
  /**
   * Takes a button press (an approval's answer) received by `platform`; resolves once it
   * is durably handled. (Default: presses are ignored)
   */
  answerChoice?: (press: IncomingChoice, platform: ChatPlatform) => Promise<void>;
  /** A session's size against its agent's window (`/status`). */
  contextUsage: (agentId: string, sessionId: string) => Promise<{ tokens: number; window: number }>;
  /** Model calls and their pricing (`/usage`). */
  usage: ChatInboxOptions["usage"];
  /** The named models, for `/model` and `/status`. */
  models: ChatInboxOptions["models"];
  pricing: ChatInboxOptions["pricing"];
  /** The chat's reminders, for `/reminders`. (Default: none) */
  reminders?: ChatInboxOptions["reminders"];
  /** The chat's heartbeat, for `/heartbeat`. (Default: none) */
  heartbeats?: ChatInboxOptions["heartbeats"];
  /** Takes known secrets out of a message's text before it is queued. (Default: none) */
  redact?: ChatInboxOptions["redact"];
  /** The memories `/memory` shows and `/forget` clears, and the sessions' snapshots. */
  memory: ChatInboxOptions["memory"];
  recall: ChatInboxOptions["recall"];
  clock: Clock;
  logger: Logger;
}

/** A platform's connection state, for `/healthz` and `status`. */
export interface BusConnection {
  platform: ChatPlatformKind;
  state: ChatPlatformState;
  /** Why the platform refuses the login, with the owner's fix (see `ChatPlatform.refusal`). */
  refusal?: string;
}

/** The chat bus: Telegram, Discord. */
export class MessageBusWorker implements Worker {
  readonly name = "bus";
  readonly #options: MessageBusWorkerOptions;
  #live: ChatPlatform[] = [];

  constructor(options: MessageBusWorkerOptions) {
    this.#options = options;
  }

  /** Each platform's connection state. */
  connections(): BusConnection[] {
    return this.#live.map(({ kind, state, refusal }) =>
      refusal === null ? { platform: kind, state } : { platform: kind, state, refusal },
    );
  }

  async run(signal: AbortSignal): Promise<void> {
    // Aborted by the server's stop, or by this run ending on its own (a crash).
    const local = new AbortController();
    const forward = () => local.abort();
    signal.addEventListener("abort", forward, { once: true });
    const live = this.#options.createPlatforms();
    this.#live = live;
    const inbox = this.#inbox();
    // One at a time, in arrival order; each platform confirms a message only once its
    // handling resolved (the job or the answer is stored), and gets it again otherwise.
    let received: Promise<void> = Promise.resolve();
    const onMessage = (message: IncomingChatMessage): Promise<void> => {
      const handled = received.then(() => inbox.handle(message));
      // The inbox logged it; the next message still gets its turn.
      received = handled.catch(() => undefined);
      return handled;
    };
    let stopping: Promise<void> | null = null;
    const stopAll = () => {
      stopping ??= this.#stopPlatforms(live);
      return stopping;
    };
    const stopped = new Promise<void>((resolve) =>
      local.signal.addEventListener("abort", () => resolve(stopAll()), { once: true }),
    );
    try {
      await Promise.all(live.map((platform) => this.#connect(platform, onMessage, signal)));
      await stopped;
    } finally {
      local.abort();
      signal.removeEventListener("abort", forward);
      await stopAll();
      await received;
    }
  }

  #inbox(): ChatInbox {
    return new ChatInbox({
      ...this.#options,
      answer: (message, text) => {
        const key = formatOutboxKey({
          kind: "bus",
          platform: message.platform,
          messageId: message.messageId,
        });
        return this.#options.senders.submit(message.platform, message.chatId, text, key);
      },
    });
  }

  async #connect(
    platform: ChatPlatform,
    onMessage: (message: IncomingChatMessage) => Promise<void>,
    signal: AbortSignal,
  ): Promise<void> {
    const { answerChoice } = this.#options;
    await platform.start(
      onMessage,
      answerChoice && ((press) => this.#answerChoice(answerChoice, press, platform)),
    );
    if (!signal.aborted) this.#options.logger.info({ platform: platform.kind }, BUS_CONNECTED);
  }

  /**
   * Hands a press on; a failure other than unavailable storage (which the platform hands
   * the press over again for) is logged, not thrown.
   */
  async #answerChoice(
    answerChoice: NonNullable<MessageBusWorkerOptions["answerChoice"]>,
    press: IncomingChoice,
    platform: ChatPlatform,
  ): Promise<void> {
    try {
      await answerChoice(press, platform);
    } catch (thrown) {
      if (thrown instanceof StorageUnavailableError) throw thrown;
      this.#options.logger.warn(
        { platform: press.platform, choice: press.choiceId, error: toError(thrown).message },
        "could not handle a button press",
      );
    }
  }

  async #stopPlatforms(live: ChatPlatform[]): Promise<void> {
    await Promise.all(
      live.map((platform) =>
        platform.stop().catch((error: unknown) => {
          this.#options.logger.warn(
            { platform: platform.kind, error: toError(error).message },
            "chat platform did not stop cleanly",
          );
        }),
      ),
    );
  }
}
