/**
 * The Anthropic adapter of {@link ModelProvider}: one streamed Messages API call per
 * `complete()`, on the official SDK (which also does the HTTP retries: `maxRetries`).
 *
 * Every request carries up to four prompt-cache breakpoints (the API's maximum), in the
 * API's prompt order tools → system → messages:
 *
 *   last tool      the tools alone, which outlive a system prompt whose date changed;
 *   system prompt  tools and system, shared by every session of the agent;
 *                  both with the `prefixCacheTtl` (1 hour by default: an hourly cron or
 *                  a chat that pauses still finds them);
 *   the previous call's last message (the third from the end): where the previous call
 *                  of the session wrote its prefix, so this call reads it however many
 *                  blocks came since (the API looks only 20 blocks back from a breakpoint);
 *   the last stored block of the last message: written for the next call (5 minutes).
 *
 * The current time, which changes on every call, goes after the last breakpoint, so it
 * never invalidates a cached prefix. Failures become {@link ModelError}s whose `retryable` tells a
 * transient failure (429, 5xx, 529, network, timeout, a stream cut short) from one that
 * will fail again (400, 401, 403, 404, 413). A call aborted through `request.signal`
 * rejects with the signal's `CancelledError` or `TimeoutError` instead (see
 * {@link abortedError}), so callers can tell a cancellation from a failure.
 *
 * The SDK is imported on the first call, not with this file, so a command that never
 * calls the model (`--version`, `status`, `jobs`) does not load it.
 */

import type Anthropic from "@anthropic-ai/sdk";
import type { APIError } from "@anthropic-ai/sdk";
import { assertNever } from "../../base/assert-never.js";
import { notShownText, serverBlockText } from "../../base/content.js";
import { abortedError, ModelError, toError } from "../../base/errors.js";
import { lazily } from "../../base/lazy-import.js";
import { redactSecrets } from "../../base/redact.js";
import { addUsage, oneHourWrites, webSearches } from "../../base/usage.js";
import { credentialRefused } from "../../config/index.js";
import {
  DEFAULT_MODEL_TIMEOUT_MS,
  type DocumentBlock,
  type ImageBlock,
  type MediaReader,
  type ModelProvider,
  type ModelReply,
  type ModelRequest,
  type ReplyContentBlock,
  type RequestContentBlock,
  type RequestMessage,
  type ServerToolResultBlock,
  type ServerToolSpec,
  type ServerToolUseBlock,
  type TokenCountRequest,
  type ToolSpec,
} from "../../ports/index.js";
import { createAnthropicBatches } from "./anthropic-batches.js";
import {
  describeCause,
  isRetryableStatus,
  retryAfterSeconds,
  shortRetryFetch,
} from "./http-failure.js";
import { type LoadedMedia, loadMedia, NO_MEDIA } from "./media.js";

/** Options of {@link createAnthropicProvider}. */
export interface AnthropicProviderOptions {
  /**
   * The API key. Missing or empty is not an error until the first `complete()`. The
   * environment is not read here: the config loader resolves `ANTHROPIC_API_KEY`.
   */
  apiKey?: string;
  /** Root of an Anthropic-compatible endpoint, without `/v1`. (Default: the SDK's, https://api.anthropic.com) */
  baseURL?: string;
  /** Time to wait for the response headers of one HTTP attempt. (Default: {@link DEFAULT_MODEL_TIMEOUT_MS}, 600 000, as the SDK's) */
  timeoutMs?: number;
  /** HTTP retries of a 408/409/429/5xx/network failure, inside one `complete()`. (Default: 2) */
  maxRetries?: number;
  /** The fetch the SDK uses. (Default: the global fetch) */
  fetch?: typeof fetch;
  /**
   * How long the API keeps the cached tools and system prompt after their last use
   * (`llm.prompt_cache_ttl`): `1h` writes them at 2× the input price instead of 1.25×,
   * and lets runs an hour apart read them at 0.1×. The conversation is always cached
   * for 5 minutes. (Default: `1h`)
   */
  prefixCacheTtl?: PromptCacheTtl;
  /**
   * Reads the bytes of a file an image or document block refers to. (Default: none; a
   * request holding such a block fails, saying so)
   */
  readMedia?: MediaReader;
  /**
   * The model takes images and PDFs (`vision`). False: each is sent as the line of text
   * that describes it, for a model behind an Anthropic-compatible endpoint that takes
   * none. (Default: true)
   */
  vision?: boolean;
  /**
   * Where the named model's keys are in picklebot.yaml (`llm`, `models.haiku`), as the
   * message of a missing key names it. (Default: `llm`)
   */
  section?: string;
}

