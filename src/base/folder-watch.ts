import { type FSWatcher, mkdirSync, watch } from "node:fs";
import { PicklebotError, toError } from "./errors.js";

/** A running folder watch; `close` stops it and drops a pending notification. */
export interface FolderWatch {
  close(): void;
}

/** Options of {@link watchFolder}. */
export interface FolderWatchOptions {
  /**
   * Also watch the folders inside `dir`, at any depth (`agents/<id>/AGENT.md`,
   * `skills/<name>/SKILL.md`). (Default: false, only the files directly in `dir`)
   */
  recursive?: boolean;
}

/**
 * Calls `onChange` once things settle after files in `dir` were added, changed, renamed or
 * removed: events closer together than `debounceMs` (editors write a file in several steps)
 * produce one call. Creates `dir` when missing, so files dropped in later are seen (crons,
 * agents, skills).
 * Debouncing uses real timers: it is about file-system event bursts, not the schedule.
 *
 * `onError` gets a {@link PicklebotError}: retryable when the watch failed (a new watch
 * may work: the watcher limit, a folder replaced), not retryable when `dir` is missing
 * and cannot be created (a read-only workspace: nothing to watch, and watching again cannot help).
 */
export function watchFolder(
  dir: string,
  debounceMs: number,
  onChange: () => void,
  onError: (error: Error) => void,
  options: FolderWatchOptions = {},
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
    watcher = watch(dir, { recursive: options.recursive ?? false }, notify);
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
