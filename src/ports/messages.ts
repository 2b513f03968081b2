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
 * A tool call the model API ran on its side (a server tool, such as Anthropic's web
 * search), stored in the assistant message with its result. Picklebot runs nothing for
 * it; `raw` is sent back to the provider that wrote it exactly as it came.
 */
export interface ServerToolUseBlock {
  type: "server_tool_use";
  id: string;
  name: string;
  input: unknown;
  /** The provider (`llm.provider`) that wrote `raw`. */
  provider: string;
  /** The block as that provider's API wrote it: what is sent back to it. */
  raw: Record<string, unknown>;
}

/** The result of a {@link ServerToolUseBlock}, in the same assistant message. */
export interface ServerToolResultBlock {
  type: "server_tool_result";
  tool_use_id: string;
  /** The result for people and other providers: what was found, as text. */
  content: string;
  is_error?: boolean;
  /** The provider (`llm.provider`) that wrote `raw`. */
  provider: string;
  /** The block as that provider's API wrote it: what is sent back to it. */
  raw: Record<string, unknown>;
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
  /**
   * Messages just before this point (whole turns, and the {@link MemorySaveBlock} of this
   * compaction) that later requests still send verbatim, after the summary.
   * (Default: 0, the summary stands in for everything before it)
   */
  keeps?: number;
}

/**
 * The memory save before a summary (stored only, never sent): the `memory` calls the one
 * model call made before the summary, stored before any of them runs. A compaction
 * resumed after a crash runs the same calls again (each writes at most once, keyed by
 * session and call id) instead of calling the model again.
 */
export interface MemorySaveBlock {
  type: "memory_save";
  /** The calls, as the model made them (none when it saved nothing). */
  calls: ToolUseBlock[];
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

/**
 * A file a person sent, stored once under the history folder's `media/` by the SHA-256 of
 * its bytes (content-addressed: the same file sent twice is stored once). A block holds
 * this reference, never the bytes: a provider reads them when it sends the request.
 */
export interface MediaRef {
  /** Hex SHA-256 of the stored bytes: the file's name in the media folder. */
  sha256: string;
  /** Size of the stored bytes. */
  bytes: number;
  /** The file's name as the person sent it (or one made up for a photo). */
  name: string;
}

/** The image types the model APIs take. */
export type ImageMediaType = "image/jpeg" | "image/png" | "image/gif" | "image/webp";

/** An image the person sent, already sized for the model (long edge at most 1,568 px). */
export interface ImageBlock {
  type: "image";
  mediaType: ImageMediaType;
  media: MediaRef;
  /** Pixels of the stored image: its tokens are about width × height / 750. */
  width: number;
  height: number;
}

/** A PDF the person sent, read by the model page by page (text and page images). */
export interface DocumentBlock {
  type: "document";
  mediaType: "application/pdf";
  media: MediaRef;
  /** Pages of the PDF: its tokens are a few thousand a page. */
  pages: number;
}

/**
 * A block the model reads and writes, sent in a request as it is stored (an image or a
 * document by its {@link MediaRef}; the provider reads the bytes). A new kind joins this
 * union; every place that converts, sizes or renders a block then fails to compile until
 * it handles the new kind (see the `switch`es ending in `assertNever`).
 */
export type RequestContentBlock =
  | TextBlock
  | ImageBlock
  | DocumentBlock
  | ToolUseBlock
  | ToolResultBlock
  | ServerToolUseBlock
  | ServerToolResultBlock;

/** What a model's reply holds: text, tool calls, and the calls the API ran itself. */
export type ReplyContentBlock =
  | TextBlock
  | ToolUseBlock
  | ServerToolUseBlock
  | ServerToolResultBlock;

/** A marker picklebot stores in a session for itself: never sent as it is. */
export type MarkerBlock = CompactionBlock | PrunePointBlock | JobEndBlock | MemorySaveBlock;

/** Any block a stored message may hold: what the model reads and writes, or a marker. */
export type ContentBlock = RequestContentBlock | MarkerBlock;

/** The kinds of block a stored message may hold. */
export type ContentBlockKind = ContentBlock["type"];

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
  /**
   * Of `cacheWrite`, the tokens written with the 1-hour lifetime, priced higher than the
   * 5-minute kind. (Default: 0)
   */
  cacheWrite1h?: number;
  /** Web searches the API ran for the call (a server tool), priced per search. (Default: 0) */
  webSearches?: number;
  /**
   * USD a priced speech service charged for the message, outside any model's token prices:
   * the transcription of the voice notes a user message carries. (Default: 0)
   */
  serviceUsd?: number;
}

/** The model call that produced a message, as the usage ledger records it with its tokens. */
export interface ModelCall {
  /** The model called, as the request named it. */
  model: string;
  /** Sent through the Message Batches API, at the batch price. (Default: false) */
  batch?: boolean;
  /** The job that made the call, when a job did. (Default: none) */
  jobId?: string;
}
