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

const commonFields = {
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
};

const stdioServerSchema = z.strictObject({
  /** The program to start; it speaks MCP on its stdin and stdout. */
  command: z.string().min(1),
  args: z.array(z.string()).default([]),
  /** The server's whole environment besides PATH, HOME and LANG: nothing else is passed. */
  env: z.record(z.string(), z.string()).default({}),
  /** Working folder, relative to the workspace. (Default: the workspace) */
  cwd: z.string().min(1).optional(),
  /** Run it in bubblewrap like `bash`. (Default: `tools.bash.sandbox`) */
  sandbox: z.enum(["bwrap", "none"]).optional(),
  ...commonFields,
});

const httpServerSchema = z.strictObject({
  /** The server's streamable HTTP endpoint. */
  url: z.url({ protocol: /^https?$/ }).describe("an http:// or https:// URL"),
  /** Sent with every request, e.g. `Authorization: "Bearer ${TOKEN}"`. */
  headers: z.record(z.string(), z.string()).default({}),
  ...commonFields,
});

/** One stdio server's settings. */
export type McpStdioServerConfig = z.output<typeof stdioServerSchema>;
/** One streamable HTTP server's settings. */
export type McpHttpServerConfig = z.output<typeof httpServerSchema>;
/** One server's settings: stdio when it has a `command`, HTTP when it has a `url`. */
export type McpServerConfig = McpStdioServerConfig | McpHttpServerConfig;

/** The schema of `mcp_servers`: each entry is one of the two forms, checked by its keys. */
export function mcpServersSchema() {
  return z
    .record(z.string(), z.unknown())
    .describe("a mapping of server name to its command or url")
    .default({})
    .transform((raw, ctx): Record<string, McpServerConfig> => {
      const servers: Record<string, McpServerConfig> = {};
      for (const [name, value] of Object.entries(raw)) {
        if (!MCP_SERVER_NAME_PATTERN.test(name)) {
          addIssue(
            ctx,
            [name],
            "not a valid server name; use up to 32 lower-case letters, digits, - and _ " +
              "(no __), since it prefixes the server's tool names",
          );
          continue;
        }
        const server = parseServer(name, value, ctx);
        if (server) servers[name] = server;
      }
      return servers;
    });
}

function parseServer(name: string, value: unknown, ctx: z.RefinementCtx): McpServerConfig | null {
  const fields = typeof value === "object" && value !== null ? value : {};
  const hasCommand = "command" in fields;
  const hasUrl = "url" in fields;
  if (hasCommand === hasUrl) {
    addIssue(
      ctx,
      [name],
      hasCommand
        ? "has both command and url; keep command (stdio) or url (streamable HTTP)"
        : "needs a command (a stdio server) or a url (a streamable HTTP server)",
    );
    return null;
  }
  const schema = hasCommand ? stdioServerSchema : httpServerSchema;
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  for (const issue of result.error.issues) {
    ctx.addIssue({ ...issue, path: [name, ...issue.path] } as z.core.$ZodRawIssue);
  }
  return null;
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
