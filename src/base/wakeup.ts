/**
 * A wake-up signal that is never lost: a `notify()` that comes while nobody waits is
 * remembered, and the next `wait()` returns at once.
 */
export class Wakeup {
  #pending = false;
  #resolve: (() => void) | null = null;

  /** Wakes the waiter, or the next one to wait. */
  notify(): void {
    this.#pending = true;
    this.#resolve?.();
  }

  /** Resolves on the next notification, or after `timeoutMs` (a backstop poll). */
  async wait(timeoutMs: number): Promise<void> {
    if (!this.#pending) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, timeoutMs);
        this.#resolve = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.#resolve = null;
    }
    this.#pending = false;
  }
}
