/**
 * The workspace's MCP servers while the server runs, and what becomes of an edit of
 * picklebot.yaml. The servers are built from `mcp_servers` at start; whenever the file
 * changes it is loaded again and compared, key by key, with what the server runs:
 *
 *   mcp_servers changed ─► taken at once (hot reload), without touching running jobs:
 *                          removed and changed servers are stopped, new ones start on
 *                          first use
 *   any other key       ─► named in the log as needing a restart (the server keeps running
 *                          with the value it started with), at each edit until restarted
 *   does not load       ─► logged; everything stays as it was
 *
 * One line per edit, e.g. "picklebot.yaml changed: telegram.bot_token, http.port need a
 * restart; mcp_servers reloaded". Keys only, never values (they may be secrets).
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { type AgentNames, mcpToolReferences } from "../agents/mcp/references.js";
import { type McpServers, mcpServersOf } from "../agents/mcp/servers.js";
import { toError } from "../base/errors.js";
import { type FolderWatch, watchFolder } from "../base/folder-watch.js";
import type { Logger } from "../base/log.js";
import { type Config, changedKeys, configFileOf, loadConfig } from "../config/index.js";

/** Quiet time after the last file event before picklebot.yaml is read again. */
const RELOAD_DEBOUNCE_MS = 200;

/** The one section a running server takes from an edited picklebot.yaml. */
const RELOADED_KEY = "mcp_servers";

/** The MCP servers of a running server, and the watch that reloads them. */
export interface McpRuntime {
  servers: McpServers;
  /** Stops the watch and every server (stdio process groups are killed). */
  stop(): Promise<void>;
}

/** What {@link startMcpRuntime} needs. */
export interface McpRuntimeOptions {
  workspace: string;
  config: Config;
  logger: Logger;
  /**
   * The agents as they are now, whose names of MCP tools are checked when a server lists
   * its tools. (Default: none)
   */
  agents?: () => Iterable<AgentNames>;
  /** The environment `${NAME}` is taken from on reload. (Default: process.env) */
  env?: NodeJS.ProcessEnv;
}

/** Builds the servers (none starts yet) and watches picklebot.yaml for changes. */
export function startMcpRuntime(options: McpRuntimeOptions): McpRuntime {
  const { workspace, logger } = options;
  const file = configFileOf(workspace);
  const name = path.basename(file);
  /** What the server runs: the config it started with, and the MCP servers last taken. */
  let running = options.config;
  const servers = mcpServersOf(workspace, running, {
    log: logger,
    toolReferences: () => mcpToolReferences(running, options.agents?.() ?? [], file),
  });
  let lastText = readText(file);
  const reload = (): void => {
    const text = readText(file);
    if (text === lastText) return;
    lastText = text;
    let next: Config;
    try {
      next = loadConfig(workspace, options.env ?? process.env);
    } catch (thrown) {
      logger.error(
        { error: toError(thrown).message },
        `${name} changed but does not load; everything stays as it was`,
      );
      return;
    }
    const changed = changedKeys(running, next);
    const restart = changed.filter((key) => !isReloaded(key));
    const reloaded = changed.length > restart.length;
    running = { ...running, mcp_servers: next.mcp_servers };
    const told = { restart, ...(reloaded ? { servers: Object.keys(next.mcp_servers) } : {}) };
    const tell = () =>
      logger[restart.length > 0 ? "warn" : "info"](
        told,
        `${name} changed: ${describeChanges(restart, reloaded)}`,
      );
    if (reloaded) void servers.reconfigure(next.mcp_servers).then(tell);
    else tell();
  };
  const watch: FolderWatch = watchFolder(workspace, RELOAD_DEBOUNCE_MS, reload, (error: Error) =>
    logger.warn(
      { error: error.message },
      `cannot watch ${name}; MCP servers reload on restart only`,
    ),
  );
  return {
    servers,
    async stop() {
      watch.close();
      await servers.stop();
    },
  };
}

function isReloaded(key: string): boolean {
  return key === RELOADED_KEY || key.startsWith(`${RELOADED_KEY}.`);
}

/** "telegram.bot_token, http.port need a restart; mcp_servers reloaded", and shorter. */
function describeChanges(restart: string[], reloaded: boolean): string {
  const parts = [
    ...(restart.length === 0
      ? []
      : [`${restart.join(", ")} ${restart.length === 1 ? "needs" : "need"} a restart`]),
    ...(reloaded ? [`${RELOADED_KEY} reloaded`] : []),
  ];
  return parts.length === 0 ? "no setting changed" : parts.join("; ");
}

function readText(file: string): string | null {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return null;
  }
}
