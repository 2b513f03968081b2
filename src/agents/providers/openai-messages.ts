/**
 * Our request and reply shapes (the Anthropic Messages API's) to and from the OpenAI
 * Chat Completions API's, exactly:
 *
 *   system prompt     a `system` message first (left out when empty);
 *   user text         a `user` message whose content is text parts, and each image an
 *                     `image_url` part holding a data URL (the API takes images in user
 *                     messages only); an image not loaded (a model with `vision: false`)
 *                     and every PDF as the line of text that describes it;
 *   tool_use blocks   the `tool_calls` of the assistant message, input as JSON text;
 *   tool_result       one `tool` message per result, right after the assistant message
 *                     that made the call (the API refuses one anywhere else), before the
 *                     text and images the same user message holds (a result is text, as
 *                     a `tool` message's content must be);
 *   current time      a text part after everything else, so the cached prefix holds.
 *
 * A reply streams as chunks: text deltas, and tool calls whose `arguments` arrive in
 * pieces, told apart by `index`; {@link ReplyAssembler} puts them together.
 */
import type OpenAI from "openai";
import { assertNever } from "../../base/assert-never.js";
import { notShownText, serverBlockText } from "../../base/content.js";
import { ModelError } from "../../base/errors.js";
import type {
  ModelReply,
  ModelRequest,
  RequestContentBlock,
  TextBlock,
  TokenUsage,
  ToolResultBlock,
  ToolSpec,
  ToolUseBlock,
} from "../../ports/index.js";
import { type LoadedMedia, NO_MEDIA } from "./media.js";

type ChatMessage = OpenAI.Chat.Completions.ChatCompletionMessageParam;
type UserPart = OpenAI.Chat.Completions.ChatCompletionContentPart;
type Chunk = OpenAI.Chat.Completions.ChatCompletionChunk;

/**
 * The messages of a Chat Completions request for `request`, with the images whose files
 * are in `media` as data URLs (the others described as text).
 */
export function toChatMessages(
  request: Pick<ModelRequest, "system" | "messages" | "currentTime">,
  media: LoadedMedia = NO_MEDIA,
): ChatMessage[] {
  const chat: ChatMessage[] =
    request.system === "" ? [] : [{ role: "system", content: request.system }];
  for (const message of request.messages) {
    if (message.role === "assistant") chat.push(toAssistantMessage(message.content));
    else chat.push(...toUserMessages(message.content, media));
  }
  if (request.currentTime !== undefined) appendText(chat, `(current time: ${request.currentTime})`);
  return chat;
}

/** The tools as functions whose parameters are their input schema. */
export function toChatTools(
  tools: readonly ToolSpec[],
): OpenAI.Chat.Completions.ChatCompletionFunctionTool[] {
  return tools.map((tool) => ({
    type: "function",
    function: {
      name: tool.name,
      description: tool.description,
      parameters: { ...tool.input_schema, type: "object" },
    },
  }));
}

function toAssistantMessage(content: RequestContentBlock[]): ChatMessage {
  // A search another provider's API ran itself is read as text, in its place.
  const text = content
    .map((block) =>
      block.type === "text"
        ? block.text
        : block.type === "server_tool_use" || block.type === "server_tool_result"
          ? serverBlockText(block)
          : "",
    )
    .join("");
  const calls = content.filter((block): block is ToolUseBlock => block.type === "tool_use");
  return {
    role: "assistant",
    content: text === "" && calls.length > 0 ? null : text,
    ...(calls.length === 0
      ? {}
      : {
          tool_calls: calls.map((call) => ({
            id: call.id,
            type: "function" as const,
            function: { name: call.name, arguments: JSON.stringify(call.input ?? {}) },
          })),
        }),
  };
}

/** A user message: its tool results first (each a `tool` message), then what the user said. */
function toUserMessages(content: RequestContentBlock[], media: LoadedMedia): ChatMessage[] {
  const results = content.filter((block): block is ToolResultBlock => block.type === "tool_result");
  const said = toUserParts(content, media);
  return [
    ...results.map(toToolMessage),
    ...(said.length === 0 ? [] : [{ role: "user" as const, content: said }]),
  ];
}

function toToolMessage(result: ToolResultBlock): ChatMessage {
  // The API has no error flag for a tool result: the model reads it in the text.
  const content = result.is_error === true ? `Error: ${result.content}` : result.content;
  return { role: "tool", tool_call_id: result.tool_use_id, content };
}

/**
 * What a user message says, as content parts: text, an image whose file is in `media` as
 * a data URL, any other image and every PDF as its description (Chat Completions takes
 * PDFs from OpenAI's own models only). Tool calls and results are not said by the user:
 * they are converted elsewhere.
 */
