/**
 * The workspace's MCP servers while the server runs: built from `mcp_servers` at start,
 * and taken again from picklebot.yaml whenever the file changes (hot reload), without a
 * restart and without touching running jobs: removed and changed servers are stopped,
 * new ones start on first use. A picklebot.yaml that no longer loads is logged and the
 * servers stay as they were.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { type AgentNames, mcpToolReferences } from "../agents/mcp/references.js";
import { type McpServers, mcpServersOf } from "../agents/mcp/servers.js";
import { toError } from "../base/errors.js";
import { type FolderWatch, watchFolder } from "../base/folder-watch.js";
import type { Logger } from "../base/log.js";
import { type Config, configFileOf, loadConfig } from "../config/index.js";

/** Quiet time after the last file event before picklebot.yaml is read again. */
const RELOAD_DEBOUNCE_MS = 200;

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
  let config = options.config;
  const servers = mcpServersOf(workspace, config, {
    log: logger,
    toolReferences: () => mcpToolReferences(config, options.agents?.() ?? [], file),
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
        `${path.basename(file)} changed but does not load; MCP servers stay as they were`,
      );
      return;
    }
    config = next;
    void servers
      .reconfigure(next.mcp_servers)
      .then(() =>
        logger.info({ servers: servers.names }, "MCP servers reloaded from picklebot.yaml"),
      );
  };
  const watch: FolderWatch = watchFolder(workspace, RELOAD_DEBOUNCE_MS, reload, (error: Error) =>
    logger.warn(
      { error: error.message },
      "cannot watch picklebot.yaml; MCP servers reload on restart only",
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

function readText(file: string): string | null {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return null;
  }
}
