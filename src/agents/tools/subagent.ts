import { z } from "zod";
import { ToolError } from "../../base/errors.js";
import { formatSessionKey, subagentDepthOf } from "../../base/session-key.js";
import type { Tool, ToolContext } from "../../ports/index.js";
import { defineTool } from "./define-tool.js";

/** One task handed to another agent. */
export interface SubagentTask {
  /** The agent that does the task. */
  agent: string;
  /** What it is asked, as its first message. */
  task: string;
  /** False: start it and answer with its job id at once, without its answer. */
  wait: boolean;
  /** The session key of the child's conversation (see {@link subagentSessionKey}). */
  sessionKey: string;
}

/**
 * Runs a subagent's task: through the queue as a child job of the calling one (the
 * server: the caller parks until the child ends), or in place (`picklebot chat`).
 * Resolves the child's final text; throws ToolError when the child failed.
 */
export type SubagentDelegate = (task: SubagentTask, context: ToolContext) => Promise<string>;

/** What the `subagent` tool of one agent is built with. */
export interface SubagentOptions {
  delegate: SubagentDelegate;
  /** The agents this one may call, with one line on each (its allow-list). */
  callable: ReadonlyMap<string, string>;
  /** Nesting limit: a subagent at this depth cannot call another (`workers.subagent_max_depth`). */
  maxDepth: number;
}

const subagentInput = z.object({
  agent: z.string().trim().min(1).describe("The id of the agent to hand the task to."),
  task: z
    .string()
    .trim()
    .min(1)
    .describe("The task, with everything the agent needs to know: it does not see this chat."),
  wait: z
    .boolean()
    .optional()
    .describe("false: start it and get its job id at once, without its answer. (Default: true)"),
});

/**
 * `subagent {agent, task, wait?}`: hands a task to another agent, which works on it in a
 * conversation of its own, and answers with that agent's final reply.
 */
export function createSubagentTool(options: SubagentOptions): Tool {
  const listed = [...options.callable].map(([id, about]) => `- ${id}: ${about}`).join("\n");
  return defineTool({
    name: "subagent",
    description:
      "Hand a task to another agent and get its final answer. It starts a new conversation " +
      "with only your task, so say everything it needs. Several calls in one turn run in " +
      `parallel. Agents you can call:\n${listed || "(none)"}`,
    input: subagentInput,
    run: ({ agent, task, wait = true }, context) => {
      if (!options.callable.has(agent)) {
        const known = [...options.callable.keys()].join(", ") || "none";
        throw new ToolError(
          `subagent: "${agent}" is not an agent you can call; you can call: ${known}`,
        );
      }
      const depth = subagentDepthOf(context.sessionKey) + 1;
      if (depth > options.maxDepth) {
        throw new ToolError(
          `subagent: subagents may nest ${options.maxDepth} deep and this one is at depth ${depth - 1}; do the task yourself`,
        );
      }
      const sessionKey = subagentSessionKey(depth, context);
      return options.delegate({ agent, task, wait, sessionKey }, context);
    },
  });
}

/**
 * The session key of a subagent call: `subagent:<depth>:<parent job>:<call id>`, the
 * same each time the call runs, so a resumed parent finds the child it started. (Default
 * parent: the calling session's key, for a turn without a job.)
 */
export function subagentSessionKey(depth: number, context: ToolContext): string {
  const parent = context.jobId ?? context.sessionKey;
  return formatSessionKey({ kind: "subagent", depth, parent, callId: context.callId ?? "call" });
}