/** A prompt-cache lifetime the API offers. */
export type PromptCacheTtl = "5m" | "1h";

/** This provider's name in the blocks it writes (`llm.provider`). */
const PROVIDER = "anthropic";

/**
 * The message of the ModelError thrown when no API key is configured for the named model
 * whose keys are under `section` of picklebot.yaml (`llm`, `models.haiku`).
 */
export function missingApiKeyMessage(section: string): string {
  return `No Anthropic API key: set ANTHROPIC_API_KEY in the environment or ${section}.api_key in picklebot.yaml.`;
}

/** {@link missingApiKeyMessage} of the default entry. */
export const MISSING_API_KEY_MESSAGE = missingApiKeyMessage("llm");

const EPHEMERAL = { type: "ephemeral" } as const;

/** The SDK module, as its dynamic import resolves. */
type Sdk = typeof import("@anthropic-ai/sdk");

/** The SDK, imported on first use and then shared by every provider. */
const loadSdk = lazily((): Promise<Sdk> => import("@anthropic-ai/sdk"));

/** The SDK and a client of it, made on a provider's first call. */
interface Connection {
  sdk: Sdk;
  client: Anthropic;
}

/** What error messages need to know about the client. */
interface ClientSettings {
  apiKey: string;
  timeoutMs: number;
  /** The breakpoint of the tools and the system prompt. */
  prefixCache: Anthropic.CacheControlEphemeral;
}

/** Creates a {@link ModelProvider} that calls the Anthropic Messages API. */
export function createAnthropicProvider(options: AnthropicProviderOptions = {}): ModelProvider {
  const settings = {
    apiKey: options.apiKey ?? "",
    timeoutMs: options.timeoutMs ?? DEFAULT_MODEL_TIMEOUT_MS,
    prefixCache:
      (options.prefixCacheTtl ?? "1h") === "1h"
        ? { type: "ephemeral" as const, ttl: "1h" as const }
        : EPHEMERAL,
  };
  if (settings.apiKey === "") return withoutApiKey(options.section ?? "llm");
  const readMedia = (messages: readonly RequestMessage[]) =>
    options.vision === false ? Promise.resolve(NO_MEDIA) : loadMedia(messages, options.readMedia);
  let connecting: Promise<Connection> | undefined;
  const connect = () => {
    connecting ??= loadSdk().then((sdk) => ({ sdk, client: createClient(sdk, settings, options) }));
    return connecting;
  };
  /** Runs `call` on the client; what it throws becomes a ModelError (or the abort's error). */
  async function onClient<T>(
    signal: AbortSignal | undefined,
    call: (client: Anthropic) => Promise<T>,
  ): Promise<T> {
    const { sdk, client } = await connect();
    try {
      return await call(client);
    } catch (thrown) {
      throw toModelError(thrown, sdk, { ...settings, signal, connected: false });
    }
  }
  return {
    batches: createAnthropicBatches(onClient, {
      toParams: async (request) =>
        toMessageParams(request, settings, await readMedia(request.messages)),
      toReply: toModelReply,
    }),
    async complete(request) {
      const media = await readMedia(request.messages);
      return streamReply(await connect(), request, settings, media);
    },
    async countTokens(request) {
      const media = await readMedia(request.messages);
      return onClient(request.signal, async (client) => {
        const params = toCountParams(request, settings, media);
        const counted = await client.messages.countTokens(params, {
          signal: request.signal,
        });
        return counted.input_tokens;
      });
    },
  };
}

/** A provider without an API key: each call fails, saying where to set one; no batch API. */
function withoutApiKey(section: string): ModelProvider {
  const missing = () => new ModelError(missingApiKeyMessage(section), { retryable: false });
  return {
    async complete() {
      throw missing();
    },
    async countTokens() {
      throw missing();
    },
  };
}

function createClient(
  sdk: Sdk,
  settings: ClientSettings,
  options: AnthropicProviderOptions,
): Anthropic {
  return new sdk.default({
    apiKey: settings.apiKey,
    timeout: settings.timeoutMs,
    maxRetries: options.maxRetries ?? 2,
    ...(options.baseURL === undefined ? {} : { baseURL: options.baseURL }),
    fetch: shortRetryFetch(options.fetch),
  });
}

