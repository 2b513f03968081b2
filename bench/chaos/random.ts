/** A seeded pseudo-random source (mulberry32), so a chaos run can be replayed by its seed. */
export class Random {
  #state: number;

  constructor(seed: number) {
    this.#state = seed >>> 0;
  }

  /** A number in [0, 1). */
  next(): number {
    this.#state = (this.#state + 0x6d2b79f5) >>> 0;
    let t = this.#state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  }

  /** A whole number in [0, count). */
  integer(count: number): number {
    return Math.floor(this.next() * count);
  }

  /** A number in [low, high). */
  between(low: number, high: number): number {
    return low + this.next() * (high - low);
  }

  /** True with probability `p`. */
  chance(p: number): boolean {
    return this.next() < p;
  }

  /** One of `choices`, each with its weight. */
  pick<T>(choices: ReadonlyArray<readonly [T, number]>): T {
    const total = choices.reduce((sum, [, weight]) => sum + weight, 0);
    let left = this.next() * total;
    for (const [choice, weight] of choices) {
      left -= weight;
      if (left < 0) return choice;
    }
    const last = choices.at(-1);
    if (!last) throw new Error("pick from no choices");
    return last[0];
  }
}
