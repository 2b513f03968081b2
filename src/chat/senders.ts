/**
 * ChatSenders: the sending half of the chat buses, in every process of a cluster.
 *
 * Built at start-up, before the AgentWorker, from platform objects that are never started
 * (sending needs no polling or gateway: telegraf's `telegram` client and @discordjs/rest
 * work alone). For each enabled platform it registers a {@link ChatFrontend}, so a chat
 * job streams and delivers its reply from whichever process runs it, and keeps the
 * {@link OutboxDelivery} whose retry loop the leader's MessageBusWorker runs. With a shared
 * outbox (PostgreSQL mode), each platform not enabled here gets a
 * {@link DeferredChatFrontend}: the replies of its chat jobs run here wait in the outbox
 * for the leader, instead of being lost.
 */

import { createHash } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { MediaStore } from "../agents/media/store.js";
import { webFileSender } from "../agents/media/web-files.js";
import type { RunRequest } from "../agents/runner.js";
import type { FileSender, MessagePoster } from "../agents/tools/index.js";
import {
  CHAT_ADDRESS_FORMS,
  CHAT_PLATFORM_KINDS,
  chatAddressOf,
  formatChatAddress,
} from "../base/chat-address.js";
import { ToolError, toError } from "../base/errors.js";
import type { Logger } from "../base/log.js";
import { formatOutboxKey } from "../base/outbox-key.js";
import { isWebSessionKey } from "../base/session-key.js";
import type { FrontendRegistry } from "../frontends/registry.js";
import type {
  ChatPlatform,
  ChatPlatformKind,
  Clock,
  EventSink,
  OutboxStore,
  OutgoingFile,
} from "../ports/index.js";
import { DeferredChatFrontend } from "./deferred.js";
import { OutboxDelivery } from "./delivery.js";
import { fileSizeProblem } from "./files.js";
import { ChatFrontend } from "./frontend.js";
import { OutboxFiles } from "./outbox-files.js";
import type { SpokenReplies } from "./speech.js";

/** How long closing waits for replies already being delivered. */
const CLOSE_GRACE_MS = 3000;

/** Options of {@link ChatSenders}. */
export interface ChatSendersOptions {
  /** One unstarted platform per enabled platform (none: every post waits in the outbox). */
  platforms: ChatPlatform[];
  outbox: OutboxStore;
  /** The absolute `history.path`: file entries keep their copies below it. */
  historyPath: string;
  /** Where the chat frontends are registered for the AgentWorker. */
  frontends: FrontendRegistry;
  /** This process's instance id: the holder of its delivery leases. */
  holder: string;
  clock: Clock;
  logger: Logger;
  /** Shortest time between two streaming edits in one chat. (Default: 1000 ms) */
  editIntervalMs?: number;
  /** Where delivered and refused replies are reported. (Default: nowhere) */
  events?: EventSink;
  /** Which agents' replies are also spoken, and by what. (Default: none) */
  speech?: SpokenReplies;
  /**
   * Other processes share the outbox (PostgreSQL mode): a reply to a platform not enabled
   * here goes to the outbox for one that has it. Otherwise such a reply falls back to the
   * registry's silent frontend (kept in history only). (Default: false)
   */
  sharedOutbox?: boolean;
}

interface Sender {
  platform: ChatPlatform;
  delivery: OutboxDelivery;
}

/** Sends, edits and delivers chat replies; registers the chat frontends when built. */
export class ChatSenders {
  readonly #options: ChatSendersOptions;
  readonly #senders = new Map<ChatPlatformKind, Sender>();
  readonly #files: OutboxFiles;
  /** Where `send_file` of a web chat's job stores its files. */
  readonly #media: MediaStore;

  constructor(options: ChatSendersOptions) {
    this.#options = options;
    this.#files = new OutboxFiles(options.historyPath, options.clock);
    this.#media = new MediaStore(options.historyPath);
    const { outbox, frontends, holder, clock, logger, editIntervalMs } = options;
    for (const platform of options.platforms) {
      const platformLogger = logger.child({ platform: platform.kind });
      const delivery = new OutboxDelivery({
        platform,
        outbox,
        files: this.#files,
        holder,
        clock,
        logger: platformLogger,
        events: options.events,
      });
      frontends.register(
        new ChatFrontend({
          platform,
          outbox,
          delivery,
          clock,
          logger: platformLogger,
          editIntervalMs,
          files: this.#files,
          ...(options.speech ? { speech: options.speech } : {}),
        }),
      );
      this.#senders.set(platform.kind, { platform, delivery });
    }
    if (options.sharedOutbox) this.#registerDeferred();
  }

  /** A {@link DeferredChatFrontend} for each platform not enabled here. */
  #registerDeferred(): void {
    const { outbox, frontends, clock, logger } = this.#options;
    for (const kind of CHAT_PLATFORM_KINDS) {
      if (this.#senders.has(kind)) continue;
      frontends.register(
        new DeferredChatFrontend({ kind, outbox, clock, logger: logger.child({ platform: kind }) }),
      );
    }
  }

  /** The (unstarted) platform that sends to chats of `kind`, if it is enabled. */
  platform(kind: ChatPlatformKind): ChatPlatform | undefined {
    return this.#senders.get(kind)?.platform;
  }

