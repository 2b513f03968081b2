/**
 * The MCP servers of a workspace (`mcp_servers:` of picklebot.yaml): one
 * {@link McpConnection} per server, the tools an agent's `mcp:` entries name, a reload of
 * the map while the server runs, and a check of every server for `picklebot mcp list` and
 * `doctor`, with what its listing found wrong (duplicate names, the owner's names of
 * tools it does not have).
 */
import { ToolError, toError } from "../../base/errors.js";
import { type Logger, silentLogger } from "../../base/log.js";
import {
  type Config,
  configFileOf,
  isStdioServer,
  type McpServerConfig,
} from "../../config/index.js";
import type { Tool } from "../../ports/index.js";
import { McpConnection, type McpServerState } from "./connection.js";
import { mcpEndpoint, type StdioSurroundings } from "./endpoint.js";
import type { ListingLimits } from "./listing.js";
import {
  cleanInputSchema,
  EVERY_MCP_SERVER,
  type McpSelector,
  mcpToolName,
  parseMcpSelector,
} from "./names.js";
import {
  type AgentNames,
  type McpToolReference,
  mcpToolReferences,
  unknownToolWarnings,
} from "./references.js";
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
  /** Bounds of one listing of a server's tools. (Default: `LISTING_LIMITS` of listing.ts) */
  listingLimits?: ListingLimits;
  /**
   * The owner's names of servers' tools (approvals, agents' tools, include, exclude), as
   * they are now: each that names no tool is warned about once the server lists its tools.
   * (Default: none)
   */
  toolReferences?: () => readonly McpToolReference[];
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
  /** What its last listing found wrong (a duplicate name, an entry naming no tool), if anything. */
  warnings?: string[];
}

/** The servers of a workspace, each connected on first use. */
export class McpServers {
  readonly #options: McpServersOptions;
  readonly #log: Logger;
  readonly #connections = new Map<string, McpConnection>();
  /** Name clashes between servers already logged, so each is logged once. */
  readonly #loggedClashes = new Set<string>();

  constructor(options: McpServersOptions) {
    this.#options = options;
    this.#log = options.log ?? silentLogger();
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
      if (!this.#connections.has(name)) this.#connections.set(name, this.#connection(name, config));
    }
    return Promise.all(stopping).then(() => {});
  }

  #connection(name: string, config: McpServerConfig): McpConnection {
    const { surroundings, now, listingLimits, toolReferences } = this.#options;
    return new McpConnection({
      name,
      config,
      endpoint: () => mcpEndpoint(name, config, surroundings),
      log: this.#log,
      ...(now ? { now } : {}),
      ...(listingLimits ? { listingLimits } : {}),
      ...(toolReferences
        ? { checkToolNames: (listed) => unknownToolWarnings(name, listed, toolReferences()) }
        : {}),
    });
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
    return this.#onePerName(tools.flat());
  }

  /**
   * The tools with each model-facing name once, the first kept: two servers can make one
   * name (`a_` with `b` and `a` with `_b` are both `a___b`), which the model API refuses.
   * Each such clash is logged once.
   */
  #onePerName(tools: readonly Tool[]): Tool[] {
    const kept = new Map<string, Tool>();
    for (const tool of tools) {
      const first = kept.get(tool.spec.name);
      if (first === undefined) {
        kept.set(tool.spec.name, tool);
        continue;
      }
      const clash =
        `MCP tools ${first.policyNames?.[0]} and ${tool.policyNames?.[0]} are both named ` +
        `"${tool.spec.name}" for the model; picklebot offers the first (rename one server)`;
      if (this.#loggedClashes.has(clash)) continue;
      this.#loggedClashes.add(clash);
      this.#log.warn({ tool: tool.spec.name }, clash);
    }
    return [...kept.values()];
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
  const { warnings } = connection;
  return {
    name: connection.name,
    transport: isStdioServer(connection.config) ? "stdio" : "http",
    state: connection.state,
    tools: listed.map((tool) => mcpToolName(connection.name, tool.name)),
    ...(error === undefined ? {} : { error }),
    ...(warnings.length === 0 ? {} : { warnings: [...warnings] }),
  };
}

/** What {@link mcpServersOf} may give the servers besides the workspace's settings. */
export type McpServersExtras = Pick<McpServersOptions, "log" | "toolReferences">;

/** The MCP servers of a workspace's `mcp_servers` (none started until first used). */
export function mcpServersOf(
  workspace: string,
  config: Pick<Config, "tools" | "history" | "mcp_servers">,
  extras: McpServersExtras = {},
): McpServers {
  return new McpServers({
    servers: config.mcp_servers,
    surroundings: stdioSurroundings(workspace, config),
    ...extras,
  });
}

/**
 * The owner's names of MCP tools in the workspace: picklebot.yaml (`config`, read from
 * its file in `workspace`) and the agents' AGENT.md files.
 */
export function workspaceToolReferences(
  workspace: string,
  config: Pick<Config, "approvals" | "mcp_servers">,
  agents: Iterable<AgentNames>,
): McpToolReference[] {
  return mcpToolReferences(config, agents, configFileOf(workspace));
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
  /** What its listing found wrong (duplicate names, the owner's names of no tool). */
  warnings: string[];
}

/**
 * Connects to each configured server, lists its tools and stops it again: one line per
 * server, for `doctor`, with the names of picklebot.yaml and `agents` that name none of
 * its tools. Never throws for a server's failure.
 */
export async function checkMcpServers(
  workspace: string,
  config: Pick<Config, "tools" | "history" | "mcp_servers" | "approvals">,
  agents: Iterable<AgentNames> = [],
): Promise<McpServerCheck[]> {
  const references = workspaceToolReferences(workspace, config, agents);
  const registry = mcpServersOf(workspace, config, { toolReferences: () => references });
  try {
    const reports = await registry.report();
    return reports.map((report) => ({
      server: report.name,
      ok: report.error === undefined,
      detail: report.error ?? `${report.tools.length} tool${report.tools.length === 1 ? "" : "s"}`,
      warnings: report.warnings ?? [],
    }));
  } finally {
    await registry.stop();
  }
}
