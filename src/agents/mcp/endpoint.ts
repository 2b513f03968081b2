/**
 * Where a configured MCP server is reached: the URL and headers of an HTTP server, or the
 * process of a stdio server. A stdio server gets only PATH, HOME and LANG besides the
 * `env` of its entry (never the server's own environment, which holds picklebot's
 * secrets), and runs inside bubblewrap like `bash` unless its entry or `tools.bash`
 * says `sandbox: none`.
 */
import path from "node:path";
import { UserError } from "../../base/errors.js";
import {
  isStdioServer,
  type McpServerConfig,
  type McpStdioServerConfig,
} from "../../config/index.js";
import {
  BWRAP_HELP,
  bwrapArguments,
  minimalEnvironment,
  probeBubblewrap,
  type SandboxKind,
} from "../tools/sandbox.js";
import type { McpEndpoint } from "./sdk-session.js";

/** What every stdio server of a workspace shares. */
export interface StdioSurroundings {
  /** Absolute workspace path: the default working folder, and what bwrap shows. */
  workspace: string;
  /** `tools.bash.sandbox`: the default of a server's `sandbox`. (Default: "bwrap") */
  sandbox?: SandboxKind;
  /** Absolute history folder, hidden inside bwrap. (Default: `<workspace>/history`) */
  historyPath?: string;
  /** The bwrap executable. (Default: "bwrap" on the PATH) */
  bwrapPath?: string;
}

/**
 * The endpoint of `server`.
 *
 * @throws UserError when the server must run in bwrap and bwrap cannot run here.
 */
export function mcpEndpoint(
  name: string,
  server: McpServerConfig,
  surroundings: StdioSurroundings,
): McpEndpoint {
  if (!isStdioServer(server)) return { kind: "http", url: server.url, headers: server.headers };
  return { kind: "stdio", launch: stdioLaunch(name, server, surroundings) };
}

/** The sandbox a stdio server runs in. */
export function stdioSandbox(server: McpStdioServerConfig, surroundings: StdioSurroundings) {
  return server.sandbox ?? surroundings.sandbox ?? "bwrap";
}

function stdioLaunch(name: string, server: McpStdioServerConfig, surroundings: StdioSurroundings) {
  const { workspace } = surroundings;
  const cwd = path.resolve(workspace, server.cwd ?? ".");
  const env = { ...minimalEnvironment(), ...server.env };
  if (stdioSandbox(server, surroundings) === "none") {
    return { command: server.command, args: server.args, env, cwd };
  }
  const bwrap = surroundings.bwrapPath ?? "bwrap";
  const probe = probeBubblewrap(bwrap);
  if (!probe.usable) {
    throw new UserError(
      `it runs in the bash sandbox (bubblewrap), which cannot run here (${probe.problem}); ` +
        `${BWRAP_HELP}, or set mcp_servers.${name}.sandbox: none`,
      { context: { key: `mcp_servers.${name}` } },
    );
  }
  // bwrap passes its own environment (the minimal one and the server's `env`) through, so
  // the values never appear in a command line, which any local user can read with `ps`.
  const inside = ["env", "-C", cwd];
  const sandboxed = {
    network: true,
    inheritEnvironment: true,
    ...(surroundings.historyPath ? { historyPath: surroundings.historyPath } : {}),
  };
  const args = bwrapArguments(workspace, sandboxed, [...inside, server.command, ...server.args]);
  return { command: bwrap, args, env, cwd: workspace };
}