/**
 * Continuations of a turn the API paused (`pause_turn`: a long server-side search) before
 * the reply is taken as it stands, with stop reason `pause_turn` (the turn then ends).
 */
export const MAX_PAUSE_CONTINUATIONS = 5;

/**
 * Streams the reply; a turn the API paused is continued by sending its content so far
 * back as the assistant's message, as the API asks, up to {@link MAX_PAUSE_CONTINUATIONS}
 * times. The reply holds every part's content, and the usage of every call.
 */
async function streamReply(
  connection: Connection,
  request: ModelRequest,
  settings: ClientSettings,
  media: LoadedMedia,
): Promise<ModelReply> {
  const params = toMessageParams(request, settings, media);
  const paused: Anthropic.ContentBlock[] = [];
  const replies: ModelReply[] = [];
  for (;;) {
    const continued: Anthropic.MessageStreamParams =
      paused.length === 0
        ? params
        : { ...params, messages: [...params.messages, { role: "assistant", content: paused }] };
    const message = await streamMessage(connection, request, settings, continued);
    replies.push(toModelReply(message));
    if (message.stop_reason !== "pause_turn" || replies.length > MAX_PAUSE_CONTINUATIONS) break;
    paused.push(...message.content);
  }
  return joinReplies(replies);
}

/** The parts of a reply the API paused and continued, as one reply. */
function joinReplies(replies: readonly ModelReply[]): ModelReply {
  const [first, ...rest] = replies;
  if (!first) throw new RangeError("a reply has at least one part");
  return rest.reduce(
    (joined, part) => ({
      content: [...joined.content, ...part.content],
      stopReason: part.stopReason,
      usage: addUsage(joined.usage, part.usage),
    }),
    first,
  );
}

/** One streamed Messages API call. */
async function streamMessage(
  { sdk, client }: Connection,
  request: ModelRequest,
  settings: ClientSettings,
  params: Anthropic.MessageStreamParams,
): Promise<Anthropic.Message> {
  const stream = client.messages.stream(params, { signal: request.signal });
  let connected = false;
  let listenerError: { thrown: unknown } | undefined;
  stream.on("connect", () => {
    connected = true;
  });
  const onText = request.onText;
  if (onText) {
    stream.on("text", (delta) => {
      // A failing listener is the caller's bug, not the model's: stop and rethrow it as is.
      try {
        onText(delta);
      } catch (thrown) {
        listenerError ??= { thrown };
        stream.abort();
      }
    });
  }
  try {
    return await stream.finalMessage();
  } catch (thrown) {
    if (listenerError) throw listenerError.thrown;
    throw toModelError(thrown, sdk, { ...settings, signal: request.signal, connected });
  }
}

// ---------------------------------------------------------------------------------------
// Request: our types to the SDK's, with cache breakpoints

function toMessageParams(
  request: ModelRequest,
  settings: ClientSettings,
  media: LoadedMedia,
): Anthropic.MessageStreamParams {
  return {
    ...toCountParams(request, settings, media),
    max_tokens: request.maxTokens,
    messages: withCacheBreakpoints(request.messages, request.currentTime, media),
  };
}

function toCountParams(
  request: TokenCountRequest,
  { prefixCache }: ClientSettings,
  media: LoadedMedia,
): Anthropic.MessageCountTokensParams {
  return {
    model: request.model,
    // The API rejects empty text blocks, so an empty system prompt is left out.
    ...(request.system === ""
      ? {}
      : { system: [{ type: "text", text: request.system, cache_control: prefixCache }] }),
    messages: request.messages.map((message) => toMessageParam(message, media)),
    ...(request.tools.length === 0 && (request.serverTools ?? []).length === 0
      ? {}
      : { tools: toTools(request.tools, request.serverTools ?? [], prefixCache) }),
  };
}

/**
 * The messages with a breakpoint on the last block of the last message and of the third
 * from the end (the previous call's last message), then the current time as an extra
 * block that is not cached; the caller's objects stay as they were.
 */
function withCacheBreakpoints(
  messages: RequestMessage[],
  currentTime: string | undefined,
  media: LoadedMedia,
): Anthropic.MessageParam[] {
  if ((messages.at(-1)?.content.length ?? 0) === 0) {
    return messages.map((message) => toMessageParam(message, media));
  }
  const time: Anthropic.ContentBlockParam[] =
    currentTime === undefined ? [] : [{ type: "text", text: `(current time: ${currentTime})` }];
  return messages.map((message, index) => {
    if (index === messages.length - 1) {
      return {
        role: message.role,
        content: [...withBreakpointOnLastBlock(message.content, media), ...time],
      };
    }
    if (index === messages.length - 3) {
      return { role: message.role, content: withBreakpointOnLastBlock(message.content, media) };
    }
    return toMessageParam(message, media);
  });
}

