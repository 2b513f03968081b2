/**
 * The OpenAI-compatible adapter of {@link ModelProvider}: one streamed Chat Completions
 * call per `complete()`, on the official `openai` SDK (which also does the HTTP retries:
 * `maxRetries`). It serves OpenAI, OpenRouter, Groq, Together, vLLM, LM Studio,
 * llama.cpp's server and Ollama's `/v1` (docs/guides/models.md).
 *
 * The conversion of requests and replies is in openai-messages.ts; images go as data URLs
 * read through `readMedia` (none with `vision: false`). What only Anthropic's
 * API has is off here, and nothing is sent for it: prompt-cache breakpoints (OpenAI-style
 * APIs cache prefixes by themselves and report the reads), `count_tokens`, the batch API.
 * Tool calls that a local model writes as text are repaired into calls
 * (text-tool-calls.ts). Failures become {@link ModelError}s, retryable or not by their
 * status as for Anthropic; a refusal for a prompt over the context window is not
 * retryable and names the window, in the words the context budget reads
 * ("prompt is too long: N tokens > M maximum") when the endpoint gave the numbers.
 *
 * No API key is sent when none is configured (a local server); a hosted endpoint
 * without one fails each call, saying where to set it. The SDK is imported on the first
 * call, not with this file.
 */
import type OpenAI from "openai";
import type { APIError } from "openai";
import { abortedError, ModelError, toError } from "../../base/errors.js";
import { lazily } from "../../base/lazy-import.js";
import { isLocalEndpoint } from "../../base/local-endpoint.js";
import { redactSecrets } from "../../base/redact.js";
import { credentialRefused } from "../../config/index.js";
import {
  DEFAULT_MODEL_TIMEOUT_MS,
  type MediaReader,
  type ModelProvider,
  type ModelReply,
  type ModelRequest,
} from "../../ports/index.js";
import {
  describeCause,
  isRetryableStatus,
  retryAfterSeconds,
  shortRetryFetch,
} from "./http-failure.js";
import { type LoadedMedia, loadMedia, NO_MEDIA } from "./media.js";
import { ReplyAssembler, toChatMessages, toChatTools } from "./openai-messages.js";
import { repairTextToolCalls, TextToolCallFilter } from "./text-tool-calls.js";

/** The endpoint when `llm.base_url` is not set: OpenAI's own API. */
export const OPENAI_BASE_URL = "https://api.openai.com/v1";

/** Options of {@link createOpenAiCompatibleProvider}. */
export interface OpenAiCompatibleOptions {
  /** Root of the API, with its `/v1`. (Default: {@link OPENAI_BASE_URL}) */
  baseURL?: string;
  /**
   * The API key, sent as a bearer token. Absent or empty: none is sent, which a local
   * server accepts; a hosted endpoint's calls then fail, saying where to set it.
   */
  apiKey?: string;
  /** Time to wait for the response headers of one HTTP attempt. (Default: {@link DEFAULT_MODEL_TIMEOUT_MS}) */
  timeoutMs?: number;
  /** HTTP retries of a 408/409/429/5xx/network failure, inside one `complete()`. (Default: 2) */
  maxRetries?: number;
  /** The fetch the SDK uses. (Default: the global fetch) */
  fetch?: typeof fetch;
  /**
   * Reads the bytes of the file an image block refers to. (Default: none; a request
   * holding an image for a model that takes images fails, saying so)
   */
  readMedia?: MediaReader;
  /**
   * The model takes images (`vision`): each is sent as a data URL. False: as the line of
   * text that describes it, for a text-only model. (Default: true)
   */
  vision?: boolean;
  /**
   * Where the named model's keys are in picklebot.yaml (`llm`, `models.haiku`), as the
   * message of a missing key names it. (Default: `llm`)
   */
  section?: string;
}

/** The SDK module, as its dynamic import resolves. */
type Sdk = typeof import("openai");

/** The SDK, imported on first use and then shared by every provider. */
const loadSdk = lazily((): Promise<Sdk> => import("openai"));

/** What a call needs besides the request. */
interface Endpoint {
  baseURL: string;
  apiKey: string;
  timeoutMs: number;
  /** OpenAI's own API, which takes `max_completion_tokens` (its newer models refuse `max_tokens`). */
  official: boolean;
}

