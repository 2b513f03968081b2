/**
 * The shape of an approval policy, shared by picklebot.yaml (`approvals.policy`, the
 * default) and AGENT.md (`approvals`, an agent's own), and its validation. Deciding a call
 * against a policy is `src/agents/approval-policy.ts`.
 *
 * ```yaml
 * approvals:
 *   bash: ask                  # every bash call asks the owner
 *   web_fetch: deny
 *   write:                     # file tools may decide by path, first match wins
 *     "notes/**": allow
 *     "**": ask
 *   "mcp:github": ask          # every tool of an MCP server…
 *   "mcp:github/get_issue": allow   # …or one of them (the more specific entry wins)
 * ```
 *
 * The tool names come from the agents' tool registry, which this layer cannot import: the
 * caller passes them as {@link PolicyTools} (without them, any tool name is taken and any
 * tool may have path rules, as `agentIds` are unchecked when not given).
 */
import { z } from "zod";
import type { CustomIssueParams } from "./issues.js";
import { didYouMean } from "./suggest.js";

/** What a policy says of a tool call: run it, ask the owner first, or refuse it. */
export type ApprovalAction = "allow" | "ask" | "deny";

/** Every {@link ApprovalAction}, in the order messages list them. */
export const APPROVAL_ACTIONS: readonly ApprovalAction[] = ["allow", "ask", "deny"];

/** One path rule of a file tool: a workspace-relative glob and what a match gets. */
export interface PathRule {
  pattern: string;
  action: ApprovalAction;
}

/** A tool's entry: one action for every call, or (file tools) path rules in order. */
export type ToolApproval = ApprovalAction | readonly PathRule[];

/** Tool name to entry; a tool not listed is allowed. */
export type ApprovalPolicy = Readonly<Record<string, ToolApproval>>;

/** The tools a policy may name, and which of them take path rules. */
export interface PolicyTools {
  names: readonly string[];
  /** Tools whose input has a workspace-relative `path` (read, write, edit). */
  fileTools: readonly string[];
}

/** Seconds an unanswered approval request waits before it counts as Deny. */
export const DEFAULT_APPROVAL_TIMEOUT_S = 60 * 60;

/**
 * The schema of a policy: a mapping of tool name to action or (file tools) to a mapping of
 * glob to action, turned into an {@link ApprovalPolicy}. Every bad entry is one issue at
 * its key (`approvals.bash`, `approvals.write.notes/**`).
 *
 * YAML mappings keep their order, except that keys which are whole numbers (`"2024"`)
 * come first in JavaScript objects; quote-free globs such as `2024/**` are unaffected.
 */
export function approvalPolicySchema(tools?: PolicyTools) {
  return z
    .record(z.string(), z.unknown())
    .describe("a mapping of tool name to allow, ask or deny")
    .transform((raw, ctx): ApprovalPolicy => {
      const policy: Record<string, ToolApproval> = {};
      for (const [tool, value] of Object.entries(raw)) {
        const problem = toolProblem(tool, tools);
        const entry = problem === null ? toolApproval(tool, value, tools, ctx) : null;
        if (problem !== null) issue(ctx, [tool], problem);
        if (entry !== null) policy[tool] = entry;
      }
      return policy;
    });
}

/** A policy entry for an MCP server's tools (`mcp:github`) or one of them (`mcp:github/x`). */
const MCP_POLICY_ENTRY = /^mcp:([a-z0-9][a-z0-9_-]*)(\/.+)?$/;

/** The server an `mcp:<server>` or `mcp:<server>/<tool>` policy entry names, else null. */
export function mcpPolicyServer(entry: string): string | null {
  return MCP_POLICY_ENTRY.exec(entry)?.[1] ?? null;
}

function toolProblem(tool: string, tools: PolicyTools | undefined): string | null {
  if (!tools || tools.names.includes(tool) || MCP_POLICY_ENTRY.test(tool)) return null;
  if (tool.startsWith("mcp:")) {
    const lower = tool.replace(/^mcp:[^/]*/, (server) => server.toLowerCase());
    const suggestion = MCP_POLICY_ENTRY.test(lower) ? `did you mean "${lower}"? ` : "";
    return `is not an MCP entry; ${suggestion}write mcp:<server> or mcp:<server>/<tool> with a server name of mcp_servers (lower case)`;
  }
  const suggestion = didYouMean(tool, tools.names);
  return `unknown tool${suggestion ? `; ${suggestion}` : ""} (known: ${tools.names.join(", ")})`;
}

function toolApproval(
  tool: string,
  value: unknown,
  tools: PolicyTools | undefined,
  ctx: z.RefinementCtx,
): ToolApproval | null {
  const fileTool = tools?.fileTools.includes(tool) ?? true;
  if (isAction(value)) return value;
  if (fileTool && typeof value === "object" && value !== null && !Array.isArray(value)) {
    return pathRules(tool, value as Record<string, unknown>, ctx);
  }
  const alternative = fileTool
    ? ", or a mapping of path glob to one of those"
    : typeof value === "object" && value !== null
      ? ` (path globs are for ${tools?.fileTools.join(", ")} only)`
      : "";
  issue(ctx, [tool], `must be allow, ask or deny${alternative}; found ${shown(value)}`);
  return null;
}

function pathRules(
  tool: string,
  globs: Record<string, unknown>,
  ctx: z.RefinementCtx,
): PathRule[] | null {
  const rules: PathRule[] = [];
  for (const [pattern, action] of Object.entries(globs)) {
    const problem = isAction(action)
      ? globProblem(pattern)
      : `must be allow, ask or deny; found ${shown(action)}`;
    if (problem === null) rules.push({ pattern, action: action as ApprovalAction });
    else issue(ctx, [tool, pattern], problem);
  }
  if (rules.length === 0 && Object.keys(globs).length === 0) {
    issue(ctx, [tool], 'has no path rules; add one such as "**": ask, or write an action');
  }
  return rules.length === Object.keys(globs).length ? rules : null;
}

/** A glob that could never match a workspace path is refused rather than ignored. */
function globProblem(pattern: string): string | null {
  if (pattern === "") return 'is an empty glob; use "**" for every path';
  if (pattern.startsWith("/") || /^[A-Za-z]:/.test(pattern)) {
    return "is an absolute path; globs are relative to the workspace (notes/**)";
  }
  if (pattern.split("/").includes("..")) {
    return 'leaves the workspace with ".."; globs match paths inside it only';
  }
  return null;
}

function isAction(value: unknown): value is ApprovalAction {
  return APPROVAL_ACTIONS.includes(value as ApprovalAction);
}

function shown(value: unknown): string {
  if (value === null || value === undefined) return "an empty value";
  if (Array.isArray(value)) return "a list";
  if (typeof value === "object") return "a mapping";
  return JSON.stringify(value);
}

function issue(ctx: z.RefinementCtx, path: string[], message: string): void {
  ctx.addIssue({
    code: "custom",
    path,
    message,
    params: { standalone: true } satisfies CustomIssueParams,
  });
}
