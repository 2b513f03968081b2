import type { Clock } from "../ports/index.js";

/**
 * The `onRunnable` side of a queue adapter: its listeners, one coalesced notification per
 * burst of changes, and a timer for the earliest scheduled job so that a delayed job or a
 * retry wakes the worker on time rather than at its next backstop poll.
 *
 *   idle (no listeners) ──subscribe──► active ──last unsubscribe / close──► idle
 *   active: notify() ─► listeners run once in a microtask, however many notify() came
 *           wake timer ─► fires at the earliest future run time ─► notify(), re-armed
 */

/** Longest delay `setTimeout` takes (about 24.8 days). */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Options of {@link RunnableSignal}. */
export interface RunnableSignalOptions {
  clock: Clock;
  /** The earliest run time of a queued job later than `now`, or null when there is none. */
  nextDueAt: (now: number) => number | null;
  /** Called when the first listener arrives (true) and when the last one leaves (false). */
  onActiveChange?: (active: boolean) => void;
}

/** Listeners of a queue's "a job may be runnable" signal. */
export class RunnableSignal {
  readonly #options: RunnableSignalOptions;
  readonly #listeners = new Set<() => void>();
  #notifyPending = false;
  #timer: NodeJS.Timeout | null = null;
  #timerAt = Number.POSITIVE_INFINITY;

  constructor(options: RunnableSignalOptions) {
    this.#options = options;
  }

  /** Whether anyone listens (adapters only watch for changes then). */
  get active(): boolean {
    return this.#listeners.size > 0;
  }

  /** Adds a listener (it must not throw; errors are ignored); returns its removal. */
  subscribe(listener: () => void): () => void {
    const wrapped = () => listener();
    this.#listeners.add(wrapped);
    if (this.#listeners.size === 1) {
      this.#options.onActiveChange?.(true);
      this.rescheduleWake();
    }
    return () => {
      if (!this.#listeners.delete(wrapped) || this.#listeners.size > 0) return;
      this.#clearTimer();
      this.#options.onActiveChange?.(false);
    };
  }

  /** Tells the listeners, once per burst, that a job may have become runnable. */
  notify(): void {
    if (this.#notifyPending || this.#listeners.size === 0) return;
    this.#notifyPending = true;
    queueMicrotask(() => {
      this.#notifyPending = false;
      for (const listener of this.#listeners) {
        try {
          listener();
        } catch {
          // A listener's failure must not stop the others or the queue.
        }
      }
    });
  }

  /** Makes sure the listeners hear no later than `at` (a job scheduled for then). */
  wakeAt(at: number): void {
    if (this.#listeners.size === 0) return;
    if (at <= this.#options.clock.now()) {
      this.notify();
      return;
    }
    if (at < this.#timerAt) this.#armTimer(at);
  }

  /** Re-arms the wake timer for the queue's earliest scheduled job, as stored now. */
  rescheduleWake(): void {
    if (this.#listeners.size === 0) return;
    const at = this.#options.nextDueAt(this.#options.clock.now());
    if (at === null) this.#clearTimer();
    else if (at !== this.#timerAt) this.#armTimer(at);
  }

  /** Drops every listener and timer. */
  close(): void {
    const wasActive = this.#listeners.size > 0;
    this.#listeners.clear();
    this.#clearTimer();
    if (wasActive) this.#options.onActiveChange?.(false);
  }

  #armTimer(at: number): void {
    this.#clearTimer();
    const delay = Math.min(MAX_TIMER_MS, Math.max(0, at - this.#options.clock.now()));
    this.#timerAt = at;
    this.#timer = setTimeout(() => {
      this.#timer = null;
      this.#timerAt = Number.POSITIVE_INFINITY;
      this.notify();
      try {
        this.rescheduleWake();
      } catch {
        // The next due time could not be read (the database is busy or gone): the
        // listeners heard now, and the next notify, wakeAt or worker poll tries again.
      }
    }, delay);
    this.#timer.unref();
  }

  #clearTimer(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    this.#timerAt = Number.POSITIVE_INFINITY;
  }
}