/** Creates a {@link ModelProvider} that calls an OpenAI-compatible Chat Completions API. */
export function createOpenAiCompatibleProvider(
  options: OpenAiCompatibleOptions = {},
): ModelProvider {
  const baseURL = (options.baseURL ?? OPENAI_BASE_URL).replace(/\/+$/, "");
  const endpoint: Endpoint = {
    baseURL,
    apiKey: options.apiKey ?? "",
    timeoutMs: options.timeoutMs ?? DEFAULT_MODEL_TIMEOUT_MS,
    official: new URL(baseURL).hostname === "api.openai.com",
  };
  if (endpoint.apiKey === "" && !isLocalEndpoint(baseURL))
    return withoutApiKey(missingKeyMessage(baseURL, options.section ?? "llm"));
  let connecting: Promise<{ sdk: Sdk; client: OpenAI }> | undefined;
  const connect = () => {
    connecting ??= loadSdk().then((sdk) => ({ sdk, client: createClient(sdk, endpoint, options) }));
    return connecting;
  };
  const windows = new Map<string, Promise<number>>();
  return {
    async complete(request) {
      const images =
        options.vision === false
          ? NO_MEDIA
          : await loadMedia(request.messages, options.readMedia, (block) => block.type === "image");
      const { sdk, client } = await connect();
      return streamReply(sdk, client, request, { ...endpoint, images });
    },
    contextWindow(model, signal) {
      let window = windows.get(model);
      if (!window) {
        window = connect()
          .then(({ client }) => listedContextWindow(client, model, signal))
          .catch(() => {
            // A cancelled turn's lookup is not the endpoint's answer: ask again next time.
            if (signal?.aborted) windows.delete(model);
            return undefined;
          })
          .then((listed) => listed ?? UNLISTED_CONTEXT_WINDOW);
        windows.set(model, window);
      }
      return window;
    },
  };
}

/**
 * The window of a model whose endpoint does not report one (Ollama, LM Studio and
 * OpenAI's own list do not): what most local models are run with, so that compaction
 * comes before a server cuts the prompt. Set `llm.context_window` for the real one.
 */
export const UNLISTED_CONTEXT_WINDOW = 32_768;

/** The longest wait for the model list, which the first turn of a model waits for. */
const MODEL_LIST_TIMEOUT_MS = 10_000;

/** The fields a model list entry gives its window in: OpenRouter and Together, Groq, vLLM, LM Studio. */
const WINDOW_FIELDS = ["context_length", "context_window", "max_model_len", "max_context_length"];

/** The window `/models` reports for `model`, when the endpoint lists it with one. */
async function listedContextWindow(
  client: OpenAI,
  model: string,
  signal: AbortSignal | undefined,
): Promise<number | undefined> {
  // A turn waits for this answer: an endpoint that does not give it soon gives none.
  const deadline = AbortSignal.timeout(MODEL_LIST_TIMEOUT_MS);
  const options = {
    signal: signal ? AbortSignal.any([signal, deadline]) : deadline,
    maxRetries: 0,
    timeout: MODEL_LIST_TIMEOUT_MS,
  };
  for await (const entry of client.models.list(options)) {
    if (entry.id === model) return contextWindowOfListed(entry);
  }
  return undefined;
}

/** The context window a `/models` entry reports, in the first field that holds one. */
export function contextWindowOfListed(entry: object): number | undefined {
  const fields = entry as Record<string, unknown>;
  for (const field of WINDOW_FIELDS) {
    const value = fields[field];
    if (typeof value === "number" && Number.isInteger(value) && value > 0) return value;
  }
  return undefined;
}

/** How picklebot.yaml names a key kept in the environment, as the messages show it. */
const ENV_REFERENCE = "$" + "{OPENROUTER_API_KEY}";

/**
 * How picklebot.yaml would name the environment variable of `baseURL`'s key:
 * `${OPENAI_API_KEY}` for OpenAI's own API, else {@link ENV_REFERENCE} as an example.
 */
export function envReferenceFor(baseURL: string): string {
  return new URL(baseURL).hostname === "api.openai.com" ? "$" + "{OPENAI_API_KEY}" : ENV_REFERENCE;
}

/**
 * The message of the ModelError of a hosted endpoint without an API key, for the named
 * model whose keys are under `section` of picklebot.yaml (`llm`, `models.haiku`).
 */
function missingKeyMessage(baseURL: string, section: string): string {
  return (
    `No API key for the model endpoint ${baseURL}: set ${section}.api_key in picklebot.yaml ` +
    `(e.g. api_key: ${envReferenceFor(baseURL)}, with the key in the workspace .env); ` +
    "only a server on this machine or the local network goes without one."
  );
}

function withoutApiKey(message: string): ModelProvider {
  return {
    async complete() {
      throw new ModelError(message, { retryable: false });
    },
  };
}

