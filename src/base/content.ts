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
  const about = `${block.media.name}, ${block.mediaType}, ${formatBytes(block.media.bytes)}`;
  return block.type === "image"
    ? `[image ${about}, ${block.width}×${block.height} px]`
    : `[PDF ${about}, ${block.pages} pages]`;
}

/** `512 B`, `12.3 kB`, `4.5 MB`: a file's size for a person (decimal units). */
export function formatBytes(bytes: number): string {
  if (bytes < 1000) return `${bytes} B`;
  if (bytes < 1_000_000) return `${(bytes / 1000).toFixed(1)} kB`;
  return `${(bytes / 1_000_000).toFixed(1)} MB`;
}

/**
 * An image or a PDF sent to a model that is not shown it (it takes none, or the provider
 * cannot send that kind): its line of text, so the model can say it cannot see it.
 */
export function notShownText(block: ImageBlock | DocumentBlock): string {
  return `${mediaBlockText(block)} (not shown to this model)`;
}