function withBreakpointOnLastBlock(
  content: RequestMessage["content"],
  media: LoadedMedia,
): Anthropic.ContentBlockParam[] {
  return content.map((block, index) =>
    index === content.length - 1
      ? { ...toBlockParam(block, media), cache_control: EPHEMERAL }
      : toBlockParam(block, media),
  );
}

function toMessageParam(message: RequestMessage, media: LoadedMedia): Anthropic.MessageParam {
  return {
    role: message.role,
    content: message.content.map((block) => toBlockParam(block, media)),
  };
}

/**
 * One of our blocks as the API takes it (the same fields, in the same order); an image or
 * a document with its file's bytes as base64, or as the text that describes it when its
 * file was not loaded (a model that takes none).
 */
function toBlockParam(block: RequestContentBlock, media: LoadedMedia): Anthropic.ContentBlockParam {
  switch (block.type) {
    case "text":
      return { type: "text", text: block.text };
    case "image":
    case "document":
      return mediaBlockParam(block, media);
    case "tool_use":
      return { type: "tool_use", id: block.id, name: block.name, input: block.input };
    case "tool_result":
      return {
        type: "tool_result",
        tool_use_id: block.tool_use_id,
        content: block.content,
        ...(block.is_error === undefined ? {} : { is_error: block.is_error }),
      };
    case "server_tool_use":
    case "server_tool_result":
      return serverBlockParam(block);
    default:
      return assertNever(block, "request block");
  }
}

/**
 * A block the API wrote while running a server tool, sent back as it came. One written
 * by another provider (the agent's model changed) goes as text: this API cannot read it.
 */
function serverBlockParam(
  block: ServerToolUseBlock | ServerToolResultBlock,
): Anthropic.ContentBlockParam {
  if (block.provider === PROVIDER) return block.raw as unknown as Anthropic.ContentBlockParam;
  return { type: "text", text: serverBlockText(block) };
}

/** An image or a document with its file's base64, or its description when not loaded. */
function mediaBlockParam(
  block: ImageBlock | DocumentBlock,
  media: LoadedMedia,
): Anthropic.ContentBlockParam {
  const data = media.get(block.media.sha256);
  if (data === undefined) return { type: "text", text: notShownText(block) };
  if (block.type === "image") {
    return { type: "image", source: { type: "base64", media_type: block.mediaType, data } };
  }
  return {
    type: "document",
    source: { type: "base64", media_type: block.mediaType, data },
    title: block.media.name,
  };
}

/** The request's tools, then its server tools, the last one carrying the breakpoint. */
function toTools(
  tools: ToolSpec[],
  serverTools: readonly ServerToolSpec[],
  cacheControl: Anthropic.CacheControlEphemeral,
): Anthropic.ToolUnion[] {
  const all: Anthropic.ToolUnion[] = [
    ...tools.map((tool) => ({
      name: tool.name,
      description: tool.description,
      input_schema: { ...tool.input_schema, type: "object" as const },
    })),
    ...serverTools.map(toServerTool),
  ];
  return all.map((tool, index) =>
    index === all.length - 1 ? { ...tool, cache_control: cacheControl } : tool,
  );
}

/** A server tool as this API offers it. */
function toServerTool(spec: ServerToolSpec): Anthropic.ToolUnion {
  switch (spec.kind) {
    case "web_search":
      return { type: "web_search_20250305", name: "web_search", max_uses: spec.maxUses };
    default:
      return assertNever(spec.kind, "server tool");
  }
}

// ---------------------------------------------------------------------------------------
// Reply: the SDK's message to ours

function toModelReply(message: Anthropic.Message): ModelReply {
  // The SDK accepts a stream that ends without message_delta; the reply is then partial.
  if (message.stop_reason === null) {
    throw new ModelError("The Anthropic API stream ended before the reply was complete.", {
      retryable: true,
    });
  }
  const content = message.content.flatMap(toReplyBlock);
  const usage = message.usage;
  return {
    content,
    stopReason: message.stop_reason,
    usage: {
      input: usage.input_tokens,
      output: usage.output_tokens,
      cacheRead: usage.cache_read_input_tokens ?? 0,
      cacheWrite: usage.cache_creation_input_tokens ?? 0,
      ...oneHourWrites(usage.cache_creation?.ephemeral_1h_input_tokens),
      ...webSearches(usage.server_tool_use?.web_search_requests),
    },
  };
}

