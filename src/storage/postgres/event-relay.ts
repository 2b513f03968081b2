/**
 * The event stream across a cluster: each instance sends its events on one notification
 * channel that every instance LISTENs on, and adds the others' events to its own stream.
 *
 *   send(event) ─► queued (bounded) ─► one pg_notify per packet of events (a JSON array
 *   under NOTIFY's 8,000-byte payload limit), in order, one packet at a time
 *   a notification ─► each event to `receive`
 *
 * Sending never waits for the database: a full queue (PostgreSQL down or slow) drops the
 * newest events, reported to `onError` once per outage.
 */
import type pg from "pg";
import { toError } from "../../base/errors.js";
import type { EventRelay, PicklebotEvent } from "../../ports/index.js";
import { PgListener } from "./listener.js";

/** The channel that carries the cluster's events. */
const EVENTS_CHANNEL = "picklebot_events";
/** Bytes of one notification's payload, under PostgreSQL's limit of 8,000. */
export const MAX_PAYLOAD_BYTES = 7_800;
/** Characters of an event's `error` kept when the event is carried. */
const MAX_ERROR_CHARS = 1_000;
/** Events waiting to be sent before newer ones are dropped. */
const MAX_QUEUED = 10_000;

const NOTIFY = `SELECT pg_notify('${EVENTS_CHANNEL}', $1)`;

/** Options of {@link PostgresEventRelay}. */
export interface EventRelayOptions {
  /** The pool from `openPostgres`; never closed here. */
  pool: pg.Pool;
  /** Settings of the LISTEN connection (`connectionConfig`). */
  connection: pg.ClientConfig;
}

/** The {@link EventRelay} of PostgreSQL mode. */
export class PostgresEventRelay implements EventRelay {
  readonly #options: EventRelayOptions;
  readonly #queued: string[] = [];
  #listener: PgListener | null = null;
  #onError: (error: Error) => void = () => {};
  #sending: Promise<void> | null = null;
  #dropping = false;

  constructor(options: EventRelayOptions) {
    this.#options = options;
  }

  send(event: PicklebotEvent): void {
    if (this.#queued.length >= MAX_QUEUED) {
      if (!this.#dropping) this.#onError(new Error("cluster event queue full; dropping events"));
      this.#dropping = true;
      return;
    }
    this.#queued.push(carried(event));
    this.#sending ??= this.#flush();
  }

  start(receive: (event: PicklebotEvent) => void, onError: (error: Error) => void): void {
    this.#onError = onError;
    this.#listener = new PgListener({
      config: this.#options.connection,
      channel: EVENTS_CHANNEL,
      onNotify: (payload) => {
        for (const event of JSON.parse(payload) as PicklebotEvent[]) receive(event);
      },
      onListening: () => undefined,
      onError,
    });
    this.#listener.start();
  }

  async close(): Promise<void> {
    await this.#sending;
    await this.#listener?.close();
  }

  /** Sends the queue as packets until it is empty. */
  async #flush(): Promise<void> {
    // Let the events of this tick gather into one packet.
    await new Promise((resolve) => setImmediate(resolve));
    try {
      while (this.#queued.length > 0) {
        const packet = takePacket(this.#queued);
        await this.#options.pool.query(NOTIFY, [packet]);
        this.#dropping = false;
      }
    } catch (error) {
      this.#queued.length = 0;
      this.#onError(toError(error));
    } finally {
      this.#sending = null;
    }
  }
}

/** An event as carried: its `seq` left out (each stream numbers its own), `error` shortened. */
export function carried(event: PicklebotEvent): string {
  const { seq: _seq, ...fields } = event;
  const error = "error" in fields ? fields.error : undefined;
  if (typeof error === "string" && error.length > MAX_ERROR_CHARS) {
    return JSON.stringify({ ...fields, error: `${error.slice(0, MAX_ERROR_CHARS)}…` });
  }
  return JSON.stringify(fields);
}

/** Takes the longest run of queued events whose JSON array fits one payload. */
function takePacket(queued: string[]): string {
  let bytes = 2;
  let count = 0;
  for (const item of queued) {
    const size = Buffer.byteLength(item) + 1;
    if (count > 0 && bytes + size > MAX_PAYLOAD_BYTES) break;
    bytes += size;
    count += 1;
  }
  return `[${queued.splice(0, count).join(",")}]`;
}
