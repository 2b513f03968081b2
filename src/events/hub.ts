/**
 * The event stream inside one server process: publishers hand events to the hub, the hub
 * numbers them, keeps the latest in a ring buffer (for `since`, an SSE client's resume) and
 * hands each to every subscriber through the subscriber's own bounded queue. Publishing
 * never waits and never throws: a slow subscriber loses the overflow, counted.
 */
import type {
  EventFeed,
  EventSink,
  NewEvent,
  PicklebotEvent,
  Unsubscribe,
} from "../ports/index.js";

/** Events kept for `since` (an SSE client's `Last-Event-ID` resume). */
const DEFAULT_BUFFER_SIZE = 1_000;
/** Events queued for one subscriber that has not finished the previous ones. */
const DEFAULT_SUBSCRIBER_QUEUE = 1_000;

/** What an {@link EventHub} is made with. */
export interface EventHubOptions {
  /** The instance id stamped on every event (`local` outside distributed mode). */
  instance: string;
  /** Events kept for `since`. (Default: 1,000) */
  bufferSize?: number;
  /** Events queued per subscriber before the overflow is dropped. (Default: 1,000) */
  subscriberQueue?: number;
  /** Told how many events a subscriber just lost (the `picklebot_events_dropped_total` metric). */
  onDropped?: (count: number) => void;
  /**
   * Also hands each event published here (not relayed ones) to the cluster's relay, so
   * other instances' streams show it. (Default: none)
   */
  forward?: (event: PicklebotEvent) => void;
  /** The clock for `at` when the publisher does not set it. (Default: Date.now) */
  now?: () => number;
}

/** A listener of the hub; a returned promise holds back the next event until it settles. */
export type EventListener = (event: PicklebotEvent) => void | Promise<void>;

/**
 * The process's {@link EventSink} and {@link EventFeed}: a ring buffer plus one bounded
 * queue per subscriber, drained asynchronously so `publish` costs a few array pushes.
 */
export class EventHub implements EventSink, EventFeed {
  readonly #instance: string;
  readonly #bufferSize: number;
  readonly #queueBound: number;
  readonly #onDropped: (count: number) => void;
  readonly #now: () => number;
  readonly #forward: (event: PicklebotEvent) => void;
  readonly #buffer: PicklebotEvent[] = [];
  readonly #subscribers = new Set<Subscriber>();
  #seq = 0;
  #dropped = 0;

  constructor(options: EventHubOptions) {
    this.#instance = options.instance;
    this.#bufferSize = Math.max(1, options.bufferSize ?? DEFAULT_BUFFER_SIZE);
    this.#queueBound = Math.max(1, options.subscriberQueue ?? DEFAULT_SUBSCRIBER_QUEUE);
    this.#onDropped = options.onDropped ?? (() => {});
    this.#now = options.now ?? Date.now;
    this.#forward = options.forward ?? (() => {});
  }

  /** Events dropped so far because a subscriber's queue was full. */
  get dropped(): number {
    return this.#dropped;
  }

  /** Subscriptions open now (connected `/events` clients, among others). */
  get subscriberCount(): number {
    return this.#subscribers.size;
  }

  /** The `seq` of the latest event (0 before the first). */
  get lastSeq(): number {
    return this.#seq;
  }

  /** Numbers, buffers and hands the event to every subscriber; never waits, never throws. */
  publish(event: NewEvent): void {
    const appended = this.#append({
      at: this.#now(),
      ...event,
      instance: this.#instance,
      seq: this.#seq + 1,
    } as PicklebotEvent);
    if (!appended) return;
    try {
      this.#forward(appended);
    } catch {
      // The relay reports its own failures; a publisher never sees them.
    }
  }

  /**
   * Adds an event that happened on another instance (distributed mode): it keeps its
   * `instance` and `at`, and gets this stream's next `seq`.
   */
  relay(event: Omit<PicklebotEvent, "seq">): void {
    this.#append({ ...event, seq: this.#seq + 1 } as PicklebotEvent);
  }

  /**
   * Adds an event numbered by another hub, `seq` and all: the `/events` fan-out process
   * keeps a copy of the server's stream this way.
   */
  mirror(event: PicklebotEvent): void {
    this.#append(event);
  }

  since(after: number): PicklebotEvent[] {
    const first = this.#buffer.findIndex((event) => event.seq > after);
    return first === -1 ? [] : this.#buffer.slice(first);
  }

  subscribe(listener: EventListener): Unsubscribe {
    const subscriber: Subscriber = { listener, queue: [], draining: false, closed: false };
    this.#subscribers.add(subscriber);
    return () => {
      subscriber.closed = true;
      subscriber.queue.length = 0;
      this.#subscribers.delete(subscriber);
    };
  }

  #append(event: PicklebotEvent): PicklebotEvent | null {
    try {
      this.#seq = event.seq;
      this.#buffer.push(event);
      if (this.#buffer.length > this.#bufferSize) this.#buffer.shift();
      for (const subscriber of this.#subscribers) this.#offer(subscriber, event);
      return event;
    } catch {
      // A publisher must never fail because of the stream.
      return null;
    }
  }

  #offer(subscriber: Subscriber, event: PicklebotEvent): void {
    if (subscriber.queue.length >= this.#queueBound) {
      this.#dropped += 1;
      this.#onDropped(1);
      return;
    }
    subscriber.queue.push(event);
    if (!subscriber.draining) {
      subscriber.draining = true;
      queueMicrotask(() => void this.#drain(subscriber));
    }
  }

  async #drain(subscriber: Subscriber): Promise<void> {
    while (!subscriber.closed) {
      const event = subscriber.queue.shift();
      if (!event) break;
      try {
        // Only a listener that returned a promise is waited for (no await per event).
        const pending = subscriber.listener(event);
        if (pending) await pending;
      } catch {
        subscriber.closed = true;
        this.#subscribers.delete(subscriber);
      }
    }
    subscriber.draining = false;
  }
}

/** One subscription: its listener and the events it has not been handed yet. */
interface Subscriber {
  listener: EventListener;
  queue: PicklebotEvent[];
  draining: boolean;
  closed: boolean;
}