/**
 * One block of the API's reply as ours: text, tool calls, and the web search the API ran
 * (kept whole in `raw`, to be sent back as it came); other kinds are dropped.
 */
function toReplyBlock(block: Anthropic.ContentBlock): ReplyContentBlock[] {
  const raw = block as unknown as Record<string, unknown>;
  switch (block.type) {
    case "text":
      return [{ type: "text", text: block.text }];
    case "tool_use":
      return [{ type: "tool_use", id: block.id, name: block.name, input: block.input ?? {} }];
    case "server_tool_use": {
      const { id, name, input } = block;
      return [{ type: "server_tool_use", id, name, input: input ?? {}, provider: PROVIDER, raw }];
    }
    case "web_search_tool_result":
      return [
        {
          ...searchResultText(block.content),
          type: "server_tool_result",
          tool_use_id: block.tool_use_id,
          provider: PROVIDER,
          raw,
        },
      ];
    default:
      return [];
  }
}

/** A web search's result as text: each page's title and URL, or the API's error code. */
function searchResultText(
  content: Anthropic.WebSearchToolResultBlockContent,
): Pick<ServerToolResultBlock, "content" | "is_error"> {
  if (!Array.isArray(content)) {
    return { content: `web search failed: ${content.error_code}`, is_error: true };
  }
  const lines = content.map((result) => `${result.title} ${result.url}`);
  return { content: lines.length > 0 ? lines.join("\n") : "web search found nothing" };
}

// ---------------------------------------------------------------------------------------
// Errors

const PERMANENT_ERROR_TYPES = new Set([
  "invalid_request_error",
  "authentication_error",
  "permission_error",
  "not_found_error",
  "request_too_large",
  "billing_error",
]);

interface FailureContext extends ClientSettings {
  signal: AbortSignal | undefined;
  /** Whether the response had started: a later non-API error means the stream broke off. */
  connected: boolean;
}

function toModelError(thrown: unknown, sdk: Sdk, context: FailureContext): Error {
  if (context.signal?.aborted || thrown instanceof sdk.APIUserAbortError) {
    return abortedError(context.signal, thrown, "The model call was cancelled.");
  }
  if (thrown instanceof ModelError) return thrown;
  if (thrown instanceof sdk.APIConnectionTimeoutError) {
    const seconds = context.timeoutMs / 1000;
    return new ModelError(`The Anthropic API did not answer within ${seconds} s.`, {
      cause: thrown,
      retryable: true,
    });
  }
  if (thrown instanceof sdk.APIConnectionError) {
    const reason = redactSecrets(describeCause(thrown), [context.apiKey]);
    return new ModelError(`Could not reach the Anthropic API: ${reason}.`, {
      cause: thrown,
      retryable: true,
    });
  }
  if (thrown instanceof sdk.APIError) return fromApiError(thrown, context.apiKey);
  const error = toError(thrown);
  const message = redactSecrets(error.message, [context.apiKey]);
  if (context.connected) {
    return new ModelError(`The Anthropic API stream broke off: ${message}.`, {
      cause: error,
      retryable: true,
    });
  }
  return new ModelError(`The Anthropic API call failed: ${message}.`, { cause: error });
}

function fromApiError(error: APIError, apiKey: string): ModelError {
  const status = error.status;
  const type = error.type ?? "error";
  const detail = redactSecrets(error.apiMessage ?? error.message, [apiKey]);
  const where = status === undefined ? "in its stream" : `with status ${status}`;
  const refused = status === 401;
  const message = refused
    ? credentialRefused("anthropic", `status 401, ${type}: ${detail}`)
    : `The Anthropic API answered ${where} (${type}): ${detail}`;
  const retryable =
    status === undefined ? !PERMANENT_ERROR_TYPES.has(type) : isRetryableStatus(status);
  const retryAfterS = retryAfterSeconds(error.headers);
  return new ModelError(message, {
    cause: error,
    retryable,
    credentialRefused: refused,
    ...(status === undefined ? {} : { status }),
    ...(retryAfterS === undefined ? {} : { retryAfterS }),
    context: { status, type, requestId: error.requestID ?? undefined },
  });
}
