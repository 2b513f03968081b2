/**
 * The tool registry: every tool an agent can list in AGENT.md, with how to build it and how
 * to show a call of it in one line. The names AGENT.md accepts, the factories and the call
 * summaries all come from {@link TOOLS}; adding a tool is its file, its entry here and its
 * test.
 */
import { retryDelayMs } from "../../base/backoff.js";
import { type Sleep, systemSleep } from "../../base/clock.js";
import {
  ParkRequest,
  ToolCancel,
  ToolDiscard,
  ToolError,
  ToolRetry,
  ToolSnooze,
  toError,
  UserError,
} from "../../base/errors.js";
import type {
  ChatSchedules,
  JobEndBlock,
  JobWait,
  Tool,
  ToolContext,
  ToolResultBlock,
  ToolUseBlock,
} from "../../ports/index.js";
import type { SkillDefinition } from "../skill-file.js";
import { createBashTool } from "./bash.js";
import { createEditTool } from "./edit.js";
import { createMemoryTool, type MemoryToolOptions } from "./memory.js";
import { createPostMessageTool, type MessagePoster } from "./post-message.js";
import { createReadTool } from "./read.js";
import type { BashSandboxOptions } from "./sandbox.js";
import { createScheduleTool } from "./schedule.js";
import { createSendFileTool, type FileSender } from "./send-file.js";
import {
  createSessionReadTool,
  createSessionSearchTool,
  type RecallToolOptions,
} from "./session-search.js";
import { createSkillTool } from "./skill.js";
import { createSubagentTool, type SubagentOptions } from "./subagent.js";
import { createWebFetchTool } from "./web-fetch.js";
import { createWebSearchTool, NO_SEARCH_BACKEND, type WebSearchToolOptions } from "./web-search.js";
import { createWriteTool } from "./write.js";

export { defineTool } from "./define-tool.js";
export type { MemoryToolOptions } from "./memory.js";
export type { MessagePoster } from "./post-message.js";
export { CONTROL_PLANE_FOLDERS } from "./protected-paths.js";
export {
  type BashSandboxOptions,
  describeBashSandbox,
  type SandboxKind,
} from "./sandbox.js";
export type { FileSender } from "./send-file.js";
export type { RecallToolOptions } from "./session-search.js";
export type { SubagentDelegate, SubagentOptions, SubagentTask } from "./subagent.js";
export { type TurnSearch, turnSearchOf } from "./web-search.js";
export { resolveInWorkspace } from "./workspace-path.js";

/** What the tools of one turn are built with. */
export interface ToolboxOptions {
  /** Timeout of one `bash` command. (Default: 60 000 ms) */
  bashTimeoutMs?: number;
  /** Where `bash` runs (picklebot.yaml `tools.bash`). (Default: bwrap, network off) */
  bashSandbox?: BashSandboxOptions;
  /** Timeout of one `web_fetch`, body included. (Default: 30 000 ms) */
  fetchTimeoutMs?: number;
  /**
   * DANGEROUS: `web_fetch` may reach loopback, private and link-local addresses
   * (`tools.web_fetch.allow_private_addresses`, for tests). (Default: false)
   */
  fetchPrivateAddresses?: boolean;
  /** The only domains `web_fetch` reaches (the agent's allow-list). (Default: any public) */
  fetchAllowDomains?: readonly string[];
  /**
   * Where `post_message` posts: the job's chat, through the outbox (the server), or the
   * terminal (`picklebot chat`). (Default: nowhere; the tool tells the model so)
   */
  postMessage?: MessagePoster;
  /**
   * Where `send_file` sends: the job's chat, through the outbox (the server). (Default:
   * nowhere; the tool tells the model so)
   */
  sendFile?: FileSender;
  /** How `subagent` hands tasks on, and to whom. (Default: nowhere; the tool says so) */
  subagents?: SubagentOptions;
  /**
   * The engine `web_search` asks and its limit per turn (picklebot.yaml
   * `tools.web_search`). (Default: none; the tool says no backend is configured)
   */
  webSearch?: WebSearchToolOptions;
  /** The chat's schedules `schedule` works on. (Default: none; the tool says so) */
  schedules?: ChatSchedules;
  /** The skills `skill` loads: the agent's (skills.ts). (Default: none; the tool says so) */
  skills?: readonly SkillDefinition[];
  /** What `memory` writes, for whom. (Default: nothing; the tool says memory is off) */
  memory?: MemoryToolOptions;
  /**
   * What `session_search` and `session_read` read. (Default: nothing; the tools say
   * there is nothing to search)
   */
  recall?: RecallToolOptions;
}

