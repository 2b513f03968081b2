/**
 * The MCP servers of a workspace (`mcp_servers:` of picklebot.yaml): one
 * {@link McpConnection} per server, the tools an agent's `mcp:` entries name, a reload of
 * the map while the server runs, and a check of every server for `picklebot mcp list` and
 * `doctor`.
 */
import { ToolError, toError } from "../../base/errors.js";
import { type Logger, silentLogger } from "../../base/log.js";
import { type Config, isStdioServer, type McpServerConfig } from "../../config/index.js";
import type { Tool } from "../../ports/index.js";
import { McpConnection, type McpServerState } from "./connection.js";
import { mcpEndpoint, type StdioSurroundings } from "./endpoint.js";
import {
  cleanInputSchema,
  EVERY_MCP_SERVER,
  type McpSelector,
  mcpToolName,
  parseMcpSelector,
} from "./names.js";
import type { McpListedTool } from "./sdk-session.js";

/** What {@link McpServers} is built with. */
export interface McpServersOptions {
  /** `mcp_servers` of picklebot.yaml. */
  servers: Readonly<Record<string, McpServerConfig>>;
  /** The workspace, sandbox and history folder of stdio servers. */
  surroundings: StdioSurroundings;
  /** Where failures and tool-list changes are logged. (Default: nowhere) */
  log?: Logger;
  /** Milliseconds since an epoch, for the reconnect backoff. (Default: Date.now) */
  now?: () => number;
}

/** One server as `picklebot mcp list` shows it. */
export interface McpServerReport {
  name: string;
  transport: "stdio" | "http";
  state: McpServerState;
  /** Model-facing tool names, when the server could be listed. */
  tools: string[];
  /** Why it cannot be used, when it cannot. */
  error?: string;
}

/** The servers of a workspace, each connected on first use. */
export class McpServers {
  readonly #surroundings: StdioSurroundings;
  readonly #log: Logger;
  readonly #now: (() => number) | undefined;
  readonly #connections = new Map<string, McpConnection>();

  constructor(options: McpServersOptions) {
    this.#surroundings = options.surroundings;
    this.#log = options.log ?? silentLogger();
    this.#now = options.now;
    this.reconfigure(options.servers);
  }