function createClient(sdk: Sdk, endpoint: Endpoint, options: OpenAiCompatibleOptions): OpenAI {
  const keyless = endpoint.apiKey === "";
  return new sdk.default({
    // The SDK requires a key; without one its Authorization header is removed below.
    apiKey: keyless ? "none" : endpoint.apiKey,
    baseURL: endpoint.baseURL,
    // Set so that the SDK does not read OPENAI_ORG_ID and OPENAI_PROJECT_ID.
    organization: null,
    project: null,
    timeout: endpoint.timeoutMs,
    maxRetries: options.maxRetries ?? 2,
    ...(keyless ? { defaultHeaders: { Authorization: null } } : {}),
    fetch: shortRetryFetch(options.fetch),
  });
}

/**
 * The body of one streamed Chat Completions call, with the images whose files are in
 * `images` as data URLs.
 */
export function toChatParams(
  request: ModelRequest,
  official: boolean,
  images: LoadedMedia = NO_MEDIA,
): OpenAI.Chat.Completions.ChatCompletionCreateParamsStreaming {
  return {
    model: request.model,
    messages: toChatMessages(request, images),
    ...(request.tools.length === 0 ? {} : { tools: toChatTools(request.tools) }),
    ...(official
      ? { max_completion_tokens: request.maxTokens }
      : { max_tokens: request.maxTokens }),
    stream: true,
    stream_options: { include_usage: true },
  };
}

async function streamReply(
  sdk: Sdk,
  client: OpenAI,
  request: ModelRequest,
  endpoint: Endpoint & { images: LoadedMedia },
): Promise<ModelReply> {
  const toolNames = new Set(request.tools.map((tool) => tool.name));
  let listenerError: { thrown: unknown } | undefined;
  const controller = new AbortController();
  const signal = request.signal
    ? AbortSignal.any([request.signal, controller.signal])
    : controller.signal;
  const onText = request.onText;
  const guarded =
    onText &&
    ((delta: string) => {
      // A failing listener is the caller's bug, not the model's: stop and rethrow it as is.
      try {
        onText(delta);
      } catch (thrown) {
        listenerError ??= { thrown };
        controller.abort();
      }
    });
  const filter = guarded && toolNames.size > 0 ? new TextToolCallFilter(guarded) : undefined;
  const assembler = new ReplyAssembler();
  let connected = false;
  try {
    const { data: stream, response } = await client.chat.completions
      .create(toChatParams(request, endpoint.official, endpoint.images), { signal })
      .withResponse();
    connected = true;
    refuseHtml(response, endpoint.baseURL);
    for await (const chunk of stream) {
      const delta = assembler.add(chunk);
      if (delta === "") continue;
      if (filter) filter.write(delta);
      else guarded?.(delta);
      if (listenerError) break;
      // Chunks already received are read without waiting: an abort must stop them too.
      request.signal?.throwIfAborted();
    }
    if (listenerError) throw listenerError.thrown;
    const reply = finish(assembler, toolNames, filter);
    // The held-back text reaches the listener only now (TypeScript cannot see the callback set it).
    const late = listenerError as { thrown: unknown } | undefined;
    if (late) throw late.thrown;
    return reply;
  } catch (thrown) {
    if (listenerError) throw listenerError.thrown;
    throw toModelError(thrown, sdk, { ...endpoint, signal: request.signal, connected });
  }
}

/** The reply, with tool calls written as text repaired into calls. */
function finish(
  assembler: ReplyAssembler,
  toolNames: ReadonlySet<string>,
  filter: TextToolCallFilter | undefined,
): ModelReply {
  const reply = assembler.reply();
  const hasCalls = reply.content.some((block) => block.type === "tool_use");
  const repaired = hasCalls ? null : repairTextToolCalls(assembler.text, toolNames);
  filter?.end(repaired !== null);
  if (!repaired) return reply;
  return {
    ...reply,
    stopReason: "tool_use",
    content: [
      ...(repaired.text === "" ? [] : [{ type: "text" as const, text: repaired.text }]),
      ...repaired.calls.map((call, index) => ({
        type: "tool_use" as const,
        id: `call_text_${index}`,
        name: call.name,
        input: call.input,
      })),
    ],
  };
}

/** A 2xx answer that is a web page: the base URL points at a site, not at the API. */
function refuseHtml(response: Response, baseURL: string): void {
  const type = response.headers.get("content-type") ?? "";
  if (!type.includes("text/html")) return;
  throw new ModelError(
    `The model endpoint ${baseURL} answered with a web page (HTTP ${response.status}, ${type}), not the OpenAI API: check llm.base_url in picklebot.yaml (it usually ends in /v1, e.g. http://127.0.0.1:11434/v1 for Ollama).`,
    { retryable: false, status: response.status },
  );
}

// ---------------------------------------------------------------------------------------
// Errors

interface FailureContext extends Endpoint {
  signal: AbortSignal | undefined;
  /** Whether the response had started: a later non-API error means the stream broke off. */
  connected: boolean;
}