/** One registered tool. */
interface ToolEntry {
  /** Builds the tool for one turn. */
  create(options: ToolboxOptions): Tool;
  /** The input field a call shows after the tool's name, and what joins them (`bash: ls`). */
  shows: { field: string; joiner: " " | ": " };
  /**
   * It writes the file its `path` names: an approvals entry for {@link FILE_WRITES_POLICY}
   * rules it too, unless the policy has an entry of its own name. (Default: false)
   */
  writesFiles?: true;
}

/** Every tool, by the name AGENT.md lists it under. */
export const TOOLS = {
  read: { create: () => createReadTool(), shows: { field: "path", joiner: " " } },
  write: {
    create: () => createWriteTool(),
    shows: { field: "path", joiner: " " },
    writesFiles: true,
  },
  edit: {
    create: () => createEditTool(),
    shows: { field: "path", joiner: " " },
    writesFiles: true,
  },
  bash: {
    create: ({ bashTimeoutMs, bashSandbox }) =>
      createBashTool({ timeoutMs: bashTimeoutMs, sandbox: bashSandbox }),
    shows: { field: "command", joiner: ": " },
  },
  web_fetch: {
    create: ({ fetchTimeoutMs, fetchPrivateAddresses, fetchAllowDomains }) =>
      createWebFetchTool({
        timeoutMs: fetchTimeoutMs,
        allowPrivate: fetchPrivateAddresses,
        allowDomains: fetchAllowDomains,
      }),
    shows: { field: "url", joiner: " " },
  },
  web_search: {
    create: ({ webSearch }) => createWebSearchTool(webSearch ?? { backend: NO_SEARCH_BACKEND }),
    shows: { field: "query", joiner: ": " },
  },
  post_message: {
    create: ({ postMessage }) => createPostMessageTool(postMessage ?? postingUnavailable),
    shows: { field: "text", joiner: ": " },
  },
  send_file: {
    create: ({ sendFile }) => createSendFileTool(sendFile),
    shows: { field: "path", joiner: " " },
  },
  subagent: {
    create: ({ subagents }) => createSubagentTool(subagents ?? delegationUnavailable),
    shows: { field: "agent", joiner: ": " },
  },
  skill: {
    create: ({ skills }) => createSkillTool(skills ?? []),
    shows: { field: "name", joiner: " " },
  },
  memory: {
    create: ({ memory }) => (memory ? createMemoryTool(memory) : unavailable("memory", MEMORY_OFF)),
    shows: { field: "action", joiner: " " },
  },
  session_search: {
    create: ({ recall }) =>
      recall ? createSessionSearchTool(recall) : unavailable("session_search", NOTHING_TO_SEARCH),
    shows: { field: "query", joiner: ": " },
  },
  session_read: {
    create: ({ recall }) =>
      recall ? createSessionReadTool(recall) : unavailable("session_read", NOTHING_TO_SEARCH),
    shows: { field: "session_id", joiner: " " },
  },
  schedule: {
    create: ({ schedules }) => createScheduleTool(schedules ?? schedulesUnavailable),
    shows: { field: "action", joiner: " " },
  },
} satisfies Record<string, ToolEntry>;

/** The name of a registered tool. */
export type ToolName = keyof typeof TOOLS;

/** Every tool name, in registry order. */
export const TOOL_NAMES = Object.keys(TOOLS) as ToolName[];

