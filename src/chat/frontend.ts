/**
 * The chat frontend, written once for every {@link ChatPlatform}: streams a reply by
 * editing messages in place, and hands the final text to the durable outbox.
 *
 * A reply's life:
 *   typing() ─► "typing…" now, repeated until text shows (or nothing happens for 2 min)
 *   update() ─► at most one platform call per chat per `editIntervalMs`: the first text is
 *               sent, later text edits it; past `maxMessageLength` it continues in new
 *               messages (split like the final text). Each message id goes to the outbox
 *               draft, so a retry of the job edits the same messages.
 *               A 429 holds the chat (stream and delivery) for retry_after; any other
 *               error stops streaming.
 *   finish() ─► the final text becomes a pending outbox entry (stored before any send),
 *               and resolves: the job is done. Delivery starts at once (after a stream
 *               call in flight, whose message it edits) without the job waiting for
 *               it; a failed or hung delivery is retried by the outbox loop.
 *               When the reply is spoken (speech.ts), the text is then
 *               synthesised and stored as a voice entry of the outbox, once per job.
 */

import { randomUUID } from "node:crypto";
import { chatAddressOf } from "../base/chat-address.js";
import { ChatPlatformError, PicklebotError, toError } from "../base/errors.js";
import type { Logger } from "../base/log.js";
import { checkNumberOptions } from "../base/options.js";
import { formatOutboxKey } from "../base/outbox-key.js";
import type {
  ChatPlatform,
  ChatPlatformKind,
  Clock,
  Frontend,
  OutboxAddress,
  OutboxStore,
  OutgoingFile,
  ReplyContext,
  ReplyStream,
  ReplyTarget,
} from "../ports/index.js";
import { editFormatted, messageKey, type OutboxDelivery, sendFormatted } from "./delivery.js";
import type { OutboxFiles } from "./outbox-files.js";
import { isSpoken, type SpokenReplies } from "./speech.js";
import { splitMessage } from "./split.js";

/** Options of {@link ChatFrontend}. */
export interface ChatFrontendOptions {
  platform: ChatPlatform;
  outbox: OutboxStore;
  delivery: OutboxDelivery;
  clock: Clock;
  logger: Logger;
  /** Shortest time between two streaming edits in one chat. (Default: 1000 ms) */
  editIntervalMs?: number;
  /** How often "typing…" is repeated while the agent works. (Default: 4000 ms) */
  typingIntervalMs?: number;
  /** Where spoken replies keep their audio. (Default: no spoken replies) */
  files?: OutboxFiles;
  /** Which agents' replies are spoken, and by what. (Default: none) */
  speech?: SpokenReplies;
}

/** Text sent when a reply ends with no text at all (the agent only used tools). */
const EMPTY_REPLY = "(done; no text in the reply)";
/** Typing stops repeating after this long without any sign of the agent. */
const TYPING_IDLE_MS = 120_000;

/** The chat id a target names, for the platform `kind`. */
export function chatIdOf(target: ReplyTarget): string {
  const address = chatAddressOf(target);
  if (address) return address.chatId;
  throw new PicklebotError(`a chat frontend cannot reply to a ${target.kind} target`, {
    retryable: false,
  });
}

/** A {@link Frontend} over one chat platform. */
export class ChatFrontend implements Frontend {
  readonly kind: ChatPlatform["kind"];
  readonly #options: ChatFrontendOptions;
  /** When each chat last saw a streaming send or edit. */
  readonly #lastEditAt = new Map<string, number>();

  constructor(options: ChatFrontendOptions) {
    checkNumberOptions("ChatFrontend", options, {
      editIntervalMs: "non-negative",
      typingIntervalMs: "positive",
    });
    this.#options = options;
    this.kind = options.platform.kind;
  }

