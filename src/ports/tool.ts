/** The Tool port: what an agent can call, and what a call may use. */
import type { ToolSpec } from "./model.js";

/** What a tool run may use besides its input. */
export interface ToolContext {
  /** Absolute path of the workspace; file tools never leave it. */
  workspace: string;
  /** Aborted when the job times out or the person stops the reply. */
  signal: AbortSignal;
  /** The agent running the tool. */
  agentId: string;
  /** The session key of the conversation (e.g. `cron:daily:…`). */
  sessionKey: string;
  /**
   * The queue job the turn runs for. Only a job can park (wait for a subagent, an
   * approval, a time); without one (`picklebot chat`) a tool waits in place or fails.
   */
  jobId?: string;
  /** The id of the tool call being run (set per call by the agent loop). */
  callId?: string;
  /**
   * Absolute path of the history folder (`history.path`), which file tools never read or
   * write. (Default: `<workspace>/history`)
   */
  historyPath?: string;
  /**
   * Set by the approval gate for one call whose policy rule names `agents/`, `crons/` or
   * `skills/` and allowed it (or the owner approved it): file tools may write there.
   * (Default: false; such writes are refused)
   */
  controlPlaneWrite?: boolean;
}

/** A tool an agent can call. */
export interface Tool {
  /** The model-facing description: name, description and JSON input schema. */
  readonly spec: ToolSpec;
  /**
   * The approval-policy entries that rule this tool, most specific first: the first one
   * the policy lists decides. A tool that writes files uses its name then `write` (so
   * `write: ask` covers `edit`); MCP tools use `mcp:<server>/<tool>` then `mcp:<server>`.
   * (Default: the tool's name)
   */
  readonly policyNames?: readonly string[];
  /**
   * Runs the tool and returns the text sent back to the model. Throws
   * {@link ToolError} (or anything) on failure: the agent loop turns it into an
   * `is_error` tool_result.
   */
  run(input: unknown, context: ToolContext): Promise<string>;
}
