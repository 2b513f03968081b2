/**
 * What each kind of content block is, for the places that ask about a message without
 * converting it (is this a new turn? does it hold anything the user said?). Each answer
 * is an exhaustive switch, so a new block kind must be placed here before it compiles.
 */
import type { ContentBlock } from "../ports/index.js";
import { assertNever } from "./assert-never.js";

/**
 * Whether `block` is part of the conversation itself, what the user or the agent said
 * or showed (text, an image, a document), rather than a
 * tool call, a tool's output or a marker stored for picklebot's own use. A user message
 * holding one starts a turn someone asked for.
 */
export function isConversationBlock(block: ContentBlock): boolean {
  switch (block.type) {
    case "text":
    case "image":
    case "document":
      return true;
    case "tool_use":
    case "tool_result":
    case "compaction":
    case "prune":
    case "job_end":
      return false;
    default:
      return assertNever(block, "content block");
  }
}
