/**
 * Waiting jobs in claim order (earliest run time, then arrival), for the memory queue.
 * Most entries arrive already in order (a new job is due now and arrived last), so they go
 * to a plain FIFO in O(1); the rest (delayed jobs, retries, a session's next job) go to a
 * heap. `pop` takes the smaller of the two fronts.
 */
import { MinHeap } from "./heap.js";

/** Something to run at `runAt`, the `seq`-th to arrive. */
export interface RunOrderEntry {
  runAt: number;
  seq: number;
}

function before(a: RunOrderEntry, b: RunOrderEntry): boolean {
  return a.runAt < b.runAt || (a.runAt === b.runAt && a.seq < b.seq);
}

/** A priority queue of entries by (runAt, seq). */
export class RunOrder<T extends RunOrderEntry> {
  readonly #heap = new MinHeap<T>(before);
  #fifo: T[] = [];
  #fifoStart = 0;

  /** Adds an entry. */
  push(entry: T): void {
    const last = this.#fifo[this.#fifo.length - 1];
    if (this.#fifoStart === this.#fifo.length || (last && !before(entry, last))) {
      this.#fifo.push(entry);
    } else {
      this.#heap.push(entry);
    }
  }

  /** The first entry, left in place. */
  peek(): T | undefined {
    const queued = this.#fifo[this.#fifoStart];
    const heaped = this.#heap.peek();
    if (!queued) return heaped;
    return heaped && before(heaped, queued) ? heaped : queued;
  }

  /** Removes and returns the first entry. */
  pop(): T | undefined {
    const queued = this.#fifo[this.#fifoStart];
    const heaped = this.#heap.peek();
    if (!queued || (heaped && before(heaped, queued))) return this.#heap.pop();
    this.#fifoStart += 1;
    if (this.#fifoStart === this.#fifo.length) {
      this.#fifo = [];
      this.#fifoStart = 0;
    } else if (this.#fifoStart > 1024 && this.#fifoStart * 2 > this.#fifo.length) {
      this.#fifo = this.#fifo.slice(this.#fifoStart);
      this.#fifoStart = 0;
    }
    return queued;
  }

  /** Every entry, in no particular order. */
  *values(): Iterable<T> {
    for (let index = this.#fifoStart; index < this.#fifo.length; index += 1) {
      yield this.#fifo[index] as T;
    }
    yield* this.#heap.values();
  }
}
