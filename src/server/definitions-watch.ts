/**
 * The DefinitionsWorker: loads the agents and skills again when their files change, while
 * the server runs (docs/guides/agents.md, "Agents and skills change while the server runs").
 *
 *   run(signal) ──► load once (changes made while nothing watched: a restart) ──► watch
 *                     │   agents/ and skills/, at any depth
 *                     ├─► files changed (debounced) ──► load, log what changed
 *                     ├─► a watch fails ──► crash (the supervisor restarts the run, which
 *                     │                       loads and watches again)
 *                     └─► signal aborted ──► close the watches
 *
 * Loading refills the catalog (agents/catalog.ts): running turns keep the definitions they
 * started with, the next turn of each agent uses the new ones, and a broken AGENT.md
 * fails closed (its agent does not run) until it is fixed. Each change is logged once:
 * agents added, changed, removed; skills changed; a broken file; a listing over budget.
 */
import { join } from "node:path";
import type { AgentCatalog, ListingSettings } from "../agents/catalog.js";
import { isRetryable, toError } from "../base/errors.js";
import { watchFolder } from "../base/folder-watch.js";
import type { Logger } from "../base/log.js";
import { checkNumberOptions } from "../base/options.js";
import type { Worker } from "../ports/index.js";

/** The log line of each load done while running: tests and operators wait for it. */
export const DEFINITIONS_RELOADED = "agents and skills reloaded";

/** The folders watched, relative to the workspace. */
const WATCHED_FOLDERS = ["agents", "skills"] as const;

/** Options of {@link DefinitionsWorker}. */
export interface DefinitionsWorkerOptions {
  catalog: AgentCatalog;
  /** The workspace, its skill listing budget and `default_agent`. */
  settings: ListingSettings;
  logger: Logger;
  /** Called after a load that added or removed an agent. (Default: nothing) */
  onAgentsChanged?: () => void;
  /** Quiet time after a change before loading. (Default: 200 ms) */
  reloadDebounceMs?: number;
  /** Watches a folder for changes. (Default: {@link watchFolder}) */
  watch?: typeof watchFolder;
}

/** Reloads the catalog when `agents/` or `skills/` change. */
export class DefinitionsWorker implements Worker {
  readonly name = "definitions";
  readonly #options: DefinitionsWorkerOptions;

  constructor(options: DefinitionsWorkerOptions) {
    checkNumberOptions("DefinitionsWorker", options, { reloadDebounceMs: "non-negative" });
    this.#options = options;
  }

  /** Runs until `signal` aborts; rejects (a crash) when a watch fails. */
  async run(signal: AbortSignal): Promise<void> {
    if (signal.aborted) return;
    const { settings, logger, reloadDebounceMs = 200, watch = watchFolder } = this.#options;
    let crash: (error: Error) => void = () => undefined;
    const crashed = new Promise<void>((_, reject) => {
      crash = reject;
    });
    const stopped = new Promise<void>((resolve) => {
      signal.addEventListener("abort", () => resolve(), { once: true });
    });
    const reload = () => {
      try {
        this.#reload();
      } catch (error) {
        crash(toError(error));
      }
    };
    reload();
    const watches = WATCHED_FOLDERS.map((folder) => {
      const dir = join(settings.workspace, folder);
      const onError = (error: Error) => {
        if (isRetryable(error)) crash(error);
        else
          logger.warn({ dir, err: error }, `cannot watch ${folder}/; restart to pick up changes`);
      };
      return watch(dir, reloadDebounceMs, reload, onError, { recursive: true });
    });
    try {
      await Promise.race([stopped, crashed]);
    } finally {
      for (const folderWatch of watches) folderWatch.close();
    }
  }

  /** Loads the catalog again and logs what is new. */
  #reload(): void {
    const { catalog, settings, logger } = this.#options;
    const changes = catalog.load();
    for (const error of changes.errors) {
      logger.error({ file: error.context.file, key: error.context.key }, error.message);
    }
    for (const warning of catalog.warnings(settings)) logger.warn(warning);
    const { added, changed, removed, skills } = changes;
    if (added.length + removed.length > 0) this.#options.onAgentsChanged?.();
    if (added.length + changed.length + removed.length + skills.length === 0) return;
    logger.info(
      {
        added,
        changed,
        removed,
        skills,
        agents: catalog.agents.size,
        broken: [...catalog.broken.keys()],
      },
      DEFINITIONS_RELOADED,
    );
  }
}