function toUserParts(content: RequestContentBlock[], media: LoadedMedia): UserPart[] {
  const parts: UserPart[] = [];
  for (const block of content) {
    switch (block.type) {
      case "text":
        parts.push({ type: "text", text: block.text });
        break;
      case "image": {
        const data = media.get(block.media.sha256);
        parts.push(
          data === undefined
            ? { type: "text", text: notShownText(block) }
            : { type: "image_url", image_url: { url: `data:${block.mediaType};base64,${data}` } },
        );
        break;
      }
      case "document":
        parts.push({ type: "text", text: notShownText(block) });
        break;
      case "tool_use":
      case "tool_result":
      case "server_tool_use":
      case "server_tool_result":
        break;
      default:
        assertNever(block, "request block");
    }
  }
  return parts;
}

/** Adds `text` to the last user message, or as a user message after tool results. */
function appendText(chat: ChatMessage[], text: string): void {
  const last = chat.at(-1);
  if (last?.role === "user" && Array.isArray(last.content)) {
    last.content.push({ type: "text", text });
    return;
  }
  chat.push({ role: "user", content: [{ type: "text", text }] });
}

// ---------------------------------------------------------------------------------------
// Reply

/** Stop reasons of the Chat Completions API, as ours (the Messages API's). */
const STOP_REASONS: Record<string, string> = {
  stop: "end_turn",
  length: "max_tokens",
  tool_calls: "tool_use",
  function_call: "tool_use",
  content_filter: "refusal",
};

/** A tool call as its chunks built it so far. */
interface PartialCall {
  /** Its `index` in the stream. */
  index: number;
  id: string;
  name: string;
  arguments: string;
}

/** Puts a streamed reply together, chunk by chunk. */
export class ReplyAssembler {
  #text = "";
  /** The calls in the order they started. */
  readonly #calls: PartialCall[] = [];
  #finish: string | null = null;
  #usage: OpenAI.CompletionUsage | undefined;

  /** Takes one chunk; returns its text delta ("" when it has none). */
  add(chunk: Chunk): string {
    if (chunk.usage) this.#usage = chunk.usage;
    let delta = "";
    for (const choice of chunk.choices) {
      if (choice.index !== 0) continue;
      delta += choice.delta.content ?? "";
      for (const call of choice.delta.tool_calls ?? []) this.#addCall(call);
      if (choice.finish_reason) this.#finish = choice.finish_reason;
    }
    this.#text += delta;
    return delta;
  }

  #addCall(delta: OpenAI.Chat.Completions.ChatCompletionChunk.Choice.Delta.ToolCall): void {
    const index = delta.index ?? this.#calls.length;
    const known = this.#calls.findLast((call) => call.index === index);
    // A new index, or a new id at a known index (some Ollama versions give every call
    // index 0), starts a call; a piece without an id continues the call of its index.
    const starts =
      known === undefined || (Boolean(delta.id) && known.id !== "" && delta.id !== known.id);
    if (starts) {
      this.#calls.push({
        index,
        id: delta.id ?? "",
        name: delta.function?.name ?? "",
        arguments: delta.function?.arguments ?? "",
      });
      return;
    }
    if (delta.id) known.id = delta.id;
    if (delta.function?.name) known.name += delta.function.name;
    known.arguments += delta.function?.arguments ?? "";
  }

  /** The text so far. */
  get text(): string {
    return this.#text;
  }

  /** The reply; throws a retryable ModelError when the stream ended without a finish reason. */
  reply(): ModelReply {
    if (this.#finish === null) {
      throw new ModelError("The model endpoint's stream ended before the reply was complete.", {
        retryable: true,
      });
    }
    const calls = this.#calls;
    const content: Array<TextBlock | ToolUseBlock> = [
      ...(this.#text === "" ? [] : [{ type: "text" as const, text: this.#text }]),
      ...calls.map(toToolUse),
    ];
    // Some servers (Ollama) end a reply holding tool calls with `stop`.
    const stopReason = calls.length > 0 ? "tool_use" : (STOP_REASONS[this.#finish] ?? this.#finish);
    return { content, stopReason, usage: toTokenUsage(this.#usage) };
  }
}

function toToolUse(call: PartialCall, position: number): ToolUseBlock {
  return {
    type: "tool_use",
    // A server that gives no id (some local ones) still needs one for the result.
    id: call.id === "" ? `call_${position}` : call.id,
    name: call.name,
    input: parseArguments(call),
  };
}

/** The call's arguments as an object: unparsable JSON fails the call, as the tool would. */
function parseArguments(call: PartialCall): unknown {
  if (call.arguments.trim() === "") return {};
  try {
    return JSON.parse(call.arguments) as unknown;
  } catch {
    throw new ModelError(
      `The model called ${call.name} with arguments that are not JSON: ${call.arguments.slice(0, 200)}`,
      { retryable: true },
    );
  }
}

/**
 * Our usage from the API's: `prompt_tokens` counts the cached tokens too, which we keep
 * apart (`cacheRead`) as the Messages API does; the API reports no cache writes.
 */
export function toTokenUsage(usage: OpenAI.CompletionUsage | undefined): TokenUsage {
  const cached = usage?.prompt_tokens_details?.cached_tokens ?? 0;
  return {
    input: Math.max(0, (usage?.prompt_tokens ?? 0) - cached),
    output: usage?.completion_tokens ?? 0,
    cacheRead: cached,
    cacheWrite: 0,
  };
}
