import type { ChatMessage } from "../ports/index.js";
import { isConversationBlock } from "./content.js";

/**
 * True when `message` opens a turn: a user message with no tool_result block. A context
 * may start only there: anywhere else it would send a tool_result without its tool_use
 * (or begin with an assistant message), which the Messages API refuses.
 */
export function isTurnStart(message: ChatMessage): boolean {
  return message.role === "user" && !message.content.some((block) => block.type === "tool_result");
}

/** True when `message` is a compaction point (see `CompactionBlock`). */
export function isCompaction(message: ChatMessage): boolean {
  return message.content.some((block) => block.type === "compaction");
}

/**
 * A turn start that holds what someone said, not only a marker (a compaction or prune
 * point): where a turn someone asked for begins.
 */
export function isWordsTurnStart(message: ChatMessage): boolean {
  return isTurnStart(message) && message.content.some(isConversationBlock);
}
