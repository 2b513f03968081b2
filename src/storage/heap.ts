/** A binary min-heap: `push` and `pop` in O(log n), `peek` in O(1). */
export class MinHeap<T> {
  readonly #items: T[] = [];
  readonly #before: (a: T, b: T) => boolean;

  /** `before(a, b)`: whether `a` comes out before `b`. */
  constructor(before: (a: T, b: T) => boolean) {
    this.#before = before;
  }

  /** Number of items. */
  get size(): number {
    return this.#items.length;
  }

  /** The first item, left in place. */
  peek(): T | undefined {
    return this.#items[0];
  }

  /** Every item, in no particular order. */
  values(): readonly T[] {
    return this.#items;
  }

  /** Adds an item. */
  push(item: T): void {
    const items = this.#items;
    let index = items.length;
    items.push(item);
    while (index > 0) {
      const parent = (index - 1) >> 1;
      const parentItem = items[parent] as T;
      if (!this.#before(item, parentItem)) break;
      items[index] = parentItem;
      index = parent;
    }
    items[index] = item;
  }

  /** Removes and returns the first item. */
  pop(): T | undefined {
    const items = this.#items;
    const first = items[0];
    const last = items.pop();
    if (items.length > 0 && last !== undefined) this.#siftDown(last);
    return first;
  }

  #siftDown(item: T): void {
    const items = this.#items;
    const length = items.length;
    let index = 0;
    for (;;) {
      let child = 2 * index + 1;
      if (child >= length) break;
      const right = child + 1;
      if (right < length && this.#before(items[right] as T, items[child] as T)) child = right;
      const childItem = items[child] as T;
      if (!this.#before(childItem, item)) break;
      items[index] = childItem;
      index = child;
    }
    items[index] = item;
  }
}
