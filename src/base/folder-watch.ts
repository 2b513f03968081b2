/**
 * The folder watch behind the crons, the agents and skills, and picklebot.yaml: one
 * non-recursive `fs.watch` per folder, re-armed from a fresh look at the folder after
 * every burst of events.
 *
 * Why not `fs.watch(dir, { recursive: true })`: on Linux, Node 20 emulates it with one
 * watch per file, and a file replaced by a rename (`sed -i`, vim, `git checkout`, rsync)
 * is reported once and then never again. A folder's own watch reports every entry
 * written, created, renamed or removed in it, whatever happens to the files.
 *
 *   start ──► look (folders, fingerprint) ──► watch each folder
 *     ├─► an event ──► debounce ──► look again, re-arm the watches, onChange
 *     ├─► every pollMs ──► look again: fingerprint changed ──► debounce (as above)
 *     │     (a backstop for what no event reports: the watched folder itself replaced or
 *     │      re-linked, file systems without events)
 *     ├─► a watch fails ──► close all, onError (retryable)
 *     └─► close ──► close all, drop a pending notification
 */
import { type FSWatcher, mkdirSync, readdirSync, type Stats, statSync, watch } from "node:fs";
import { join } from "node:path";
import { PicklebotError, toError } from "./errors.js";

/** A running folder watch; `close` stops it and drops a pending notification. */
export interface FolderWatch {
  close(): void;
}

/** Options of {@link watchFolder}. */
export interface FolderWatchOptions {
  /**
   * Also watch the folders inside `dir`, at any depth (`agents/<id>/AGENT.md`,
   * `skills/<name>/SKILL.md`); dot-folders are skipped, as the loaders skip them.
   * (Default: false, only the files directly in `dir`)
   */
  recursive?: boolean;
  /**
   * How often the folder is compared with its last look, for changes no event reported.
   * (Default: 3000 ms)
   */
  pollMs?: number;
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
  try {
    mkdirSync(dir, { recursive: true });
  } catch (error) {
    const message = `cannot create ${dir}: ${toError(error).message}`;
    onError(new PicklebotError(message, { cause: error, retryable: false }));
    return { close: () => undefined };
  }
  return new FolderWatcher(dir, debounceMs, onChange, onError, options);
}

/** One folder's watch and the inode it was made on (a new inode: the folder was replaced). */
interface ArmedWatch {
  watcher: FSWatcher;
  ino: number;
}

/** What a look at the folder found. */
interface FolderLook {
  /** Every folder to watch (`dir` and, when recursive, those inside), with its inode. */
  folders: Map<string, number>;
  /** Names, inodes, sizes and times of every entry: changes when anything changed. */
  fingerprint: string;
}

/** The watches of one folder (and those inside), the backstop look, the debounce. */
class FolderWatcher implements FolderWatch {
  readonly #armed = new Map<string, ArmedWatch>();
  readonly #poll: NodeJS.Timeout;
  #pending: NodeJS.Timeout | undefined;
  #lastFingerprint: string;
  #closed = false;

  constructor(
    private readonly dir: string,
    private readonly debounceMs: number,
    private readonly onChange: () => void,
    private readonly onError: (error: Error) => void,
    private readonly options: FolderWatchOptions,
  ) {
    this.#lastFingerprint = this.#rearm();
    this.#poll = setInterval(() => this.#compare(), options.pollMs ?? 3000);
    this.#poll.unref();
    if (this.#closed) clearInterval(this.#poll); // the first watch already failed
  }

  close(): void {
    this.#closed = true;
    clearTimeout(this.#pending);
    clearInterval(this.#poll);
    for (const { watcher } of this.#armed.values()) watcher.close();
    this.#armed.clear();
  }

  #notify = (): void => {
    clearTimeout(this.#pending);
    this.#pending = setTimeout(this.#settled, this.debounceMs);
  };

  #settled = (): void => {
    this.#lastFingerprint = this.#rearm();
    if (!this.#closed) this.onChange();
  };

  #compare(): void {
    if (this.#rearm() !== this.#lastFingerprint) this.#notify();
  }

  /** Looks at the folder, watches what is new or replaced, drops what is gone. */
  #rearm(): string {
    const look = lookAt(this.dir, this.options.recursive ?? false);
    for (const [folder, armed] of this.#armed) {
      if (look.folders.get(folder) === armed.ino) continue;
      armed.watcher.close();
      this.#armed.delete(folder);
    }
    for (const [folder, ino] of look.folders) {
      if (this.#closed) break;
      if (!this.#armed.has(folder)) this.#arm(folder, ino);
    }
    return look.fingerprint;
  }

  #arm(folder: string, ino: number): void {
    let watcher: FSWatcher;
    try {
      watcher = watch(folder, this.#notify);
    } catch (error) {
      if (isGone(error)) return; // removed since the look: its parent's event follows
      this.#fail(error);
      return;
    }
    watcher.on("error", (error) => this.#fail(error));
    this.#armed.set(folder, { watcher, ino });
  }

  #fail(thrown: unknown): void {
    if (this.#closed) return;
    this.close();
    const message = `cannot watch ${this.dir}: ${toError(thrown).message}`;
    this.onError(new PicklebotError(message, { cause: thrown, retryable: true }));
  }
}

/** The folders under `dir` and its fingerprint; a missing `dir` has neither. */
function lookAt(dir: string, recursive: boolean): FolderLook {
  const folders = new Map<string, number>();
  const visited = new Set<string>(); // device and inode: a linked folder is seen once
  const lines: string[] = [];
  const visit = (folder: string, relative: string): void => {
    const stats = statOf(folder);
    if (!stats?.isDirectory() || visited.has(`${stats.dev}:${stats.ino}`)) return;
    visited.add(`${stats.dev}:${stats.ino}`);
    folders.set(folder, stats.ino);
    lines.push(`${relative}/\t${stats.ino}`);
    for (const name of namesIn(folder)) {
      const path = join(folder, name);
      const entry = statOf(path);
      if (entry === undefined) continue;
      lines.push(`${relative}/${name}\t${entry.ino}\t${entry.size}\t${entry.mtimeMs}`);
      if (recursive && entry.isDirectory() && !name.startsWith(".")) {
        visit(path, `${relative}/${name}`);
      }
    }
  };
  visit(dir, ".");
  return { folders, fingerprint: lines.join("\n") };
}

/** The entries of `folder`, sorted; none when it cannot be read (gone, no permission). */
function namesIn(folder: string): string[] {
  try {
    return readdirSync(folder).sort();
  } catch {
    return [];
  }
}

/** The entry's stats, following links; undefined when it is gone or cannot be read. */
function statOf(path: string): Stats | undefined {
  try {
    return statSync(path);
  } catch {
    return undefined;
  }
}

function isGone(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException).code;
  return code === "ENOENT" || code === "ENOTDIR";
}
