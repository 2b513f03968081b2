/**
 * Delivery of outbox entries to one chat platform.
 *
 *   deliver(entry): split the text ─► edit the parts a stream already showed, send the
 *                   rest (each new message id stored at once) ─► delivered
 *                   a file entry (`file:`, `voice:` keys): its stored copy sent as one
 *                   message, unless its message id is already stored ─► delivered
 *                   a 429 / 5xx / network error ─► retried at backoff (or retry_after)
 *                   any other refusal ─► failed, kept with its error
 *   run(signal):    every `pollMs` (or on wake) delivers the due entries, oldest first;
 *                   an entry of a chat that just failed waits, so a chat keeps its order.
 *
 * One entry is sent by one caller at a time. Within a process an in-flight set keeps the
 * AgentWorker's `finish` and the loop apart; across processes (PostgreSQL mode: the
 * process that ran the job sends at once, the leader's loop retries) each send first takes
 * the entry's delivery lease in the database (`OutboxStore.claim`), and whoever does not
 * get it leaves the entry alone. Only the leader runs `run` (each delivery is a
 * leader-only worker, supervised), so retries come from one process.
 */

import { createHash } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { retryDelayMs } from "../base/backoff.js";
import { ChatPlatformError, toError } from "../base/errors.js";
import type { Logger } from "../base/log.js";
import { checkNumberOptions } from "../base/options.js";
import { isFileOutboxKey, jobIdOfOutboxKey } from "../base/outbox-key.js";
import { Wakeup } from "../base/wakeup.js";
import {
  type ChatPlatform,
  type Clock,
  DELIVERY_LEASE_MS,
  type EventSink,
  type MessageEvent,
  type OutboxEntry,
  type OutboxStore,
  type SentChatMessage,
  type Worker,
} from "../ports/index.js";
import type { OutboxFiles } from "./outbox-files.js";
import { splitMessage } from "./split.js";

/** Options of {@link OutboxDelivery}. */
export interface OutboxDeliveryOptions {
  platform: ChatPlatform;
  outbox: OutboxStore;
  /** The stored copies the file entries send. */
  files: OutboxFiles;
  /** This process's instance id: the holder of the delivery leases it takes. */
  holder: string;
  clock: Clock;
  logger: Logger;
  /** How long a delivery lease holds an entry. (Default: {@link DELIVERY_LEASE_MS}) */
  leaseMs?: number;
  /** How often due entries are looked for. (Default: 1000 ms) */
  pollMs?: number;
  /** Where `message.delivered` / `message.refused` go. (Default: nowhere) */
  events?: EventSink;
}

/**
 * The idempotency key of part `index` of a reply showing `text` (see ChatPlatform.send):
 * a send repeated because its id was lost gets the same key only with the same text.
 */
export function messageKey(dedupeKey: string, index: number, text: string): string {
  const digest = createHash("sha256").update(`${dedupeKey}\n${index}\n${text}`);
  return digest.digest("base64url").slice(0, 25);
}

/** Sends a new message as Markdown, or as plain text when the platform rejects the Markdown. */
export async function sendFormatted(
  platform: ChatPlatform,
  chatId: string,
  text: string,
  key?: string,
): Promise<SentChatMessage> {
  try {
    return await platform.send(chatId, text, "markdown", key);
  } catch (error) {
    if (!(error instanceof ChatPlatformError && error.formatRejected)) throw error;
    return platform.send(chatId, text, "plain", key);
  }
}

/** Edits a message as Markdown, or as plain text when the platform rejects the Markdown. */
export async function editFormatted(
  platform: ChatPlatform,
  chatId: string,
  messageId: string,
  text: string,
): Promise<void> {
  try {
    await platform.edit(chatId, messageId, text, "markdown");
  } catch (error) {
    if (!(error instanceof ChatPlatformError && error.formatRejected)) throw error;
    await platform.edit(chatId, messageId, text, "plain");
  }
}

