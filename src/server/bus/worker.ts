/**
 * MessageBusWorker: runs the enabled chat platforms inside the server.
 *
 *   run(signal): build the platforms (platforms.ts) ─► register a ChatFrontend for each
 *                ─► start the outbox delivery loops ─► connect every platform
 *                ─► each received message goes through the ChatInbox, one at a time in
 *                   arrival order (the platform's handler only appends it and returns)
 *   signal aborted: stop receiving (Telegram confirms its update offset) ─► finish the
 *                   messages already received ─► stop the delivery loops ─► resolve
 *
 * The frontends stay registered after a stop: jobs still finishing put their replies in
 * the outbox, and what cannot be sent now is delivered by the next run.
 */
import { toError } from "../../errors.js";
import type { FrontendRegistry } from "../../frontends/registry.js";
import type { Logger } from "../../log.js";
import type {
  ChatPlatform,
  ChatPlatformKind,
  ChatPlatformState,
  HistoryStore,
  IncomingChatMessage,
  JobAdmin,
  JobQueue,
} from "../../ports.js";
import type { Clock, Worker } from "../worker.js";
import { ChatFrontend } from "./chat-frontend.js";
import { OutboxDelivery } from "./delivery.js";
import { ChatInbox } from "./inbox.js";
import type { OutboxStore } from "./outbox.js";
import type { PairingStore } from "./pairing.js";

/** The log message written once a platform is connected (with a `platform` field). */
export const BUS_CONNECTED = "chat platform connected";

/** Options of {@link MessageBusWorker}. */
export interface MessageBusWorkerOptions {
  /** Builds the enabled platforms, fresh for each run (see `createPlatforms`). */
  createPlatforms: () => ChatPlatform[];
  /** User ids admitted by picklebot.yaml, per platform. */
  allowedUserIds: (platform: ChatPlatformKind) => Set<string>;
  /** The agent chats talk to (`default_agent`). */
  agentId: string;
  queue: JobQueue & JobAdmin;
  history: HistoryStore;
  pairing: PairingStore;
  outbox: OutboxStore;
  /** Where the chat frontends are registered for the AgentWorker. */
  frontends: FrontendRegistry;
  /** Aborts the running job of a session key (`/stop`); false when none runs. */
  stopSession: (sessionKey: string) => boolean;
  clock: Clock;
  logger: Logger;
  /** Shortest time between two streaming edits in one chat. (Default: 1000 ms) */
  editIntervalMs?: number;
}

/** A platform's connection state, for `/healthz` and `status`. */
export interface BusConnection {
  platform: ChatPlatformKind;
  state: ChatPlatformState;
}

interface LivePlatform {
  platform: ChatPlatform;
  delivery: OutboxDelivery;
}

/** The chat bus: Telegram, Discord. */
export class MessageBusWorker implements Worker {
  readonly name = "bus";
  readonly #options: MessageBusWorkerOptions;
  #live = new Map<ChatPlatformKind, LivePlatform>();

  constructor(options: MessageBusWorkerOptions) {
    this.#options = options;
  }

  /** Each platform's connection state. */
  connections(): BusConnection[] {
    return [...this.#live.values()].map(({ platform }) => ({
      platform: platform.kind,
      state: platform.state,
    }));
  }

  /**
   * Puts a message for a chat in the outbox and delivers it now if its platform runs;
   * true once the platform confirmed it (otherwise it is retried from the outbox).
   */
  async post(
    platform: ChatPlatformKind,
    chatId: string,
    text: string,
    dedupeKey: string,
  ): Promise<boolean> {
    const { outbox, clock } = this.#options;
    const entry = await outbox.submit({ dedupeKey, platform, chatId }, text, clock.now());
    const live = this.#live.get(platform);
    return live ? live.delivery.deliver(entry) : false;
  }

  async run(signal: AbortSignal): Promise<void> {
    // Aborted by the server's stop, or by this run ending on its own (a crash).
    const local = new AbortController();
    const forward = () => local.abort();
    signal.addEventListener("abort", forward, { once: true });
    const live = this.#startFrontends();
    const inbox = this.#inbox();
    let received: Promise<void> = Promise.resolve();
    const onMessage = (message: IncomingChatMessage) => {
      received = received.then(() => inbox.handle(message));
    };
    const loops = live.map(({ delivery }) => delivery.run(local.signal));
    let stopping: Promise<void> | null = null;
    const stopAll = () => {
      stopping ??= this.#stopPlatforms(live);
      return stopping;
    };
    const stopped = new Promise<void>((resolve) =>
      local.signal.addEventListener("abort", () => resolve(stopAll()), { once: true }),
    );
    try {
      await Promise.all(live.map(({ platform }) => this.#connect(platform, onMessage, signal)));
      await stopped;
    } finally {
      local.abort();
      signal.removeEventListener("abort", forward);
      await stopAll();
      await received;
      await Promise.all(loops);
    }
  }

  #startFrontends(): LivePlatform[] {
    const { createPlatforms, outbox, clock, logger, frontends, editIntervalMs } = this.#options;
    const live = createPlatforms().map((platform) => {
      const platformLogger = logger.child({ platform: platform.kind });
      const delivery = new OutboxDelivery({ platform, outbox, clock, logger: platformLogger });
      frontends.register(
        new ChatFrontend({
          platform,
          outbox,
          delivery,
          clock,
          logger: platformLogger,
          editIntervalMs,
        }),
      );
      return { platform, delivery };
    });
    this.#live = new Map(live.map((entry) => [entry.platform.kind, entry]));
    return live;
  }

  #inbox(): ChatInbox {
    return new ChatInbox({
      ...this.#options,
      answer: async (message, text) => {
        const key = `bus:${message.platform}:${message.messageId}`;
        await this.post(message.platform, message.chatId, text, key);
      },
    });
  }

  async #connect(
    platform: ChatPlatform,
    onMessage: (message: IncomingChatMessage) => void,
    signal: AbortSignal,
  ): Promise<void> {
    await platform.start(onMessage);
    if (!signal.aborted) this.#options.logger.info({ platform: platform.kind }, BUS_CONNECTED);
  }

  async #stopPlatforms(live: LivePlatform[]): Promise<void> {
    await Promise.all(
      live.map(({ platform }) =>
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
