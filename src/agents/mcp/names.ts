/**
 * How MCP tools look to the model and to AGENT.md: `mcp:<server>` and
 * `mcp:<server>/<tool>` in an agent's tool list, `<server>__<tool>` as the model-facing
 * name (cut to the API's 64 characters with a short hash), and input schemas cleaned of
 * what the Anthropic API refuses.
 */
import { hashedCode } from "../../base/short-code.js";
import { closestMatch, MCP_SERVER_NAME_PATTERN } from "../../config/index.js";

/** What prefixes an MCP entry of an agent's tool list. */
export const MCP_PREFIX = "mcp:";

/** Longest tool name the Messages API takes. */
const MAX_TOOL_NAME = 64;

/** Characters the API allows in a tool name. */
const TOOL_NAME_CHARACTER = /[^a-zA-Z0-9_-]/g;

/** The server of `mcp:*`: every configured server. */
export const EVERY_MCP_SERVER = "*";

/** One `mcp:` entry of an agent's tool list: a whole server, one of its tools, or `*`. */
export interface McpSelector {
  server: string;
  /** Undefined: every tool the server offers. */
  tool?: string;
}

/** The selector an agent's tool-list entry names, or null when it is not an `mcp:` entry. */
export function parseMcpSelector(entry: string): McpSelector | null {
  if (!entry.startsWith(MCP_PREFIX)) return null;
  const rest = entry.slice(MCP_PREFIX.length);
  const slash = rest.indexOf("/");
  if (slash === -1) return { server: rest };
  return { server: rest.slice(0, slash), tool: rest.slice(slash + 1) };
}

/** Why an `mcp:` entry is malformed, or null when its shape is right. */
export function mcpSelectorProblem(selector: McpSelector): string | null {
  if (selector.server === EVERY_MCP_SERVER) {
    return selector.tool === undefined ? null : "mcp:* names every server; drop the /<tool>";
  }
  if (!MCP_SERVER_NAME_PATTERN.test(selector.server)) {
    return `"${selector.server}" is not a server name; write mcp:<server>, mcp:<server>/<tool> or mcp:*`;
  }
  if (selector.tool === "") return "the tool name after / is empty; write mcp:<server>/<tool>";
  return null;
}

/**
 * The model-facing name of `tool` of `server`: `<server>__<tool>`, characters the API
 * refuses replaced by `_`, and when longer than 64 characters cut to 57 plus `_` and a
 * 6-character hash of the full name, so two long names stay apart.
 */
export function mcpToolName(server: string, tool: string): string {
  const full = `${server}__${tool}`.replace(TOOL_NAME_CHARACTER, "_");
  if (full.length <= MAX_TOOL_NAME && full === `${server}__${tool}`) return full;
  const hash = hashedCode(`${server}__${tool}`, 6);
  return `${full.slice(0, MAX_TOOL_NAME - hash.length - 1)}_${hash}`;
}

/** JSON Schema keywords the Messages API refuses or that only describe the document. */
const DROPPED_KEYWORDS = new Set(["$schema", "$id", "$comment"]);

/**
 * The input schema sent to the model: `$schema`, `$id` and `$comment` removed at every
 * level, and always an object schema (`type: "object"`, `properties` present) as the API
 * requires of a tool's input.
 */
export function cleanInputSchema(schema: unknown): Record<string, unknown> {
  const cleaned = stripKeywords(schema);
  const object = isRecord(cleaned) ? cleaned : {};
  return { ...object, type: "object", properties: object.properties ?? {} };
}

function stripKeywords(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(stripKeywords);
  if (!isRecord(value)) return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([key]) => !DROPPED_KEYWORDS.has(key))
      .map(([key, inner]) => [key, stripKeywords(inner)]),
  );
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * The `mcp:` entries of an agent's tool list and approvals that name no configured server,
 * as one error naming the agent's file, each entry (with the closest configured name) and
 * the fix; null when all are known.
 */
export function unknownMcpServersProblem(
  agent: { source: string; tools: readonly string[]; approvals: Readonly<Record<string, unknown>> },
  configured: readonly string[],
): string | null {
  const problems = [
    unknownServersIn("tools", agent.tools, configured),
    unknownServersIn("approvals", Object.keys(agent.approvals), configured),
  ].filter((problem) => problem !== null);
  if (problems.length === 0) return null;
  const known = configured.length > 0 ? configured.join(", ") : "none";
  return (
    `${agent.source}: ${problems.join("; ")} (configured: ${known}); ` +
    "add the server there or correct the entry"
  );
}

function unknownServersIn(
  field: string,
  entries: readonly string[],
  configured: readonly string[],
): string | null {
  const unknown = entries.flatMap((entry) => {
    const selector = parseMcpSelector(entry);
    if (selector === null || selector.server === EVERY_MCP_SERVER) return [];
    if (configured.includes(selector.server)) return [];
    const match = closestMatch(selector.server, configured);
    const rest = entry.slice(`${MCP_PREFIX}${selector.server}`.length);
    return [`"${entry}"${match ? ` (did you mean "${MCP_PREFIX}${match}${rest}"?)` : ""}`];
  });
  if (unknown.length === 0) return null;
  return (
    `${field}: ${unknown.join(", ")} name${unknown.length === 1 ? "s" : ""} ` +
    "no server of mcp_servers in picklebot.yaml"
  );
}
