/**
 * What the OpenAI Chat Completions API refuses with a 400, in its own words, for the
 * fake of test/fakes/openai.ts: unknown request fields and roles, content parts it does
 * not know, `tool` messages that answer nothing, tool calls left unanswered, and tools
 * whose schema is not an object schema.
 */
import type { ApiErrorBody, FakeChatBody, FakeChatMessage } from "./openai.js";

/** The request fields the fake accepts (the API knows more; picklebot sends these). */
const KNOWN_FIELDS = new Set([
  "model",
  "messages",
  "tools",
  "tool_choice",
  "stream",
  "stream_options",
  "max_tokens",
  "max_completion_tokens",
  "temperature",
  "parallel_tool_calls",
]);

const ROLES = new Set(["system", "developer", "user", "assistant", "tool"]);
const MESSAGE_FIELDS = new Set([
  "role",
  "content",
  "name",
  "tool_calls",
  "tool_call_id",
  "refusal",
]);
const PART_TYPES = new Set(["text", "image_url", "input_audio", "file"]);
const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/** The 400 the API answers `body` with, or null when it takes it. */
export function chatRefusal(body: FakeChatBody): ApiErrorBody | null {
  for (const field of Object.keys(body)) {
    if (!KNOWN_FIELDS.has(field))
      return invalid(`Unrecognized request argument supplied: ${field}`);
  }
  if (!Array.isArray(body.messages) || body.messages.length === 0) {
    return invalid(
      "Invalid 'messages': empty array. Expected an array with minimum length 1.",
      "messages",
    );
  }
  return messagesRefusal(body.messages) ?? toolsRefusal(body.tools);
}

function messagesRefusal(messages: FakeChatMessage[]): ApiErrorBody | null {
  /** Ids of the last assistant message's tool calls not answered yet. */
  let open: Set<string> | null = null;
  for (const [index, message] of messages.entries()) {
    const at = `messages[${index}]`;
    if (!ROLES.has(message.role)) {
      return invalid(
        `Invalid value: '${message.role}'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'.`,
        `${at}.role`,
      );
    }
    for (const field of Object.keys(message)) {
      if (!MESSAGE_FIELDS.has(field))
        return invalid(`Unrecognized request argument supplied: ${at}.${field}`);
    }
    const parts = partsRefusal(message, at);
    if (parts) return parts;
    if (message.role === "tool") {
      if (open === null || !open.has(String(message.tool_call_id))) {
        return invalid(
          "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
          `${at}.role`,
        );
      }
      open.delete(String(message.tool_call_id));
      continue;
    }
    if (open !== null && open.size > 0) {
      return invalid(
        `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${[...open].join(", ")}`,
        `${at}.role`,
      );
    }
    open =
      message.role === "assistant" && message.tool_calls?.length
        ? new Set(message.tool_calls.map((call) => call.id))
        : null;
  }
  return null;
}

function partsRefusal(message: FakeChatMessage, at: string): ApiErrorBody | null {
  if (!Array.isArray(message.content)) return null;
  for (const [index, part] of message.content.entries()) {
    const type = String(part.type);
    if (!PART_TYPES.has(type)) {
      return invalid(
        `Invalid value: '${type}'. Supported values are: 'text', 'image_url', 'input_audio', 'refusal', 'audio', and 'file'.`,
        `${at}.content[${index}].type`,
      );
    }
    if (type === "image_url" && message.role !== "user") {
      return invalid(
        `Image URLs are only allowed for messages with role 'user', but this message with role '${message.role}' contains an image URL.`,
        `${at}.content[${index}]`,
      );
    }
    const url = (part.image_url as { url?: unknown } | undefined)?.url;
    if (type === "image_url" && !/^(https?:|data:image\/[a-z]+;base64,)/.test(String(url))) {
      return invalid(
        "Invalid image URL: expected a URL or a data URL (data:image/png;base64,...).",
        `${at}.content[${index}].image_url.url`,
      );
    }
  }
  return null;
}

function toolsRefusal(tools: FakeChatBody["tools"]): ApiErrorBody | null {
  for (const [index, tool] of (tools ?? []).entries()) {
    if (tool.type !== "function") {
      return invalid(
        `Invalid value: '${tool.type}'. Supported values are: 'function' and 'custom'.`,
        `tools[${index}].type`,
      );
    }
    const name = tool.function?.name ?? "";
    if (!TOOL_NAME.test(name)) {
      return invalid(
        `Invalid 'tools[${index}].function.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.`,
        `tools[${index}].function.name`,
      );
    }
    const schema = tool.function.parameters as { type?: unknown } | undefined;
    if (
      schema !== undefined &&
      (typeof schema !== "object" || schema === null || schema.type !== "object")
    ) {
      return invalid(
        `Invalid schema for function '${name}': schema must be a JSON Schema of 'type: "object"', got 'type: "${String(schema?.type)}"'.`,
        `tools[${index}].function.parameters`,
      );
    }
  }
  return null;
}

function invalid(message: string, param?: string): ApiErrorBody {
  return { message, type: "invalid_request_error", ...(param ? { param } : {}) };
}

/** A rough prompt token count: the messages and tools as JSON, 4 characters a token. */
export function estimatePromptTokens(body: FakeChatBody): number {
  return Math.ceil(JSON.stringify([body.messages, body.tools ?? []]).length / 4);
}