/**
 * The approvals entry that rules every tool that writes files (`write: ask` asks before an
 * `edit` too): docs/decisions/write-policy-covers-edits.md.
 */
export const FILE_WRITES_POLICY: ToolName = "write";

/** The tools that write the file their `path` names (write, edit). */
export const FILE_WRITING_TOOLS: readonly ToolName[] = TOOL_NAMES.filter(
  (name) => "writesFiles" in TOOLS[name],
);

/** The approvals entries that rule a tool, most specific first (Tool.policyNames). */
function policyNamesOf(name: ToolName): string[] {
  const writes = FILE_WRITING_TOOLS.includes(name) && name !== FILE_WRITES_POLICY;
  return writes ? [name, FILE_WRITES_POLICY] : [name];
}

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
    return { ...TOOLS[name].create(options), policyNames: policyNamesOf(name) };
  });
}

/** The subagents of a turn that cannot delegate. */
const delegationUnavailable: SubagentOptions = {
  callable: new Map(),
  maxDepth: 0,
  delegate: async () => {
    throw new ToolError("subagent: this conversation cannot hand tasks to other agents");
  },
};

const MEMORY_OFF =
  "memory is off or read-only in this conversation (the agent's `memory` setting, a scheduled job or a task from another agent); nothing was saved";
const NOTHING_TO_SEARCH =
  "this conversation has no earlier conversations to search (memory is off, or it is with no one person)";

/** A tool of a turn that cannot use it: every call is refused with `why`. */
function unavailable(name: string, why: string): Tool {
  return {
    spec: {
      name,
      description: `Not available here: ${why}.`,
      input_schema: { type: "object", properties: {} },
    },
    run: async () => {
      throw new ToolError(`${name}: ${why}`);
    },
  };
}

/** The poster of a turn that has nowhere to post. */
const postingUnavailable: MessagePoster = async () => {
  throw new ToolError("post_message: this conversation has no chat to post to");
};

/** The schedules of a turn that has no chat's schedules to work on (`picklebot chat`). */
const schedulesUnavailable: ChatSchedules = {
  create: unavailableSchedules,
  list: unavailableSchedules,
  cancel: unavailableSchedules,
};

async function unavailableSchedules(): Promise<string> {
  throw new ToolError(
    "schedule: this conversation has no chat to schedule for; reminders are set in a Telegram or Discord chat with the server running",
  );
}

/** Runs of a call after its first that a {@link ToolRetry} gets before it counts as an error. */
export const TOOL_RETRIES = 3;

/** Longest backoff between two runs of a retried call. */
const TOOL_RETRY_CAP_MS = 10_000;

/** What running one turn's tool calls came to. */
export interface ToolRun {
  /** The result of every call that finished, in the order of the calls. */
  results: ToolResultBlock[];
  /**
   * When calls must wait (a subagent, an approval, a snooze): one request for all of
   * them, holding the results that did finish; null when none waits.
   */
  park: ParkRequest | null;
  /** A call that ended the job (cancel, discard), if one did. */
  ending: JobEndBlock | null;
}

/** What one call came to. */
type CallOutcome =
  | { result: ToolResultBlock; ending?: JobEndBlock }
  | { park: ParkRequest; result?: undefined; ending?: undefined };

/**
 * Runs tool calls concurrently. Calls with a result in `finished` (they ran before the
 * job parked) are not run again. Never throws: an unknown tool or a failed run becomes
 * an `is_error` result carrying the error's message, a {@link ToolRetry} runs the call
 * again after a backoff waited with `sleep` (Default: real timers), and a call that must
 * wait joins the run's `park`.
 */