  /** The outbox deliveries, one per platform, for the leader's retry loops. */
  deliveries(): OutboxDelivery[] {
    return [...this.#senders.values()].map((sender) => sender.delivery);
  }

  /**
   * Puts a message for a chat in the outbox and delivers it now if its platform is
   * enabled; true once the platform confirmed it (otherwise it is retried from the outbox).
   */
  async post(
    platform: ChatPlatformKind,
    chatId: string,
    text: string,
    dedupeKey: string,
  ): Promise<boolean> {
    const entry = await this.#store(platform, chatId, text, dedupeKey);
    const sender = this.#senders.get(platform);
    return sender ? sender.delivery.deliver(entry) : false;
  }

  /**
   * Puts a message for a chat in the outbox and starts its delivery without waiting for it
   * (an answer of the inbox: no send may hold up the next received message); resolves
   * once the message is stored. A failed or hung delivery is retried from the outbox.
   */
  async submit(
    platform: ChatPlatformKind,
    chatId: string,
    text: string,
    dedupeKey: string,
  ): Promise<void> {
    const entry = await this.#store(platform, chatId, text, dedupeKey);
    this.#senders.get(platform)?.delivery.deliverAfter(entry, Promise.resolve(), () => []);
  }

  #store(platform: ChatPlatformKind, chatId: string, text: string, dedupeKey: string) {
    const { outbox, clock } = this.#options;
    return outbox.submit({ dedupeKey, platform, chatId }, text, clock.now());
  }

  /**
   * `post_message` of a job's turn: into the chat its reply target names, through the
   * outbox, once per job and text (a resumed job that posts the same text again adds
   * nothing); undefined for a turn that is not a job's.
   */
  poster({ replyTo: target, jobId }: RunRequest): MessagePoster | undefined {
    if (!target || !jobId) return undefined;
    return async (text) => {
      const chat = chatAddressOf(target);
      if (!chat) {
        throw new ToolError(
          `post_message: this job has no chat to post to; give its cron a deliver_to (${CHAT_ADDRESS_FORMS})`,
        );
      }
      const digest = createHash("sha256").update(text).digest("hex").slice(0, 16);
      const delivered = await this.post(
        chat.platform,
        chat.chatId,
        text,
        formatOutboxKey({ kind: "post", jobId, digest }),
      );
      const where = formatChatAddress(chat);
      return delivered
        ? `posted to ${where}`
        : `queued for ${where}; the platform did not confirm it yet and it will be retried`;
    };
  }

  /**
   * Puts a file for a chat in the outbox (its bytes copied under the history folder first)
   * and delivers it now if its platform is enabled; true once the platform confirmed it.
   */
  async postFile(
    platform: ChatPlatformKind,
    chatId: string,
    file: OutgoingFile,
    dedupeKey: string,
  ): Promise<boolean> {
    const described = await this.#files.store(file);
    return this.post(platform, chatId, described, dedupeKey);
  }

  /**
   * `send_file` of a job's turn: into the chat its reply target names, through the outbox,
   * once per tool call (a resumed job runs a call with its id again: it adds nothing, even
   * when the file changed meanwhile); a web chat's job stores the file for its session
   * page instead (agents/media/web-files.ts); undefined for a turn that is not a job's.
   */
  fileSender({
    replyTo: target,
    jobId,
    sessionKey,
    sessionId,
  }: RunRequest): FileSender | undefined {
    if (!target || !jobId) return undefined;
    const chat = chatAddressOf(target);
    if (!chat && isWebSessionKey(sessionKey)) return webFileSender(this.#media, sessionId);
    const noChat = () =>
      new ToolError(
        `send_file: this job has no chat to send to; give its cron a deliver_to (${CHAT_ADDRESS_FORMS})`,
      );
    return {
      refusal: (name, bytes) => (chat ? fileSizeProblem(chat.platform, name, bytes) : undefined),
      send: async (file, callId) => {
        if (!chat) throw noChat();
        // Without a call id (never in a job's turn), once per content, name and caption.
        const identity = callId ?? Buffer.concat([file.content, Buffer.from(file.name)]);
        const digest = createHash("sha256")
          .update(identity)
          .update(`\n${file.caption ?? ""}`)
          .digest("hex")
          .slice(0, 16);
        const key = formatOutboxKey({ kind: "file", jobId, digest });
        const delivered = await this.postFile(chat.platform, chat.chatId, file, key);
        const where = formatChatAddress(chat);
        if (delivered) return `sent ${file.name} to ${where}`;
        const entry = await this.#options.outbox.get(key);
        if (entry?.state === "failed") {
          throw new ToolError(`send_file: ${where} refused ${file.name}: ${entry.lastError}`);
        }
        return `queued ${file.name} for ${where}; the platform did not confirm it yet and it will be retried`;
      },
    };
  }

  /**
   * Releases the platforms' clients (after the last job finished), once the deliveries
   * already started have ended, or after {@link CLOSE_GRACE_MS}: what is not sent by then
   * stays pending in the outbox and goes out after the next start.
   */
  async close(): Promise<void> {
    const deliveries = Promise.all(this.deliveries().map((delivery) => delivery.settled()));
    await Promise.race([deliveries, sleep(CLOSE_GRACE_MS, undefined, { ref: false })]);
    await Promise.all(
      [...this.#senders.values()].map(({ platform }) =>
        platform.stop().catch((error: unknown) => {
          this.#options.logger.warn(
            { platform: platform.kind, error: toError(error).message },
            "chat platform client did not close cleanly",
          );
        }),
      ),
    );
  }
}