  openReply(target: ReplyTarget, context: ReplyContext = {}): ReplyStream {
    const address = replyAddress(this.kind, target, context);
    return new ChatReply(this.#options, address, this.#lastEditAt, context);
  }
}

/**
 * The outbox address of a reply: the job's key (a reply opened again for the same job is
 * the same entry, delivered once), or a key of its own for a reply of no job.
 */
export function replyAddress(
  platform: ChatPlatformKind,
  target: ReplyTarget,
  context: ReplyContext,
): OutboxAddress {
  const dedupeKey = formatOutboxKey(
    context.jobId ? { kind: "job", jobId: context.jobId } : { kind: "reply", id: randomUUID() },
  );
  return { dedupeKey, platform, chatId: chatIdOf(target) };
}

/** The text a finished reply delivers (a reply without text says so). */
export function finalText(text: string): string {
  return text.trim() === "" ? EMPTY_REPLY : text;
}

/** The text a failed reply delivers: what it showed so far, then the failure. */
export function failureText(soFar: string, message: string): string {
  const shown = soFar.trimEnd();
  return shown === "" ? message : `${shown}\n\n${message}`;
}

class ChatReply implements ReplyStream {
  readonly #options: ChatFrontendOptions;
  readonly #address: OutboxAddress;
  readonly #lastEditAt: Map<string, number>;
  #latest = "";
  /** Text shown in each message of the stream, and the messages' ids. */
  #shown: string[] = [];
  /** The outbox draft: its id, and the ids of the messages showing this reply. */
  #draft: { id: number; messageIds: string[] } | null = null;
  #flushing: Promise<void> = Promise.resolve();
  #flushTimer: NodeJS.Timeout | null = null;
  #typingTimer: NodeJS.Timeout | null = null;
  #lastActivity = 0;
  #streamStopped = false;
  #finished = false;
  readonly #context: ReplyContext;

  constructor(
    options: ChatFrontendOptions,
    address: OutboxAddress,
    lastEditAt: Map<string, number>,
    context: ReplyContext,
  ) {
    this.#options = options;
    this.#address = address;
    this.#context = context;
    this.#lastEditAt = lastEditAt;
  }

