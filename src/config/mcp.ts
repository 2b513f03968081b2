/**
 * `mcp_servers:` of picklebot.yaml: a map from a server's name to how to reach it, over
 * stdio (a command picklebot starts) or streamable HTTP (a URL). The name prefixes its
 * tools (`github__create_issue`), so it must be valid in a tool name.
 *
 * ```yaml
 * mcp_servers:
 *   github:
 *     command: npx
 *     args: [-y, some-mcp-server]
 *     env: { GITHUB_TOKEN: "${GITHUB_TOKEN}" }
 *     exclude: [delete_repository]
 *   files:
 *     url: http://127.0.0.1:9000/mcp
 *     headers: { Authorization: "Bearer ${FILES_TOKEN}" }
 *     call_timeout_ms: 30000
 * ```
 */
import { z } from "zod";
import type { CustomIssueParams } from "./issues.js";

/** A server name: what prefixes its tools, so only what a tool name may hold, and no `__`. */
export const MCP_SERVER_NAME_PATTERN = /^(?!.*__)[a-z0-9][a-z0-9_-]{0,31}$/;

/** How long one MCP tool call may take, unless the server's entry says otherwise. */
export const DEFAULT_MCP_CALL_TIMEOUT_MS = 60_000;

const toolList = z.array(z.string().min(1)).min(1).describe("a list of the server's tool names");
const stringMap = z.record(z.string(), z.string()).describe("a mapping of names to strings");

/** Every key of an entry; which ones a form may use is checked after. */
const serverFields = z.strictObject({
  /** stdio: the program to start; it speaks MCP on its stdin and stdout. */
  command: z.string().min(1).optional(),
  args: z.array(z.string()).optional(),
  /** stdio: the server's whole environment besides PATH, HOME and LANG. */
  env: stringMap.optional(),
  /** stdio: working folder, relative to the workspace. (Default: the workspace) */
  cwd: z.string().min(1).optional(),
  /** stdio: run it in bubblewrap like `bash`. (Default: `tools.bash.sandbox`) */
  sandbox: z.enum(["bwrap", "none"]).optional(),
  /** HTTP: the server's streamable HTTP endpoint. */
  url: z
    .url({ protocol: /^https?$/ })
    .describe("an http:// or https:// URL")
    .optional(),
  /** HTTP: sent with every request, e.g. `Authorization: "Bearer ${TOKEN}"`. */
  headers: stringMap.optional(),
  /** Only these tools of the server are offered to agents. (Default: every tool) */
  include: toolList.optional(),
  /** These tools of the server are never offered. (Default: none) */
  exclude: toolList.optional(),
  /** Milliseconds one tool call may take before it fails. */
  call_timeout_ms: z
    .int()
    .positive()
    .describe("a whole number of milliseconds, at least 1")
    .default(DEFAULT_MCP_CALL_TIMEOUT_MS),
});

const serverSchema = serverFields.superRefine(checkForm).transform(toServerConfig);

/** Keys only a stdio server takes, and only an HTTP one. */
const STDIO_KEYS = ["args", "env", "cwd", "sandbox"] as const;
const HTTP_KEYS = ["headers"] as const;

type ServerFields = z.output<typeof serverFields>;

function checkForm(server: ServerFields, ctx: z.RefinementCtx): void {
  const stdio = server.command !== undefined;
  if (stdio === (server.url !== undefined)) {
    addIssue(
      ctx,
      [],
      stdio
        ? "has both command and url; keep command (stdio) or url (streamable HTTP)"
        : "needs a command (a stdio server) or a url (a streamable HTTP server)",
    );
    return;
  }
  const foreign = stdio ? HTTP_KEYS : STDIO_KEYS;
  for (const key of foreign) {
    if (server[key] === undefined) continue;
    const form = stdio ? "a stdio server (command)" : "an HTTP server (url)";
    addIssue(ctx, [key], `not a setting of ${form}; remove it`);
  }
}

function toServerConfig(server: ServerFields): McpServerConfig {
  const common = {
    ...(server.include === undefined ? {} : { include: server.include }),
    ...(server.exclude === undefined ? {} : { exclude: server.exclude }),
    call_timeout_ms: server.call_timeout_ms,
  };
  if (server.url !== undefined) {
    return { url: server.url, headers: server.headers ?? {}, ...common };
  }
  return {
    command: server.command ?? "",
    args: server.args ?? [],
    env: server.env ?? {},
    ...(server.cwd === undefined ? {} : { cwd: server.cwd }),
    ...(server.sandbox === undefined ? {} : { sandbox: server.sandbox }),
    ...common,
  };
}

/** Settings both forms take. */
interface CommonServerConfig {
  include?: string[];
  exclude?: string[];
  call_timeout_ms: number;
}

/** One stdio server's settings. */
export interface McpStdioServerConfig extends CommonServerConfig {
  command: string;
  args: string[];
  env: Record<string, string>;
  cwd?: string;
  sandbox?: "bwrap" | "none";
}

/** One streamable HTTP server's settings. */
export interface McpHttpServerConfig extends CommonServerConfig {
  url: string;
  headers: Record<string, string>;
}

/** One server's settings: stdio when it has a `command`, HTTP when it has a `url`. */
export type McpServerConfig = McpStdioServerConfig | McpHttpServerConfig;

/** The schema of `mcp_servers`: server name to settings; names must fit in tool names. */
export function mcpServersSchema() {
  return z
    .record(z.string(), serverSchema)
    .describe("a mapping of server name to its command or url")
    .default({})
    .superRefine((servers, ctx) => {
      for (const name of Object.keys(servers)) {
        if (MCP_SERVER_NAME_PATTERN.test(name)) continue;
        addIssue(
          ctx,
          [name],
          "not a valid server name; use up to 32 lower-case letters, digits, - and _ " +
            "(no __), since it prefixes the server's tool names",
        );
      }
    });
}

function addIssue(ctx: z.RefinementCtx, path: PropertyKey[], message: string): void {
  ctx.addIssue({
    code: "custom",
    path,
    message,
    params: { standalone: true } satisfies CustomIssueParams,
  });
}

/** True when the server is started by picklebot over stdio. */
export function isStdioServer(server: McpServerConfig): server is McpStdioServerConfig {
  return "command" in server;
}

/** A server's secrets: the values of its `env` (stdio) or `headers` (HTTP). */
export function mcpServerSecrets(server: McpServerConfig): string[] {
  return Object.values(isStdioServer(server) ? server.env : server.headers);
}