  /** The configured server names. */
  get names(): string[] {
    return [...this.#connections.keys()];
  }

  /**
   * Takes a new `mcp_servers` map (picklebot.yaml changed): removed and changed servers
   * are stopped (calls in flight on them fail), new and changed ones start on first use.
   * Turns that already hold tools of a changed server see their calls fail cleanly.
   */
  reconfigure(servers: Readonly<Record<string, McpServerConfig>>): Promise<void> {
    const stopping: Promise<void>[] = [];
    for (const [name, connection] of this.#connections) {
      const next = servers[name];
      if (next !== undefined && JSON.stringify(next) === JSON.stringify(connection.config))
        continue;
      this.#connections.delete(name);
      stopping.push(connection.stop());
    }
    for (const [name, config] of Object.entries(servers)) {
      if (this.#connections.has(name)) continue;
      this.#connections.set(
        name,
        new McpConnection({
          name,
          config,
          endpoint: () => mcpEndpoint(name, config, this.#surroundings),
          log: this.#log,
          ...(this.#now ? { now: this.#now } : {}),
        }),
      );
    }
    return Promise.all(stopping).then(() => {});
  }

  /**
   * The tools an agent's tool list names through `mcp:` entries, connecting their servers.
   * A server that cannot be used now contributes no tools (its failure is logged once and
   * shown by `picklebot mcp list`); the turn runs with the rest.
   */
  async toolsFor(entries: readonly string[]): Promise<Tool[]> {
    const selectors = entries.flatMap((entry): McpSelector[] => {
      const selector = parseMcpSelector(entry);
      if (selector?.server !== EVERY_MCP_SERVER) return selector ? [selector] : [];
      return this.names.map((server) => ({ server }));
    });
    const byServer = new Map<string, McpSelector[]>();
    for (const selector of selectors) {
      byServer.set(selector.server, [...(byServer.get(selector.server) ?? []), selector]);
    }
    const tools = await Promise.all(
      [...byServer].map(([server, chosen]) => this.#serverTools(server, chosen)),
    );
    return tools.flat();
  }

  async #serverTools(server: string, chosen: McpSelector[]): Promise<Tool[]> {
    const connection = this.#connections.get(server);
    if (!connection) return [];
    let listed: McpListedTool[];
    try {
      listed = await connection.listTools();
    } catch {
      return [];
    }
    const wanted = chosen.some((selector) => selector.tool === undefined)
      ? listed
      : listed.filter((tool) => chosen.some((selector) => selector.tool === tool.name));
    return wanted.map((tool) => mcpTool(connection, tool));
  }

  /**
   * Each server's state as it stands, without connecting one: its tools once listed
   * (`ready`), the reason it failed (`failed`), or none yet (`idle`: not used so far).
   */
  states(): McpServerReport[] {
    return [...this.#connections.values()].map((connection) =>
      reportOf(connection, connection.listedTools ?? [], connection.lastError),
    );
  }

  /** Connects to every server and lists its tools: the state of each, for a person. */
  async report(): Promise<McpServerReport[]> {
    return Promise.all(
      [...this.#connections.values()].map(async (connection) => {
        try {
          return reportOf(connection, await connection.listTools());
        } catch (thrown) {
          return reportOf(connection, [], toError(thrown).message);
        }
      }),
    );
  }

  /** Stops every server (stdio process groups are killed). */
  async stop(): Promise<void> {
    await Promise.all([...this.#connections.values()].map((connection) => connection.stop()));
  }
}

/** The model-facing tool for one tool of a server; `isError` results become errors. */
function mcpTool(connection: McpConnection, listed: McpListedTool): Tool {
  return {
    spec: {
      name: mcpToolName(connection.name, listed.name),
      description: listed.description || `${listed.name} (MCP server ${connection.name})`,
      input_schema: cleanInputSchema(listed.inputSchema),
    },
    policyNames: [`mcp:${connection.name}/${listed.name}`, `mcp:${connection.name}`],
    async run(input, context) {
      const args = typeof input === "object" && input !== null ? input : {};
      let result: Awaited<ReturnType<McpConnection["callTool"]>>;
      try {
        result = await connection.callTool(
          listed.name,
          args as Record<string, unknown>,
          context.signal,
        );
      } catch (thrown) {
        throw new ToolError(toError(thrown).message, { cause: thrown });
      }
      if (result.isError) throw new ToolError(result.text || `${listed.name} failed`);
      return result.text;
    },
  };
}

/** A server's report from the tools it listed, or why it cannot be used. */
function reportOf(
  connection: McpConnection,
  listed: readonly McpListedTool[],
  error?: string,
): McpServerReport {
  return {
    name: connection.name,
    transport: isStdioServer(connection.config) ? "stdio" : "http",
    state: connection.state,
    tools: listed.map((tool) => mcpToolName(connection.name, tool.name)),
    ...(error === undefined ? {} : { error }),
  };
}

/** The MCP servers of a workspace's `mcp_servers` (none started until first used). */
export function mcpServersOf(
  workspace: string,
  config: Pick<Config, "tools" | "history" | "mcp_servers">,
  log?: Logger,
): McpServers {
  return new McpServers({
    servers: config.mcp_servers,
    surroundings: stdioSurroundings(workspace, config),
    ...(log ? { log } : {}),
  });
}

/** What stdio servers of a workspace share, from its picklebot.yaml. */
export function stdioSurroundings(
  workspace: string,
  config: Pick<Config, "tools" | "history">,
): StdioSurroundings {
  return { workspace, sandbox: config.tools.bash.sandbox, historyPath: config.history.path };
}

/** One server's line of {@link checkMcpServers}. */
export interface McpServerCheck {
  server: string;
  ok: boolean;
  /** `3 tools` when ok, else why not. */
  detail: string;
}

/**
 * Connects to each configured server, lists its tools and stops it again: one line per
 * server, for `doctor`. Never throws for a server's failure.
 */
export async function checkMcpServers(
  workspace: string,
  config: Pick<Config, "tools" | "history" | "mcp_servers">,
): Promise<McpServerCheck[]> {
  const registry = mcpServersOf(workspace, config);
  try {
    const reports = await registry.report();
    return reports.map((report) => ({
      server: report.name,
      ok: report.error === undefined,
      detail: report.error ?? `${report.tools.length} tool${report.tools.length === 1 ? "" : "s"}`,
    }));
  } finally {
    await registry.stop();
  }
}
