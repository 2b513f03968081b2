/**
 * A refusal only the owner can fix (a credential a service refused, a setting it will not
 * take), as a running server tells it:
 *
 *   refused(message) ─► new: logged once as an error; the same again: debug only
 *                       (the service is still tried, the log does not repeat itself)
 *   current          ─► the message, for `/healthz`, the dashboard and `picklebot status`
 *   end()            ─► the service accepted (or failed otherwise): a later refusal is new
 */
import type { Logger } from "./log.js";

/** One service's refusal, logged once and remembered until it ends. */
export class Refusal {
  readonly #logger: Logger;
  #current: string | null = null;

  constructor(logger: Logger) {
    this.#logger = logger;
  }

  /** What is refused, with the owner's fix; null when nothing is. */
  get current(): string | null {
    return this.#current;
  }

  /**
   * Records a refusal: `message` says what was refused and the fix (never a secret), `what`
   * is the log line. Logged unless it repeats the refusal already recorded.
   */
  refused(message: string, what: string, fields: Record<string, unknown> = {}): void {
    const repeated = message === this.#current;
    this.#current = message;
    this.#logger[repeated ? "debug" : "error"]({ ...fields, error: message }, what);
  }

  /** The refusal is over. */
  end(): void {
    this.#current = null;
  }
}
