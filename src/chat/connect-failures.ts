/**
 * How a chat platform's failed logins and polls are told, the same way for every adapter:
 *
 *   a transient failure (network, 5xx, 429) ─► a warning each time, with its retry
 *   a refusal (not retryable: a bot token,  ─► a {@link Refusal}: an error once, saying
 *     an intent; only the owner can fix it)     what to do, then quiet while it repeats;
 *                                               {@link ConnectFailures.refusal} holds it
 *   connected                               ─► the refusal is over
 *
 * A refused login is still tried again with the backoff (up to a minute apart), so a token
 * the platform accepts again is picked up without a restart; the log does not repeat.
 */
import { ChatPlatformError, toError } from "../base/errors.js";
import type { Logger } from "../base/log.js";
import { Refusal } from "../base/refusal.js";

/** The failures of one platform's connection, and the refusal it is under, if any. */
export class ConnectFailures {
  readonly #logger: Logger;
  readonly #refusal: Refusal;

  constructor(logger: Logger) {
    this.#logger = logger;
    this.#refusal = new Refusal(logger);
  }

  /** Why the platform refuses the login, with the owner's fix; null when it does not. */
  get refusal(): string | null {
    return this.#refusal.current;
  }

  /**
   * Tells of one failure, `what` naming it ("telegram: could not connect"); `error` must
   * already be free of the token.
   */
  failed(error: unknown, what: string, retryInMs: number): void {
    const message = toError(error).message;
    if (error instanceof ChatPlatformError && !error.retryable) {
      this.#refusal.refused(message, what, { retryInMs });
      return;
    }
    this.#refusal.end();
    this.#logger.warn({ error: message, retryInMs }, what);
  }

  /** The platform connected: any refusal is over. */
  connected(): void {
    this.#refusal.end();
  }
}
