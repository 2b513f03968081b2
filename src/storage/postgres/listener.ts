/**
 * A dedicated connection that LISTENs on one channel, outside the pool (a pooled
 * connection would be handed to other queries), and reconnects when it is lost.
 *
 *   connecting ──LISTEN ok──► listening ──error / end──► waiting (backoff) ──► connecting
 *   every (re)connection calls onListening: notifications sent while it was down are lost.
 *   A lost connection, and a handler (onNotify, onListening) that threw, go to onError;
 *   neither is thrown into pg's event handlers (that would be an uncaught exception).
 */

import pg from "pg";
import { toError } from "../../base/errors.js";
import { checkNumberOptions } from "../../base/options.js";

/** Options of {@link PgListener}. */
export interface PgListenerOptions {
  /** Connection settings (`connectionConfig` of ./database.ts). */
  config: pg.ClientConfig;
  /** The channel name: letters, digits and `_` only. */
  channel: string;
  /** Receives each notification's payload. */
  onNotify: (payload: string) => void;
  /** Called once listening, after the first connection and after every reconnection. */
  onListening: () => void;
  /** Reports a lost connection (the listener retries on its own) or a handler that threw. */
  onError?: (error: Error) => void;
  /** First delay before reconnecting, doubled up to 5 s. (Default: 100 ms) */
  reconnectMs?: number;
}

const MAX_RECONNECT_MS = 5000;

/** Keeps one LISTEN connection open until {@link close}. */
export class PgListener {
  readonly #options: PgListenerOptions;
  #client: pg.Client | null = null;
  #closed = false;
  #delay: number;
  #timer: NodeJS.Timeout | null = null;

  constructor(options: PgListenerOptions) {
    if (!/^\w+$/.test(options.channel)) throw new Error(`bad channel name ${options.channel}`);
    checkNumberOptions("PgListener", options, { reconnectMs: "positive" });
    this.#options = options;
    this.#delay = options.reconnectMs ?? 100;
  }

  /** Connects in the background; failures are retried with backoff. */
  start(): void {
    void this.#connect();
  }

  /** Stops listening and closes the connection. */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    const client = this.#client;
    this.#client = null;
    await client?.end().catch(() => undefined);
  }

  async #connect(): Promise<void> {
    if (this.#closed) return;
    const client = new pg.Client(this.#options.config);
    this.#client = client;
    let lost = false;
    const onLost = (error?: Error) => {
      if (lost) return;
      lost = true;
      if (error) this.#options.onError?.(error);
      client.end().catch(() => undefined);
      if (this.#client === client) this.#client = null;
      this.#scheduleReconnect();
    };
    client.on("error", onLost);
    client.on("end", () => onLost());
    client.on("notification", (message) =>
      this.#guard(() => this.#options.onNotify(message.payload ?? "")),
    );
    try {
      await client.connect();
      await client.query(`LISTEN ${this.#options.channel}`);
    } catch (error) {
      onLost(toError(error));
      return;
    }
    if (this.#closed) {
      await client.end().catch(() => undefined);
      return;
    }
    this.#delay = this.#options.reconnectMs ?? 100;
    this.#guard(this.#options.onListening);
  }

  /** Runs a handler; what it throws is reported, never thrown into pg's event loop. */
  #guard(handler: () => void): void {
    try {
      handler();
    } catch (error) {
      this.#options.onError?.(toError(error));
    }
  }

  #scheduleReconnect(): void {
    if (this.#closed) return;
    const delay = this.#delay;
    this.#delay = Math.min(this.#delay * 2, MAX_RECONNECT_MS);
    this.#timer = setTimeout(() => void this.#connect(), delay);
    this.#timer.unref();
  }
}
