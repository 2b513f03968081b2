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

/** Any block a stored message may hold. */
export type ContentBlock = TextBlock | ToolUseBlock | ToolResultBlock;

/** One message of a conversation, as the Anthropic Messages API takes it. */
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
}
