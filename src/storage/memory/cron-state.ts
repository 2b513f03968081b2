import type { CronState, CronStateStore } from "../../ports/index.js";

/** A {@link CronStateStore} in memory: for tests and the `memory` queue backend. */
export class MemoryCronStateStore implements CronStateStore {
  readonly #states = new Map<string, CronState>();

  async get(id: string): Promise<CronState | null> {
    const state = this.#states.get(id);
    return state === undefined ? null : { ...state };
  }

  async markSeen(id: string, at: number): Promise<void> {
    if (!this.#states.has(id)) {
      this.#states.set(id, { lastFiredAt: null, disabled: false, firstSeenAt: at });
    }
  }

  async recordFired(
    id: string,
    occurrenceMs: number,
    options: { disable: boolean },
  ): Promise<boolean> {
    const state = this.#states.get(id) ?? {
      lastFiredAt: null,
      disabled: false,
      firstSeenAt: occurrenceMs,
    };
    if (state.lastFiredAt !== null && state.lastFiredAt >= occurrenceMs) return false;
    this.#states.set(id, {
      ...state,
      lastFiredAt: occurrenceMs,
      disabled: state.disabled || options.disable,
    });
    return true;
  }
}
