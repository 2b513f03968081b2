/**
 * `/stop` across a cluster. Only the leader receives chat messages, but the chat's running
 * job may be on any process: the relay aborts it here when it runs here, and otherwise
 * sends the session key on a notification channel that every process LISTENs on.
 *
 *   stop(key): running here ─► aborted, true
 *              running on another process (a `running` row) ─► pg_notify, true
 *              running nowhere ─► false
 *   a notification ─► aborts the job of that key if it runs here (else nothing)
 */
import type pg from "pg";
import type { SessionStopper, StopRelay } from "../../ports/index.js";
import { retryOnDisconnect } from "./database.js";
import { PgListener } from "./listener.js";

/** The channel that carries session keys to stop. */
export const STOP_CHANNEL = "picklebot_stop";

/** Options of {@link PostgresStopRelay}. */
export interface StopRelayOptions {
  /** The pool from `openPostgres`; never closed here. */
  pool: pg.Pool;
  /** Settings of the LISTEN connection (`connectionConfig`). */
  connection: pg.ClientConfig;
}

// One statement: the notification goes out only when a job of the key is running.
const NOTIFY_IF_RUNNING = `SELECT pg_notify('${STOP_CHANNEL}', $1)
  FROM jobs WHERE session_key = $1 AND state = 'running' LIMIT 1`;

/** The {@link StopRelay} of PostgreSQL mode. */
export class PostgresStopRelay implements StopRelay {
  readonly #options: StopRelayOptions;
  #listener: PgListener | null = null;

  constructor(options: StopRelayOptions) {
    this.#options = options;
  }

  /** Listens for stops, passing each key to `stopHere`; returns the cluster-wide stopper. */
  start(
    stopHere: (sessionKey: string) => boolean,
    onError: (error: Error) => void,
  ): SessionStopper {
    this.#listener = new PgListener({
      config: this.#options.connection,
      channel: STOP_CHANNEL,
      onNotify: (sessionKey) => void stopHere(sessionKey),
      onListening: () => undefined,
      onError,
    });
    this.#listener.start();
    return {
      stop: async (sessionKey) => {
        if (stopHere(sessionKey)) return true;
        const sent = await retryOnDisconnect(() =>
          this.#options.pool.query(NOTIFY_IF_RUNNING, [sessionKey]),
        );
        return (sent.rowCount ?? 0) > 0;
      },
    };
  }

  /** Stops listening. */
  async close(): Promise<void> {
    await this.#listener?.close();
  }
}
