/**
 * What the OpenAI Chat Completions API refuses with a 400, in its own words, for the
 * fake of test/fakes/openai.ts: unknown request fields and roles, content parts it does
 * not know, images outside user messages or in a data URL it cannot read, `tool`
 * messages that answer nothing, tool calls left unanswered, and tools whose schema is not
 * an object schema.
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
    if (type === "image_url") {
      const url = (part.image_url as { url?: unknown } | undefined)?.url;
      const refusal = imageUrlRefusal(String(url), `${at}.content[${index}].image_url.url`);
      if (refusal) return refusal;
    }
  }
  return null;
}

/** The image types the API reads, by the MIME type of a data URL. */
const IMAGE_TYPES = new Set(["image/png", "image/jpeg", "image/gif", "image/webp"]);

/** The first bytes of each image type the API reads. */
const IMAGE_SIGNATURES = [
  [0x89, 0x50, 0x4e, 0x47],
  [0xff, 0xd8, 0xff],
  [0x47, 0x49, 0x46, 0x38],
  [0x52, 0x49, 0x46, 0x46],
];

/**
 * The API's refusal of an `image_url`: an http(s) URL is fetched by the API (taken
 * here); a data URL must name an image type it reads and hold base64 that decodes to an
 * image, each refused in the API's words (code `invalid_value`, or
 * `invalid_image_format` for bytes that are not an image).
 */
function imageUrlRefusal(url: string, param: string): ApiErrorBody | null {
  if (/^https?:\/\//.test(url)) return null;
  const expected = `Invalid image URL: '${param}'. Expected a base64-encoded data URL with an image MIME type (e.g. 'data:image/png;base64,aW1nIGJ5dGVzIGhlcmU='), but got`;
  const refuse = (got: string) => ({
    ...invalid(`${expected} ${got}.`, param),
    code: "invalid_value",
  });
  const match = /^data:([^;,]*);base64,(.*)$/s.exec(url);
  if (!url.startsWith("data:")) return refuse("a value without the 'data:' prefix");
  if (!match) return refuse("a value with an invalid format");
  const [, mediaType = "", data = ""] = match;
  if (!IMAGE_TYPES.has(mediaType)) return refuse(`unsupported MIME type '${mediaType}'`);
  if (data === "") return refuse("empty base64-encoded bytes");
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(data) || data.length % 4 !== 0)
    return refuse("an invalid base64-encoded value");
  const bytes = Buffer.from(data, "base64");
  if (!IMAGE_SIGNATURES.some((signature) => signature.every((byte, i) => bytes[i] === byte))) {
    return {
      ...invalid(
        "You uploaded an unsupported image. Please make sure your image has of one the following formats: ['png', 'jpeg', 'gif', 'webp'].",
        param,
      ),
      code: "invalid_image_format",
    };
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

/**
 * Tokens of one image in a prompt: what OpenAI counts for a high-detail image of up to
 * 1,024 px a side (85 + 170 a 512 px tile), whatever the length of its data URL.
 */
const IMAGE_TOKENS = 765;

/**
 * A rough prompt token count: the messages and tools as JSON, 4 characters a token, each
 * image's data URL counted as {@link IMAGE_TOKENS}.
 */
export function estimatePromptTokens(body: FakeChatBody): number {
  let images = 0;
  const json = JSON.stringify([body.messages, body.tools ?? []], (key, value: unknown) => {
    if (key !== "image_url") return value;
    images += 1;
    return {};
  });
  return Math.ceil(json.length / 4) + images * IMAGE_TOKENS;
}