export async function runToolCalls(
  tools: Tool[],
  calls: ToolUseBlock[],
  context: ToolContext,
  finished: readonly ToolResultBlock[] = [],
  sleep: Sleep = systemSleep,
): Promise<ToolRun> {
  const byName = new Map(tools.map((tool) => [tool.spec.name, tool]));
  const outcomes = await Promise.all(
    calls.map(async (call): Promise<CallOutcome> => {
      const done = finished.find((result) => result.tool_use_id === call.id);
      return done ? { result: done } : runToolCall(byName, call, context, sleep);
    }),
  );
  const results = outcomes.flatMap((outcome) => (outcome.result ? [outcome.result] : []));
  const parks = outcomes.flatMap((outcome) => (outcome.result ? [] : [outcome.park]));
  const ending = outcomes.find((outcome) => outcome.ending)?.ending ?? null;
  return { results, park: parks.length > 0 ? mergeParks(parks, results) : null, ending };
}

async function runToolCall(
  byName: Map<string, Tool>,
  call: ToolUseBlock,
  context: ToolContext,
  sleep: Sleep,
): Promise<CallOutcome> {
  const tool = byName.get(call.name);
  if (tool === undefined) {
    const known = [...byName.keys()].join(", ") || "none";
    return {
      result: errorResult(call, `unknown tool "${call.name}"; this agent's tools are: ${known}`),
    };
  }
  try {
    const content = await runWithRetries(tool, call, { ...context, callId: call.id }, sleep);
    // The Messages API refuses empty tool_result content.
    return {
      result: { type: "tool_result", tool_use_id: call.id, content: content || "(no output)" },
    };
  } catch (thrown) {
    return failedCallOutcome(call, thrown, context);
  }
}

/** What a call that threw comes to: a wait, an ending of the job, or an error result. */
function failedCallOutcome(call: ToolUseBlock, thrown: unknown, context: ToolContext): CallOutcome {
  if (thrown instanceof ParkRequest) return { park: thrown };
  if (thrown instanceof ToolSnooze && context.jobId !== undefined) {
    return { park: new ParkRequest({ kind: "time" }, thrown.until) };
  }
  const message = toError(thrown).message || "the tool failed without a message";
  if (thrown instanceof ToolCancel || thrown instanceof ToolDiscard) {
    const outcome = thrown instanceof ToolCancel ? "cancel" : "discard";
    return {
      result: { ...errorResult(call, message), is_error: outcome === "cancel" },
      ending: { type: "job_end", outcome, message },
    };
  }
  if (thrown instanceof ToolSnooze) {
    return {
      result: errorResult(
        call,
        `${message} (try again after ${new Date(thrown.until).toISOString()})`,
      ),
    };
  }
  return { result: errorResult(call, message) };
}

/** Runs the tool, and again after a backoff while it fails with {@link ToolRetry}. */
async function runWithRetries(
  tool: Tool,
  call: ToolUseBlock,
  context: ToolContext,
  sleep: Sleep,
): Promise<string> {
  for (let retry = 1; ; retry += 1) {
    try {
      return await tool.run(call.input, context);
    } catch (thrown) {
      if (!(thrown instanceof ToolRetry)) throw thrown;
      if (retry > TOOL_RETRIES) {
        throw new ToolError(`${thrown.message} (tried ${retry} times)`, { cause: thrown });
      }
      const waitMs = retryDelayMs(retry, {
        capMs: TOOL_RETRY_CAP_MS,
        retryAfterMs: Math.min(thrown.retryAfterMs, TOOL_RETRY_CAP_MS),
      });
      await sleep(waitMs, context.signal);
    }
  }
}

/**
 * One wait for several calls: every subagent job they wait for, else the first approval,
 * else a time; due by the earliest deadline; holding the results of the calls that did
 * finish. (A parked job is woken by whatever it waits for, whatever its wait says.)
 */
function mergeParks(parks: ParkRequest[], finished: ToolResultBlock[]): ParkRequest {
  const jobIds = parks.flatMap(({ wait }) => (wait.kind === "children" ? wait.jobIds : []));
  const approval = parks.find(({ wait }) => wait.kind === "approval")?.wait;
  const wait: JobWait =
    approval ?? (jobIds.length > 0 ? { kind: "children", jobIds } : { kind: "time" });
  const until = Math.min(...parks.map((park) => park.until));
  return new ParkRequest(wait, until, finished);
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
