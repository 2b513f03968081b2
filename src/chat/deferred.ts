/**
 * The chat frontend of a platform this process cannot send to, in a cluster (PostgreSQL
 * mode) whose servers differ in their chat platforms (see
 * docs/decisions/cluster-replies-without-platform.md).
 *
 * A reply's life: nothing shows while the agent works (no typing, no streaming: this
 * process has no client of the platform); finish() and fail() put the final text in the
 * shared outbox as a pending entry, keyed by the job like every chat reply, and resolve:
 * the job is done. The leader's retry loop of that platform delivers it, once, and retries
 * it until the platform confirms it.
 */

import type { Logger } from "../base/log.js";
import type {
  ChatPlatformKind,
  Clock,
  Frontend,
  OutboxAddress,
  OutboxStore,
  ReplyContext,
  ReplyStream,
  ReplyTarget,
} from "../ports/index.js";
import { failureText, finalText, replyAddress } from "./frontend.js";

/** Options of {@link DeferredChatFrontend}. */
export interface DeferredChatFrontendOptions {
  /** The platform whose chats this frontend serves without sending to them. */
  kind: ChatPlatformKind;
  outbox: OutboxStore;
  clock: Clock;
  logger: Logger;
}

/** A {@link Frontend} that leaves every reply in the outbox for a process with the platform. */
export class DeferredChatFrontend implements Frontend {
  readonly kind: ChatPlatformKind;
  readonly #options: DeferredChatFrontendOptions;

  constructor(options: DeferredChatFrontendOptions) {
    this.#options = options;
    this.kind = options.kind;
  }

  openReply(target: ReplyTarget, context: ReplyContext = {}): ReplyStream {
    return new DeferredReply(this.#options, replyAddress(this.kind, target, context));
  }
}

class DeferredReply implements ReplyStream {
  readonly #options: DeferredChatFrontendOptions;
  readonly #address: OutboxAddress;
  #latest = "";

  constructor(options: DeferredChatFrontendOptions, address: OutboxAddress) {
    this.#options = options;
    this.#address = address;
  }

  typing(): void {}

  update(textSoFar: string): void {
    this.#latest = textSoFar;
  }

  toolCall(): void {}

  finish(text: string): Promise<void> {
    return this.#submit(finalText(text));
  }

  fail(message: string): Promise<void> {
    return this.#submit(failureText(this.#latest, message));
  }

  close(): void {}

  async #submit(text: string): Promise<void> {
    const { outbox, clock, logger } = this.#options;
    await outbox.submit(this.#address, text, clock.now());
    logger.debug(
      { outbox: this.#address.dedupeKey, platform: this.#address.platform },
      "the platform is not enabled on this server: the reply waits in the outbox for the leader",
    );
  }
}
