/**
 * What each kind of content block is, for the places that ask about a message without
 * converting it (is this a new turn? does it hold anything the user said?). Each answer
 * is an exhaustive switch, so a new block kind must be placed here before it compiles.
 */
import type {
  ContentBlock,
  DocumentBlock,
  ImageBlock,
  ServerToolResultBlock,
  ServerToolUseBlock,
} from "../ports/index.js";
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
    case "server_tool_use":
    case "server_tool_result":
    case "compaction":
    case "prune":
    case "job_end":
    case "memory_save":
      return false;
    default:
      return assertNever(block, "content block");
  }
}

/**
 * A block a model API wrote while running a server tool, as text: what another provider
 * reads (it cannot take the first one's blocks) and what transcripts show.
 */
export function serverBlockText(block: ServerToolUseBlock | ServerToolResultBlock): string {
  return block.type === "server_tool_use"
    ? `(${block.name} ${JSON.stringify(block.input)})`
    : block.content;
}

/** An image or a PDF a person sent, as one line of text: what transcripts show. */
export function mediaBlockText(block: ImageBlock | DocumentBlock): string {
  return block.type === "image"
    ? `[image ${block.media.name}, ${block.width}×${block.height} px]`
    : `[PDF ${block.media.name}, ${block.pages} pages]`;
}