/** Delivers outbox entries of one platform, now and on retry. */
export class OutboxDelivery implements Worker {
  readonly name: string;
  readonly #options: OutboxDeliveryOptions;
  /** Deliveries started without their caller waiting (see {@link deliverAfter}). */
  readonly #started = new Set<Promise<unknown>>();
  readonly #inFlight = new Set<number>();
  readonly #wakeup = new Wakeup();
  /** Chats the platform asked us to leave alone (429 retry_after), until epoch ms. */
  readonly #heldUntil = new Map<string, number>();

  constructor(options: OutboxDeliveryOptions) {
    this.name = `outbox:${options.platform.kind}`;
    checkNumberOptions("OutboxDelivery", options, { leaseMs: "positive", pollMs: "positive" });
    this.#options = options;
  }

  /** Makes the loop look for due entries now. */
  wake(): void {
    this.#wakeup.notify();
  }

  /** Holds every call to a chat until `untilMs` (the platform answered 429 retry_after). */
  holdChat(chatId: string, untilMs: number): void {
    this.#heldUntil.set(chatId, Math.max(untilMs, this.#heldUntil.get(chatId) ?? 0));
  }

  /** Until when calls to a chat are held (0 when they are not). */
  heldUntil(chatId: string): number {
    return this.#heldUntil.get(chatId) ?? 0;
  }

  /**
   * Delivers a pending entry now; true once the platform confirmed it. Never throws.
   * `shown`: the text each of the entry's messages already shows (a stream that just
   * ended), so identical parts are not edited again.
   */
  async deliver(entry: OutboxEntry, shown: readonly string[] = []): Promise<boolean> {
    if (this.#inFlight.has(entry.id)) return false;
    this.#inFlight.add(entry.id);
    try {
      return await this.#deliverOnce(entry, shown);
    } catch (error) {
      // The outbox could not be read or written (a busy or restarting database): the
      // entry stays due, and the loop tries again.
      this.#options.logger.warn(
        { outbox: entry.dedupeKey, error: toError(error).message },
        "could not deliver a reply now; will retry",
      );
      return false;
    } finally {
      this.#inFlight.delete(entry.id);
    }
  }

  /**
   * Delivers `entry` once `before` settled (a stream's send in flight, whose message the
   * delivery then edits instead of sending another), without the caller waiting. The
   * entry counts as in flight from now on, so the retry loop leaves it alone meanwhile.
   */
  deliverAfter(entry: OutboxEntry, before: Promise<unknown>, shown: () => readonly string[]): void {
    if (this.#inFlight.has(entry.id)) return;
    this.#inFlight.add(entry.id);
    const started: Promise<unknown> = before
      .catch(() => undefined)
      .then(() => {
        this.#inFlight.delete(entry.id);
        return this.deliver(entry, shown());
      })
      .then((): void => {
        this.#started.delete(started);
      });
    this.#started.add(started);
  }

  /** Resolves once the deliveries {@link deliverAfter} started have ended (sent, or left to retry). */
  async settled(): Promise<void> {
    while (this.#started.size > 0) await Promise.all([...this.#started]);
  }

  async #deliverOnce(entry: OutboxEntry, shown: readonly string[]): Promise<boolean> {
    // The lease returns the stored entry: the caller's copy may be stale (delivered
    // meanwhile, here or by another process), and a stale copy would send it twice.
    const { outbox, holder, clock, leaseMs = DELIVERY_LEASE_MS } = this.#options;
    const now = clock.now();
    const current = await outbox.claim(entry.id, holder, now, now + leaseMs);
    if (current === null || current.text === null) {
      return (await outbox.get(entry.dedupeKey))?.state === "delivered";
    }
    return this.#attempt(current, current.text, shown);
  }

  async #attempt(entry: OutboxEntry, text: string, shown: readonly string[]): Promise<boolean> {
    try {
      const wait = this.heldUntil(entry.chatId) - this.#options.clock.now();
      if (wait > 0) await sleep(wait, undefined, { ref: false });
      if (isFileOutboxKey(entry.dedupeKey)) await this.#sendFile(entry, text);
      else await this.#sendParts(entry, text, shown);
      await this.#options.outbox.markDelivered(entry.id, this.#options.clock.now());
      this.#publish("message.delivered", entry);
      return true;
    } catch (thrown) {
      await this.#recordFailure(entry, thrown);
      return false;
    }
  }

