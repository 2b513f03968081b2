import { type FSWatcher, mkdirSync, watch } from "node:fs";
import { toError } from "../../base/errors.js";

/** A running folder watch; `close` stops it and drops a pending notification. */
export interface FolderWatch {
  close(): void;
}

/**
 * Calls `onChange` once things settle after files in `dir` were added, changed, renamed or
 * removed: events closer together than `debounceMs` (editors write a file in several steps)
 * produce one call. Creates `dir` when missing, so crons dropped in later are seen.
 * Debouncing uses real timers: it is about file-system event bursts, not the schedule.
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
  try {
    mkdirSync(dir, { recursive: true });
    watcher = watch(dir, notify);
    watcher.on("error", (error) => {
      watcher?.close();
      onError(toError(error));
    });
  } catch (error) {
    onError(toError(error));
  }
  return {
    close(): void {
      clearTimeout(pending);
      watcher?.close();
    },
  };
}
