import { type FSWatcher, mkdirSync, watch } from "node:fs";
import { PicklebotError, toError } from "../../base/errors.js";

/** A running folder watch; `close` stops it and drops a pending notification. */
export interface FolderWatch {
  close(): void;
}

/**
 * Calls `onChange` once things settle after files in `dir` were added, changed, renamed or
 * removed: events closer together than `debounceMs` (editors write a file in several steps)
 * produce one call. Creates `dir` when missing, so crons dropped in later are seen.
 * Debouncing uses real timers: it is about file-system event bursts, not the schedule.
 *
 * `onError` gets a {@link PicklebotError}: retryable when the watch failed (a new watch
 * may work: the watcher limit, a folder replaced), not retryable when `dir` is missing
 * and cannot be created (a read-only workspace: no crons, and watching again cannot help).
 */
export function watchFolder(
  dir: string,
  debounceMs: number,
  onChange: () => void,
  onError: (error: Error) => void,
): FolderWatch {
  let pending: NodeJS.Timeout | undefined;
  let watcher: FSWatcher | undefined;
  const notify = (): void => {
    clearTimeout(pending);
    pending = setTimeout(onChange, debounceMs);
  };
  const fail = (thrown: unknown, doing: string, retryable: boolean) => {
    const message = `cannot ${doing} ${dir}: ${toError(thrown).message}`;
    onError(new PicklebotError(message, { cause: thrown, retryable }));
  };
  try {
    mkdirSync(dir, { recursive: true });
  } catch (error) {
    fail(error, "create", false);
    return { close: () => undefined };
  }
  try {
    watcher = watch(dir, notify);
    watcher.on("error", (error) => {
      watcher?.close();
      fail(error, "watch", true);
    });
  } catch (error) {
    fail(error, "watch", true);
  }
  return {
    close(): void {
      clearTimeout(pending);
      watcher?.close();
    },
  };
}