  /**
   * Delivers due entries until `signal` aborts: a leader-only worker, so a database error
   * here (a backup holding the file, PostgreSQL restarting) restarts this loop with
   * backoff under the supervisor, and nothing else.
   */
  async run(signal: AbortSignal): Promise<void> {
    const { outbox, platform, clock, pollMs = 1000 } = this.#options;
    signal.addEventListener("abort", () => this.#wakeup.notify(), { once: true });
    while (!signal.aborted) {
      const blocked = new Set<string>();
      for (const entry of await outbox.due(platform.kind, clock.now(), 50)) {
        if (signal.aborted) break;
        if (blocked.has(entry.chatId) || this.heldUntil(entry.chatId) > clock.now()) continue;
        if (!(await this.deliver(entry))) blocked.add(entry.chatId);
      }
      await this.#wakeup.wait(pollMs);
    }
  }

  async #sendParts(entry: OutboxEntry, text: string, shown: readonly string[]): Promise<void> {
    const { platform, outbox, clock } = this.#options;
    const ids = [...entry.messageIds];
    const parts = splitMessage(text, platform.maxMessageLength);
    for (const [index, part] of parts.entries()) {
      const existing = ids[index];
      if (existing !== undefined && shown[index] === part) continue;
      if (existing !== undefined && (await this.#editOrLose(entry.chatId, existing, part)))
        continue;
      // A message that vanished (deleted) must not be answered with itself: another key.
      const scope = existing === undefined ? entry.dedupeKey : `${entry.dedupeKey}:${existing}`;
      const key = messageKey(scope, index, part);
      const sent = await sendFormatted(platform, entry.chatId, part, key);
      ids[index] = sent.messageId;
      // Stored before the next part: a retry after a crash edits this one, not resends it.
      await outbox.setMessageIds(entry.id, ids, clock.now());
    }
  }

  /**
   * Sends a file entry's stored copy as one message, with the same idempotency key on
   * every attempt; an entry whose message id is stored was sent already.
   */
  async #sendFile(entry: OutboxEntry, text: string): Promise<void> {
    if (entry.messageIds.length > 0) return;
    const { platform, outbox, files, clock } = this.#options;
    const file = await files.load(text);
    const sent = await platform.sendFile(
      entry.chatId,
      file,
      messageKey(entry.dedupeKey, 0, file.sha256),
    );
    await outbox.setMessageIds(entry.id, [sent.messageId], clock.now());
  }

  /** Edits a part shown while streaming; false when that message is gone (send a new one). */
  async #editOrLose(chatId: string, messageId: string, text: string): Promise<boolean> {
    try {
      await editFormatted(this.#options.platform, chatId, messageId, text);
      return true;
    } catch (error) {
      if (error instanceof ChatPlatformError && !error.retryable) return false;
      throw error;
    }
  }

  #publish(type: MessageEvent["type"], entry: OutboxEntry, error?: string): void {
    const { platform, chatId, dedupeKey } = entry;
    const jobId = jobIdOfOutboxKey(dedupeKey);
    this.#options.events?.publish({ type, platform, chatId, jobId, ...(error ? { error } : {}) });
  }

  async #recordFailure(entry: OutboxEntry, thrown: unknown): Promise<void> {
    const { outbox, clock, logger } = this.#options;
    const error = toError(thrown);
    const now = clock.now();
    const where = { outbox: entry.dedupeKey, chat: entry.chatId, attempt: entry.attempts + 1 };
    if (error instanceof ChatPlatformError && !error.retryable) {
      await outbox.markFailed(entry.id, error.message, now);
      this.#publish("message.refused", entry, error.message);
      logger.error(
        { ...where, error: error.message },
        "reply refused by the platform; not retried",
      );
      return;
    }
    const retryAfterMs =
      error instanceof ChatPlatformError && error.retryAfterS ? error.retryAfterS * 1000 : 0;
    if (retryAfterMs > 0) this.holdChat(entry.chatId, now + retryAfterMs);
    const retryAt = now + retryDelayMs(entry.attempts + 1, { retryAfterMs });
    await outbox.markRetry(entry.id, error.message, retryAt, now);
    logger.warn({ ...where, error: error.message, retryAt }, "reply not delivered; will retry");
  }
}