function toModelError(thrown: unknown, sdk: Sdk, context: FailureContext): Error {
  if (context.signal?.aborted || thrown instanceof sdk.APIUserAbortError) {
    return abortedError(context.signal, thrown, "The model call was cancelled.");
  }
  if (thrown instanceof ModelError) return thrown;
  const where = `the model endpoint ${context.baseURL}`;
  if (thrown instanceof sdk.APIConnectionTimeoutError) {
    return new ModelError(
      `${capitalised(where)} did not answer within ${context.timeoutMs / 1000} s.`,
      {
        cause: thrown,
        retryable: true,
      },
    );
  }
  if (thrown instanceof sdk.APIConnectionError) {
    const reason = redactSecrets(describeCause(thrown), [context.apiKey]);
    return new ModelError(`Could not reach ${where}: ${reason}.`, {
      cause: thrown,
      retryable: true,
    });
  }
  if (thrown instanceof sdk.APIError) return fromApiError(thrown, context);
  const error = toError(thrown);
  const message = redactSecrets(error.message, [context.apiKey]);
  if (context.connected) {
    return new ModelError(`The stream of ${where} broke off: ${message}.`, {
      cause: error,
      retryable: true,
    });
  }
  return new ModelError(`The call to ${where} failed: ${message}.`, { cause: error });
}

/** Error types and codes that a retry of the same request will meet again. */
const PERMANENT_ERRORS = new Set([
  "invalid_request_error",
  "authentication_error",
  "permission_error",
  "not_found_error",
  "context_length_exceeded",
  "exceed_context_size_error",
  "invalid_api_key",
  "model_not_found",
]);

function fromApiError(error: APIError, context: FailureContext): ModelError {
  const status = error.status;
  const detail = redactSecrets(apiWords(error), [context.apiKey]);
  const tooLong = contextOverflow(error, detail);
  const where = status === undefined ? "in its stream" : `with status ${status}`;
  const answered = `The model endpoint ${context.baseURL} answered ${where}: ${detail}`;
  const refused = status === 401;
  const message = refused
    ? credentialRefused("openai-compatible", `status 401: ${detail}`)
    : tooLong !== null
      ? `${answered}. ${tooLong}`
      : answered;
  const code = error.code ?? error.type ?? "";
  const retryable =
    tooLong === null &&
    (status === undefined ? !PERMANENT_ERRORS.has(code) : isRetryableStatus(status));
  const retryAfterS = retryAfterSeconds(error.headers);
  return new ModelError(message, {
    cause: error,
    retryable,
    credentialRefused: refused,
    ...(status === undefined ? {} : { status }),
    ...(retryAfterS === undefined ? {} : { retryAfterS }),
    context: { status, code, requestId: error.requestID ?? undefined },
  });
}

/** The API's own words: its error message, or "an HTML page" for a proxy's error page. */
function apiWords(error: APIError): string {
  const body = error.error as { message?: unknown } | undefined;
  const words = typeof body?.message === "string" ? body.message : error.message;
  if (/<!doctype html|<html/i.test(words)) {
    return "an HTML page instead of an API answer (a proxy's error page, or llm.base_url points at a web site)";
  }
  return words.replace(/\s+/g, " ").trim();
}

/**
 * For a refusal of a prompt over the context window, what to do, with the counts in
 * the words the context budget reads when the endpoint gave them; else null.
 * OpenAI and vLLM: "maximum context length is 8192 tokens. However, you requested 9000
 * tokens (8000 in the messages, 1000 in the completion)"; llama.cpp: `n_prompt_tokens`
 * and `n_ctx` beside "exceeds the available context size".
 */
function contextOverflow(error: APIError, detail: string): string | null {
  const body = (error.error ?? {}) as Record<string, unknown>;
  const known =
    PERMANENT_CONTEXT_CODES.has(String(error.code ?? error.type ?? "")) ||
    /context length|context size|context window|too many tokens|prompt is too long/i.test(detail);
  if (!known) return null;
  const openAi = /maximum context length is (\d+) tokens.*?\((\d+) in the messages/i.exec(detail);
  const limit = openAi ? Number(openAi[1]) : Number(body.n_ctx);
  const tokens = openAi ? Number(openAi[2]) : Number(body.n_prompt_tokens);
  const counts =
    Number.isFinite(limit) && Number.isFinite(tokens) && limit > 0
      ? `prompt is too long: ${tokens} tokens > ${limit} maximum; `
      : "";
  return `${counts}the request is over the model's context window: set llm.context_window in picklebot.yaml to the window the server gives the model (Ollama: its num_ctx), so that picklebot compacts before it.`;
}

const PERMANENT_CONTEXT_CODES = new Set(["context_length_exceeded", "exceed_context_size_error"]);

function capitalised(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
