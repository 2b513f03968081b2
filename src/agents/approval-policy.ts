/**
 * Tool-call approvals, the pure part: which tools a policy may name, an agent's policy
 * over the workspace default, and what a policy decides for one call. The policy's shape
 * and validation are `src/config/approvals.ts` (picklebot.yaml needs them too); the
 * stored requests and "always allow" grants are the `ApprovalStore` port.
 */
import path from "node:path";
import { hashedCode } from "../base/short-code.js";
import type { ApprovalAction, ApprovalPolicy, PolicyTools } from "../config/index.js";
import {
  CONTROL_PLANE_FOLDERS,
  FILE_WRITING_TOOLS,
  TOOL_NAMES,
  TOOLS,
  type ToolName,
} from "./tools/index.js";

export type { ApprovalAction, ApprovalPolicy, PathRule, ToolApproval } from "../config/index.js";

/**
 * Tools named by docs/design.md (§2.2) that the registry may not have yet; a policy may
 * already name them, so that a policy written today keeps working when they arrive.
 */
const COMING_TOOLS = ["subagent"];

/** The tools a policy may name, and the file tools (their input has a `path`). */
export const POLICY_TOOLS: PolicyTools = {
  names: [...new Set<string>([...TOOL_NAMES, ...COMING_TOOLS])],
  fileTools: TOOL_NAMES.filter((name: ToolName) => TOOLS[name].shows.field === "path"),
};

/** The rule a call falls under when nothing in the policy names it. */
const UNLISTED = "*";

/** What a policy says of one call, and the rule that said it. */
export interface ApprovalDecision {
  action: ApprovalAction;
  /**
   * The glob of the path rule that matched (file tools with path rules), else `"*"`: the
   * tool's whole entry, or no entry. An "always allow" is stored under this pattern.
   */
  pattern: string;
}

/** The policy an agent runs under: its own entry for a tool replaces the default's. */
export function agentPolicy(defaults: ApprovalPolicy, own: ApprovalPolicy): ApprovalPolicy {
  return { ...defaults, ...own };
}

/**
 * What `policy` decides for a call of `toolName` with `input`. An unlisted tool, and a
 * file-tool path no rule matches, are allowed (picklebot's behaviour without a policy).
 *
 * Paths are matched workspace-relative and normalised (`./a//b` is `a/b`); an absolute
 * path inside `workspace` is made relative first. A path that leaves the workspace
 * (`..`, an absolute path elsewhere, or no path at all) is matched as it is and only by
 * the glob `**`: a relative glob such as `*` or `notes/**` says nothing about places
 * outside the workspace, while `**` is the rule the owner wrote for every path. The file
 * tool refuses such a path anyway; the policy just never lets it slip past an `ask`.
 */
export function decide(
  policy: ApprovalPolicy,
  toolName: string,
  input: unknown,
  workspace?: string,
): ApprovalDecision {
  const entry = Object.hasOwn(policy, toolName) ? policy[toolName] : undefined;
  if (entry === undefined) return { action: "allow", pattern: UNLISTED };
  if (typeof entry === "string") return { action: entry, pattern: UNLISTED };
  const target = workspacePath(input, workspace);
  const rule = entry.find(({ pattern }) => globMatches(pattern, target));
  return rule ? { ...rule } : { action: "allow", pattern: UNLISTED };
}

/** A write to the control plane: the folder (`crons`) and the workspace-relative path. */
export interface ControlPlaneTarget {
  folder: string;
  path: string;
}

/**
 * The control-plane folder (`agents`, `crons`, `skills`) a write or edit call targets by
 * its path as given, or null. The file tools refuse such a write unless the gate grants
 * it; symlinks into those folders are refused by the tools whatever the gate says.
 */
export function controlPlaneTarget(
  toolName: string,
  input: unknown,
  workspace?: string,
): ControlPlaneTarget | null {
  if (!FILE_WRITING_TOOLS.includes(toolName as ToolName)) return null;
  const target = workspacePath(input, workspace);
  if (!target.inside) return null;
  const folder = CONTROL_PLANE_FOLDERS.find((name) => target.path.split("/")[0] === name);
  return folder === undefined ? null : { folder, path: target.path };
}

/**
 * True when a path rule names the control-plane `folder` itself (`crons/**`,
 * `crons/*.yaml`): only such a rule lifts the protection, never `**`, `*` or a tool's
 * whole entry, so a broad rule written for notes does not open the control plane.
 */
export function ruleNamesFolder(pattern: string, folder: string): boolean {
  return pattern === folder || pattern.startsWith(`${folder}/`);
}

/** A path inside the workspace as matched, or null when the input's path leaves it. */
type MatchedPath = { inside: true; path: string } | { inside: false };

function workspacePath(input: unknown, workspace: string | undefined): MatchedPath {
  const raw = (input as { path?: unknown } | null)?.path;
  if (typeof raw !== "string" || raw === "") return { inside: false };
  const posix = raw.replaceAll("\\", "/");
  const relative =
    workspace && path.posix.isAbsolute(posix)
      ? path.posix.relative(workspace.replaceAll("\\", "/"), posix)
      : posix;
  const normal = path.posix.normalize(relative).replace(/\/$/, "");
  const leaves = normal === ".." || normal.startsWith("../") || path.posix.isAbsolute(normal);
  return leaves ? { inside: false } : { inside: true, path: normal === "." ? "" : normal };
}

function globMatches(pattern: string, target: MatchedPath): boolean {
  if (!target.inside) return pattern === "**";
  return globToRegExp(pattern).test(target.path);
}

/**
 * A workspace glob as an anchored RegExp: `*` matches within one path segment, `?` one
 * character of a segment, `**` any depth (and a leading `**` plus slash also none, so the
 * glob for "any .md file" matches `a.md`); everything else is literal.
 */
export function globToRegExp(glob: string): RegExp {
  let source = "";
  for (let i = 0; i < glob.length; i += 1) {
    const char = glob[i] as string;
    if (glob.startsWith("**/", i)) {
      source += "(?:.*/)?";
      i += 2;
    } else if (glob.startsWith("**", i)) {
      source += ".*";
      i += 1;
    } else if (char === "*") source += "[^/]*";
    else if (char === "?") source += "[^/]";
    else source += char.replace(/[\\^$.|+()[\]{}]/g, "\\$&");
  }
  return new RegExp(`^${source}$`);
}

/**
 * The id of the approval request for one tool call of a job: the same call always gets
 * the same id (a resumed job finds its request), 8 characters a person can type.
 */
export function approvalIdFor(jobId: string, toolUseId: string): string {
  return hashedCode(`${jobId}\u0000${toolUseId}`, 8);
}
