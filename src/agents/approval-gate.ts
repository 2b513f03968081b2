/**
 * The approval gate: an agent's tools with its approval policy applied. A call the policy
 * allows runs; one it denies is refused (an error result for the model); one it marks
 * `ask` runs only once the owner said yes, which an {@link ApprovalAsker} finds out.
 */
import { ToolError } from "../base/errors.js";
import type { Tool, ToolContext } from "../ports/index.js";
import {
  type ApprovalPolicy,
  type ControlPlaneTarget,
  controlPlaneTarget,
  decide,
  ruleNamesFolder,
} from "./approval-policy.js";
import type { ControlPlaneWrite } from "./control-plane-log.js";
import { summarizeToolCall } from "./tools/index.js";

/** One call the owner is asked about. */
export interface ApprovalQuestion {
  agentId: string;
  tool: string;
  input: unknown;
  /** The policy rule that asked: a path glob of a file tool, else `*`. */
  pattern: string;
  /** The call in one line (`bash: rm -rf build`). */
  summary: string;
}

/**
 * Gets the owner's answer to a call. Resolves when the call may run (allowed once, or
 * always); throws a ToolError when it is denied or went unanswered, and a ParkRequest
 * while a queue job waits for the answer.
 */
export type ApprovalAsker = (question: ApprovalQuestion, context: ToolContext) => Promise<void>;

/** Keeps the record of a control-plane write that ran (control-plane-log.ts), timed by the caller. */
export type ControlPlaneRecorder = (write: Omit<ControlPlaneWrite, "at">) => Promise<void>;

/**
 * The tools with `policy` applied. `ask` goes to `ask`; without one (nobody to ask) such
 * a call is refused, saying so. A write or edit in `agents/`, `crons/` or `skills/` is
 * granted to the tool only when a path rule naming that folder allows it (or asked and
 * the owner said yes), and is then recorded with `record`; otherwise the tool refuses it.
 */
export function gateTools(
  tools: Tool[],
  policy: ApprovalPolicy,
  ask: ApprovalAsker | undefined,
  record?: ControlPlaneRecorder,
): Tool[] {
  if (Object.keys(policy).length === 0) return tools;
  return tools.map((tool) => ({
    spec: tool.spec,
    async run(input, context) {
      const granted = await checkCall(tool, input, context, policy, ask);
      if (granted === null) return tool.run(input, context);
      const result = await tool.run(input, { ...context, controlPlaneWrite: true });
      await record?.({
        agentId: context.agentId,
        tool: tool.spec.name,
        path: granted.path,
        ...(context.jobId === undefined ? {} : { jobId: context.jobId }),
      });
      return result;
    },
  }));
}

/** Refuses or asks as the policy says; returns the control-plane write it grants, if any. */
async function checkCall(
  tool: Tool,
  input: unknown,
  context: ToolContext,
  policy: ApprovalPolicy,
  ask: ApprovalAsker | undefined,
): Promise<ControlPlaneTarget | null> {
  const name = tool.spec.name;
  const entry = tool.policyNames?.find((candidate) => Object.hasOwn(policy, candidate)) ?? name;
  const { action, pattern } = decide(policy, entry, input, context.workspace);
  const target = controlPlaneTarget(name, input, context.workspace);
  // No rule for the folder: asking would be in vain, the tool refuses the write itself.
  if (target && action !== "deny" && !ruleNamesFolder(pattern, target.folder)) return null;
  if (action === "allow") return target;
  const rule = pattern === "*" ? entry : `${entry} ${pattern}`;
  if (action === "deny") {
    throw new ToolError(`${name}: the owner's approvals policy refuses this call (${rule}: deny)`);
  }
  if (!ask) {
    throw new ToolError(
      `${name}: this call needs the owner's approval (${rule}: ask), and nobody can be asked here`,
    );
  }
  const summary = summarizeToolCall({ name, input });
  await ask({ agentId: context.agentId, tool: name, input, pattern, summary }, context);
  return target;
}
