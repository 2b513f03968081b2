/**
 * The approval gate: an agent's tools with its approval policy applied. A call the policy
 * allows runs; one it denies is refused (an error result for the model); one it marks
 * `ask` runs only once the owner said yes, which an {@link ApprovalAsker} finds out.
 */
import { ToolError } from "../base/errors.js";
import type { Tool, ToolContext } from "../ports/index.js";
import { type ApprovalPolicy, decide } from "./approval-policy.js";
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

/**
 * The tools with `policy` applied. `ask` goes to `ask`; without one (nobody to ask) such
 * a call is refused, saying so.
 */
export function gateTools(
  tools: Tool[],
  policy: ApprovalPolicy,
  ask: ApprovalAsker | undefined,
): Tool[] {
  if (Object.keys(policy).length === 0) return tools;
  return tools.map((tool) => ({
    spec: tool.spec,
    async run(input, context) {
      await checkCall(tool.spec.name, input, context, policy, ask);
      return tool.run(input, context);
    },
  }));
}

async function checkCall(
  name: string,
  input: unknown,
  context: ToolContext,
  policy: ApprovalPolicy,
  ask: ApprovalAsker | undefined,
): Promise<void> {
  const { action, pattern } = decide(policy, name, input, context.workspace);
  if (action === "allow") return;
  const rule = pattern === "*" ? name : `${name} ${pattern}`;
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
}