  typing(): void {
    this.#lastActivity = this.#options.clock.now();
    if (this.#finished || this.#shown.length > 0 || this.#typingTimer) return;
    this.#sendTyping();
    this.#typingTimer = setInterval(() => {
      const idle = this.#options.clock.now() - this.#lastActivity > TYPING_IDLE_MS;
      if (this.#finished || this.#shown.length > 0 || idle) this.#stopTyping();
      else this.#sendTyping();
    }, this.#options.typingIntervalMs ?? 4000);
    this.#typingTimer.unref();
  }

  update(textSoFar: string): void {
    this.#lastActivity = this.#options.clock.now();
    if (this.#finished || this.#streamStopped || textSoFar.trim() === "") return;
    this.#latest = textSoFar;
    this.#schedule();
  }

  toolCall(): void {
    this.typing();
  }

  async finish(text: string): Promise<void> {
    await this.#deliver(finalText(text));
    await this.#speak(text);
  }

  fail(message: string): Promise<void> {
    return this.#deliver(failureText(this.#latest, message));
  }

  close(): void {
    this.#finished = true;
    this.#stopTyping();
    if (this.#flushTimer) clearTimeout(this.#flushTimer);
  }

  async #deliver(text: string): Promise<void> {
    this.close();
    const { outbox, delivery, clock } = this.#options;
    const entry = await outbox.submit(this.#address, text, clock.now());
    delivery.deliverAfter(entry, this.#flushing, () => this.#shown);
  }

  /**
   * Stores the reply spoken as the job's voice entry and starts its delivery, when the
   * agent's replies are spoken (always, or in kind and the message came as voice); a job whose voice entry exists (a resumed one) adds
   * nothing. A failed synthesis is logged: the text reply is sent without it.
   */
  async #speak(text: string): Promise<void> {
    const { speech, files, outbox, delivery, clock, logger } = this.#options;
    const { jobId, agentId, cameAsVoice = false } = this.#context;
    if (!speech || !files || !jobId || !agentId || text.trim() === "") return;
    if (!isSpoken(speech.modeOf(agentId), cameAsVoice)) return;
    const dedupeKey = formatOutboxKey({ kind: "voice", jobId });
    if ((await outbox.get(dedupeKey)) !== null) return;
    let audio: Buffer;
    try {
      audio = await speech.tts.speak(text);
    } catch (error) {
      logger.warn(
        { job: jobId, chat: this.#address.chatId, error: toError(error).message },
        "spoken reply not made; the text reply is sent without it",
      );
      return;
    }
    const voice: OutgoingFile = {
      kind: "voice",
      name: "reply.ogg",
      mediaType: "audio/ogg",
      content: audio,
    };
    const described = await files.store(voice);
    const address = { ...this.#address, dedupeKey };
    const entry = await outbox.submit(address, described, clock.now());
    delivery.deliverAfter(entry, this.#flushing, () => []);
  }

  #schedule(): void {
    if (this.#flushTimer) return;
    const { clock, platform } = this.#options;
    const editIntervalMs = Math.max(
      this.#options.editIntervalMs ?? 1000,
      platform.editIntervalMs ?? 0,
    );
    const now = clock.now();
    const { chatId } = this.#address;
    const lastEdit = this.#lastEditAt.get(chatId) ?? 0;
    const held = this.#options.delivery.heldUntil(chatId);
    const wait = Math.max(0, lastEdit + editIntervalMs - now, held - now);
    this.#flushTimer = setTimeout(() => {
      this.#flushTimer = null;
      this.#flushing = this.#flushing.then(() => this.#flush());
    }, wait);
    this.#flushTimer.unref();
  }

  async #flush(): Promise<void> {
    if (this.#finished || this.#streamStopped) return;
    try {
      const draft = await this.#openDraft();
      if (draft === null) return;
      const parts = splitMessage(this.#latest, this.#options.platform.maxMessageLength);
      for (const [index, part] of parts.entries()) {
        if (this.#shown[index] === part) continue;
        await this.#showPart(draft, index, part);
      }
    } catch (thrown) {
      this.#onStreamError(thrown);
    }
  }

  async #showPart(
    draft: { id: number; messageIds: string[] },
    index: number,
    part: string,
  ): Promise<void> {
    const { platform, outbox, clock } = this.#options;
    const { chatId } = this.#address;
    this.#lastEditAt.set(chatId, clock.now());
    this.#stopTyping();
    const existing = draft.messageIds[index];
    if (existing !== undefined) {
      await editFormatted(platform, chatId, existing, part);
    } else {
      const key = messageKey(this.#address.dedupeKey, index, part);
      draft.messageIds[index] = (await sendFormatted(platform, chatId, part, key)).messageId;
      await outbox.setMessageIds(draft.id, draft.messageIds, clock.now());
    }
    this.#shown[index] = part;
  }

  /**
   * The messages this reply already has, from the outbox draft (a retry continues them);
   * null when the reply's final text is already in the outbox (nothing left to stream).
   */
  async #openDraft(): Promise<{ id: number; messageIds: string[] } | null> {
    if (this.#draft) return this.#draft;
    const entry = await this.#options.outbox.openDraft(this.#address, this.#options.clock.now());
    if (entry.state !== "draft") {
      this.#streamStopped = true;
      return null;
    }
    this.#draft = { id: entry.id, messageIds: [...entry.messageIds] };
    return this.#draft;
  }

  #onStreamError(thrown: unknown): void {
    const error = toError(thrown);
    if (error instanceof ChatPlatformError && error.retryAfterS !== undefined) {
      const until = this.#options.clock.now() + error.retryAfterS * 1000;
      this.#options.delivery.holdChat(this.#address.chatId, until);
      this.#schedule();
      return;
    }
    // The final text still goes through the outbox, which retries; the stream just stops.
    this.#streamStopped = true;
    this.#options.logger.warn(
      { chat: this.#address.chatId, error: error.message },
      "streaming a reply failed; the final reply will be delivered from the outbox",
    );
  }

  #sendTyping(): void {
    this.#options.platform.typing(this.#address.chatId).catch((error: unknown) => {
      this.#options.logger.debug({ error: toError(error).message }, "typing indicator failed");
    });
  }

  #stopTyping(): void {
    if (this.#typingTimer) clearInterval(this.#typingTimer);
    this.#typingTimer = null;
  }
}
