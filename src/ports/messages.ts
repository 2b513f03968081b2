/** Conversation content, exactly as the Anthropic Messages API takes it. */

/** Plain text in a message. */
export interface TextBlock {
  type: "text";
  text: string;
}

/** The model asks for a tool to run. */
export interface ToolUseBlock {
  type: "tool_use";
  id: string;
  name: string;
  input: unknown;
}

/** The result of a tool run, sent back to the model in a user message. */
export interface ToolResultBlock {
  type: "tool_result";
  tool_use_id: string;
  content: string;
  is_error?: boolean;
}

/**
 * Where compaction cut a session (stored only, never sent as it is): every later request
 * starts here, with `summary` standing in for the turns before it. Those turns stay
 * stored in full, so a transcript can still be read.
 */
export interface CompactionBlock {
  type: "compaction";
  /** The model's summary of the turns before this point. */
  summary: string;
  /** Messages the summary stands in for. */
  replaces: number;
}

/**
 * Where old tool outputs were pruned (stored only, never sent as it is): in every later
 * request, each tool result of the turns before the last `keepTurns` turns ahead of this
 * point is sent as a short note saying so. The outputs stay stored in full.
 */
export interface PrunePointBlock {
  type: "prune";
  /** Turns just before this point whose tool outputs are still sent in full. */
  keepTurns: number;
}

/**
 * Where a tool ended its job (stored only, never sent): `cancel` (failed with `message`,
 * no further model call) or `discard` (done, nothing sent). It follows the turn's tool
 * results, so a job resumed after a crash ends the same way instead of calling the model.
 */
export interface JobEndBlock {
  type: "job_end";
  outcome: "cancel" | "discard";
  /** Why, in the tool's words: the job's error for a cancel, the log's for a discard. */
  message: string;
}

/** Any block a stored message may hold. */
export type ContentBlock =
  | TextBlock
  | ToolUseBlock
  | ToolResultBlock
  | CompactionBlock
  | PrunePointBlock
  | JobEndBlock;

/** A block the Messages API takes. */
export type RequestContentBlock = TextBlock | ToolUseBlock | ToolResultBlock;

/** A message as a model request sends it (the context builder makes these from history). */
export interface RequestMessage {
  role: "user" | "assistant";
  content: RequestContentBlock[];
}

/** One message of a conversation, as stored: what the Messages API takes, or a compaction or prune point. */
export interface ChatMessage {
  role: "user" | "assistant";
  content: ContentBlock[];
}

/** Tokens used by one model call, from the response's `usage`. */
export interface TokenUsage {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  /** Sent through the batch API (billed at the batch price). (Default: false) */
  batch?: boolean;
}
