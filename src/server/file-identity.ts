/**
 * Notices that the files a server opened are no longer the ones at their paths: the
 * database deleted (`rm -rf history/`), replaced, or moved away. A process keeps writing
 * into an unlinked file without an error, and a deleted lock file lets a second server
 * start; so the server compares each file's device and inode with the ones it opened.
 */
import { statSync } from "node:fs";

/** How often the files are checked: one `stat` each, cheap enough to do every few seconds. */
export const FILE_CHECK_INTERVAL_MS = 2000;

/** Watches files for being deleted or replaced; calls `onLost` once with the reason. */
export class FileIdentityWatch {
  readonly #files: { path: string; id: string }[];
  readonly #onLost: (reason: string) => void;
  readonly #intervalMs: number;
  #timer: NodeJS.Timeout | null = null;

  /** Records the identity of each file now; each must exist. */
  constructor(
    paths: string[],
    onLost: (reason: string) => void,
    intervalMs = FILE_CHECK_INTERVAL_MS,
  ) {
    this.#files = paths.map((path) => ({ path, id: identity(path) ?? "" }));
    this.#onLost = onLost;
    this.#intervalMs = intervalMs;
  }

  start(): void {
    this.#timer = setInterval(() => this.#check(), this.#intervalMs);
    this.#timer.unref();
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
  }

  /** The reason the first changed file is no longer the one opened, or null. */
  check(): string | null {
    for (const { path, id } of this.#files) {
      const now = identity(path);
      if (now === null) return `${path} was deleted while the server had it open`;
      if (now !== id) return `${path} was replaced by another file while the server had it open`;
    }
    return null;
  }

  #check(): void {
    const reason = this.check();
    if (reason === null) return;
    this.stop();
    this.#onLost(reason);
  }
}

function identity(path: string): string | null {
  try {
    const stats = statSync(path);
    return `${stats.dev}:${stats.ino}`;
  } catch {
    return null;
  }
}
