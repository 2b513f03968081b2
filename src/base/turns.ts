import type { ChatMessage } from "../ports/index.js";

/**
 * True when `message` opens a turn: a user message with no tool_result block. A context
 * may start only there: anywhere else it would send a tool_result without its tool_use
 * (or begin with an assistant message), which the Messages API refuses.
 */
export function isTurnStart(message: ChatMessage): boolean {
  return message.role === "user" && !message.content.some((block) => block.type === "tool_result");
}
