import { toError, UserError } from "../../base/errors.js";
import type { Tool, ToolContext, ToolResultBlock, ToolUseBlock } from "../../ports/index.js";
import { createBashTool } from "./bash.js";
import { createEditTool } from "./edit.js";
import { createReadTool } from "./read.js";
import { createWebFetchTool } from "./web-fetch.js";
import { createWriteTool } from "./write.js";

export { createBashTool } from "./bash.js";
export { defineTool } from "./define-tool.js";
export { createEditTool } from "./edit.js";
export { createReadTool } from "./read.js";
export type { Tool, ToolContext } from "./types.js";
export { createWebFetchTool } from "./web-fetch.js";
export { resolveInWorkspace } from "./workspace-path.js";
export { createWriteTool } from "./write.js";

/** Options of {@link createToolbox}. */
export interface ToolboxOptions {
  /** Timeout of one `bash` command. (Default: 60 000 ms) */
  bashTimeoutMs?: number;
  /** Timeout of one `web_fetch`, body included. (Default: 30 000 ms) */
  fetchTimeoutMs?: number;
  /** Tools built elsewhere (`subagent`, `post_message`), chosen by name like the rest. */
  extraTools?: Tool[];
}

/** Longest line {@link summarizeToolCall} returns. */
const SUMMARY_MAX_CHARS = 80;

/**
 * The tools named in an agent's tool list, in that order. Built-in names are `read`,
 * `write`, `edit`, `bash` and `web_fetch`; others must be among `extraTools`.
 *
 * @throws UserError naming an unknown tool and the known ones.
 */
export function createToolbox(names: string[], options: ToolboxOptions = {}): Tool[] {
  const factories: Record<string, () => Tool> = {
    read: createReadTool,
    write: createWriteTool,
    edit: createEditTool,
    bash: () => createBashTool({ timeoutMs: options.bashTimeoutMs }),
    web_fetch: () => createWebFetchTool({ timeoutMs: options.fetchTimeoutMs }),
  };
  for (const tool of options.extraTools ?? []) factories[tool.spec.name] = () => tool;
  return [...new Set(names)].map((name) => {
    const factory = factories[name];
    if (factory === undefined) {
      throw new UserError(
        `unknown tool "${name}"; use one of: ${Object.keys(factories).join(", ")}`,
      );
    }
    return factory();
  });
}

/**
 * Runs tool calls concurrently and returns one tool_result per call, in the order of
 * the calls. Never throws: an unknown tool or a failed run becomes an `is_error`
 * result carrying the error's message.
 */
export function runToolCalls(
  tools: Tool[],
  calls: ToolUseBlock[],
  context: ToolContext,
): Promise<ToolResultBlock[]> {
  const byName = new Map(tools.map((tool) => [tool.spec.name, tool]));
  return Promise.all(calls.map((call) => runToolCall(byName, call, context)));
}

async function runToolCall(
  byName: Map<string, Tool>,
  call: ToolUseBlock,
  context: ToolContext,
): Promise<ToolResultBlock> {
  const tool = byName.get(call.name);
  if (tool === undefined) {
    const known = [...byName.keys()].join(", ") || "none";
    return errorResult(call, `unknown tool "${call.name}"; this agent's tools are: ${known}`);
  }
  try {
    const content = await tool.run(call.input, context);
    // The Messages API refuses empty tool_result content.
    return { type: "tool_result", tool_use_id: call.id, content: content || "(no output)" };
  } catch (thrown) {
    return errorResult(call, toError(thrown).message || "the tool failed without a message");
  }
}

function errorResult(call: ToolUseBlock, message: string): ToolResultBlock {
  return { type: "tool_result", tool_use_id: call.id, content: message, is_error: true };
}

/**
 * One short line describing a tool call, for display while it runs: `write notes.md`,
 * `bash: ls -la`, `web_fetch https://…`. At most 80 characters.
 */
export function summarizeToolCall(call: Pick<ToolUseBlock, "name" | "input">): string {
  const field = (key: string): string => {
    const value = (call.input as Record<string, unknown> | null)?.[key];
    return typeof value === "string" ? value.replace(/\s+/g, " ").trim() : "";
  };
  const detail: Record<string, () => string> = {
    read: () => ` ${field("path")}`,
    write: () => ` ${field("path")}`,
    edit: () => ` ${field("path")}`,
    bash: () => `: ${field("command")}`,
    web_fetch: () => ` ${field("url")}`,
    subagent: () => ` ${field("agent")}: ${field("task")}`,
    post_message: () => `: ${field("text")}`,
  };
  const line = `${call.name}${detail[call.name]?.() ?? ""}`.trimEnd();
  return line.length > SUMMARY_MAX_CHARS ? `${line.slice(0, SUMMARY_MAX_CHARS - 1)}…` : line;
}
