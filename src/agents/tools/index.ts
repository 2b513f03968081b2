/**
 * The tool registry: every tool an agent can list in AGENT.md, with how to build it and how
 * to show a call of it in one line. The names AGENT.md accepts, the factories and the call
 * summaries all come from {@link TOOLS}; adding a tool is its file, its entry here and its
 * test.
 */
import { ToolError, toError, UserError } from "../../base/errors.js";
import type { Tool, ToolContext, ToolResultBlock, ToolUseBlock } from "../../ports/index.js";
import { createBashTool } from "./bash.js";
import { createEditTool } from "./edit.js";
import { createPostMessageTool, type MessagePoster } from "./post-message.js";
import { createReadTool } from "./read.js";
import { createWebFetchTool } from "./web-fetch.js";
import { createWriteTool } from "./write.js";

export { defineTool } from "./define-tool.js";
export type { MessagePoster } from "./post-message.js";
export { resolveInWorkspace } from "./workspace-path.js";

/** What the tools of one turn are built with. */
export interface ToolboxOptions {
  /** Timeout of one `bash` command. (Default: 60 000 ms) */
  bashTimeoutMs?: number;
  /** Timeout of one `web_fetch`, body included. (Default: 30 000 ms) */
  fetchTimeoutMs?: number;
  /**
   * Where `post_message` posts: the job's chat, through the outbox (the server), or the
   * terminal (`picklebot chat`). (Default: nowhere; the tool tells the model so)
   */
  postMessage?: MessagePoster;
}

/** One registered tool. */
interface ToolEntry {
  /** Builds the tool for one turn. */
  create(options: ToolboxOptions): Tool;
  /** The input field a call shows after the tool's name, and what joins them (`bash: ls`). */
  shows: { field: string; joiner: " " | ": " };
}

/** Every tool, by the name AGENT.md lists it under. */
export const TOOLS = {
  read: { create: () => createReadTool(), shows: { field: "path", joiner: " " } },
  write: { create: () => createWriteTool(), shows: { field: "path", joiner: " " } },
  edit: { create: () => createEditTool(), shows: { field: "path", joiner: " " } },
  bash: {
    create: ({ bashTimeoutMs }) => createBashTool({ timeoutMs: bashTimeoutMs }),
    shows: { field: "command", joiner: ": " },
  },
  web_fetch: {
    create: ({ fetchTimeoutMs }) => createWebFetchTool({ timeoutMs: fetchTimeoutMs }),
    shows: { field: "url", joiner: " " },
  },
  post_message: {
    create: ({ postMessage }) => createPostMessageTool(postMessage ?? postingUnavailable),
    shows: { field: "text", joiner: ": " },
  },
} satisfies Record<string, ToolEntry>;

/** The name of a registered tool. */
export type ToolName = keyof typeof TOOLS;

/** Every tool name, in registry order. */
export const TOOL_NAMES = Object.keys(TOOLS) as ToolName[];

/** The tools of an agent whose AGENT.md lists none. */
export const DEFAULT_TOOLS: readonly ToolName[] = ["read", "write", "edit", "web_fetch"];

/** True when `name` is a registered tool. */
export function isToolName(name: string): name is ToolName {
  return Object.hasOwn(TOOLS, name);
}

/** Longest line {@link summarizeToolCall} returns. */
const SUMMARY_MAX_CHARS = 80;

/**
 * The tools named in an agent's tool list, in that order.
 *
 * @throws UserError naming an unknown tool and the known ones.
 */
export function createToolbox(names: string[], options: ToolboxOptions = {}): Tool[] {
  return [...new Set(names)].map((name) => {
    if (!isToolName(name)) {
      throw new UserError(`unknown tool "${name}"; use one of: ${TOOL_NAMES.join(", ")}`);
    }
    return TOOLS[name].create(options);
  });
}

/** The poster of a turn that has nowhere to post. */
const postingUnavailable: MessagePoster = async () => {
  throw new ToolError("post_message: this conversation has no chat to post to");
};

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
  const shows = isToolName(call.name) ? TOOLS[call.name].shows : null;
  const value = shows && (call.input as Record<string, unknown> | null)?.[shows.field];
  const detail = typeof value === "string" ? value.replace(/\s+/g, " ").trim() : "";
  const line = shows && detail ? `${call.name}${shows.joiner}${detail}` : call.name;
  return line.length > SUMMARY_MAX_CHARS ? `${line.slice(0, SUMMARY_MAX_CHARS - 1)}…` : line;
}
