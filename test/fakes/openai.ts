/**
 * A fake OpenAI-compatible API on 127.0.0.1 (`/v1/chat/completions` and `/v1/models`),
 * for tests that run the real `openai` SDK.
 *
 * A chat request is answered with the next scripted reply (or the default one): an SSE
 * stream of `chat.completion.chunk`s when it says `stream: true`, ending with a usage
 * chunk when `stream_options.include_usage` asks for one, and `data: [DONE]`. Tool calls
 * stream as the API streams them: the id and name first, then the arguments in pieces,
 * the pieces of parallel calls interleaved. Every answered request is recorded.
 *
 * It refuses what the real API refuses, with its 400 and words (see openai-rules.ts):
 * a `tool` message that answers no preceding assistant `tool_calls`, tool calls left
 * without an answer, an unknown role or content part, a tool whose schema is not an
 * object schema, a field the API does not know (such as `cache_control`), and, with
 * `promptTokenLimit`, a prompt over the context window. A refused request is recorded in
 * `refused` and takes no scripted reply.
 *
 * It can also act as the servers around it do: answer an HTML page (a proxy's error
 * page, or a web UI at a base URL without `/v1`), and write tool calls as text
 * (`<tool_call>…</tool_call>`, as Ollama's OpenAI surface does in some versions).
 */
import { once } from "node:events";
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type ServerResponse,
} from "node:http";
import type { AddressInfo } from "node:net";
import { chatRefusal, estimatePromptTokens } from "./openai-rules.js";

/** A tool call the fake model makes. */
export interface FakeOpenAiToolCall {
  name: string;
  input: Record<string, unknown>;
  /** (Default: `call_fake_<n>`) */
  id?: string;
}

/** Token counts as the API reports them. */
export interface FakeOpenAiUsage {
  prompt_tokens: number;
  completion_tokens: number;
  /** `prompt_tokens_details.cached_tokens`: the part of `prompt_tokens` read from the cache. */
  cached_tokens?: number;
}

/** A text reply, and the tool calls after it when there are some. */
export interface FakeOpenAiTextReply {
  text: string;
  /** Text deltas the text is split into. (Default: 3, or fewer for short text) */
  chunks?: number;
  toolCalls?: FakeOpenAiToolCall[];
  /** Each call whole in one chunk, all at index 0, as some Ollama versions stream them. (Default: false) */
  wholeCallsAtIndexZero?: boolean;
  /** (Default: `tool_calls` with tool calls, else `stop`; Ollama says `stop` for both) */
  finishReason?: string;
  usage?: Partial<FakeOpenAiUsage>;
}

/** An HTTP error with the API's JSON error body. */
export interface FakeOpenAiErrorReply {
  error: {
    status: number;
    message: string;
    retryAfterS?: number;
    /** (Default: by status, e.g. `rate_limit_exceeded`) */
    type?: string;
    code?: string;
  };
}

/** An HTML page with this status, as a proxy or a web UI answers. */
export interface FakeOpenAiHtmlReply {
  html: { status: number };
}

/** `cutAfterChunks` text deltas, then the connection drops. */
export interface FakeOpenAiCutReply {
  cutAfterChunks: number;
  text: string;
}

/** `afterChunks` text deltas, then an error object in the stream (as OpenRouter sends one). */
export interface FakeOpenAiStreamErrorReply {
  streamError: { message: string; type?: string; code?: string };
  afterChunks: number;
  text: string;
}

/** Never answers. */
export interface FakeOpenAiHangReply {
  hang: true;
}

/** One scripted answer. */
export type FakeOpenAiReply =
  | FakeOpenAiTextReply
  | FakeOpenAiErrorReply
  | FakeOpenAiHtmlReply
  | FakeOpenAiCutReply
  | FakeOpenAiStreamErrorReply
  | FakeOpenAiHangReply;

/** A reply, or a function that picks one from the request (e.g. from the tool results sent). */
export type FakeOpenAiReplySource =
  | FakeOpenAiReply
  | ((request: RecordedChatRequest) => FakeOpenAiReply);

/** A chat request body as the fake reads it. */
export interface FakeChatBody {
  model: string;
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  max_tokens?: number;
  max_completion_tokens?: number;
  messages: FakeChatMessage[];
  tools?: Array<{
    type: string;
    function: { name: string; description?: string; parameters?: unknown };
  }>;
  [field: string]: unknown;
}

/** A message of a chat request. */
export interface FakeChatMessage {
  role: string;
  content?: string | null | Array<Record<string, unknown>>;
  tool_calls?: Array<{ id: string; type: string; function: { name: string; arguments: string } }>;
  tool_call_id?: string;
  [field: string]: unknown;
}

/** A chat request the fake received. */
export interface RecordedChatRequest {
  headers: IncomingHttpHeaders;
  body: FakeChatBody;
}

/** A request refused as the real API refuses it. */
export interface RefusedChatRequest extends RecordedChatRequest {
  status: number;
  refusal: string;
}

/** A model `/v1/models` lists. */
export interface FakeListedModel {
  id: string;
  /** Reported as `context_length`, as OpenRouter does. (Default: not reported) */
  contextLength?: number;
}

/** Options of {@link startFakeOpenAi}. */
export interface FakeOpenAiOptions {
  /** The one key accepted as `Authorization: Bearer`; absent: no key is asked for. */
  apiKey?: string;
  /** What `/v1/models` lists. (Default: `fake-model`) */
  models?: FakeListedModel[];
  /** Answer when the script is empty. (Default: `{ text: "ok" }`) */
  defaultReply?: FakeOpenAiReplySource;
  /**
   * The model's context window: a prompt (estimated at 4 characters a token) whose
   * tokens and `max_tokens` pass it is refused with the API's `context_length_exceeded`.
   */
  promptTokenLimit?: number;
}

/** A running fake. */
export interface FakeOpenAi {
  /** Base URL for the SDK's `baseURL`, with its `/v1`. */
  readonly url: string;
  /** The server's root, without `/v1` (a web UI answers there). */
  readonly root: string;
  readonly requests: RecordedChatRequest[];
  readonly refused: RefusedChatRequest[];
  /** `/v1/models` requests answered. */
  readonly modelListings: number;
  /** Appends replies; each chat request takes the next. */
  script(...replies: FakeOpenAiReplySource[]): void;
  close(): Promise<void>;
}

const DONE = "data: [DONE]\n\n";

/** Starts a fake OpenAI-compatible API on 127.0.0.1 with a free port. */
export async function startFakeOpenAi(options: FakeOpenAiOptions = {}): Promise<FakeOpenAi> {
  const queue: FakeOpenAiReplySource[] = [];
  const requests: RecordedChatRequest[] = [];
  const refused: RefusedChatRequest[] = [];
  const counter = { completions: 0, calls: 0, listings: 0 };
  const models = options.models ?? [{ id: "fake-model" }];

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = await readBody(req);
    const path = new URL(req.url ?? "/", "http://fake").pathname;
    if (!path.startsWith("/v1/")) {
      sendHtml(res, 200);
      return;
    }
    if (options.apiKey !== undefined && req.headers.authorization !== `Bearer ${options.apiKey}`) {
      sendError(res, 401, {
        message:
          "Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys.",
        type: "invalid_request_error",
        code: "invalid_api_key",
      });
      return;
    }
    if (req.method === "GET" && path === "/v1/models") {
      counter.listings += 1;
      sendJson(res, 200, { object: "list", data: models.map(toListedModel) });
      return;
    }
    if (req.method !== "POST" || path !== "/v1/chat/completions") {
      sendError(res, 404, {
        message: `Unknown request URL: ${req.method} ${path}.`,
        type: "invalid_request_error",
        code: "unknown_url",
      });
      return;
    }
    let body: FakeChatBody;
    try {
      body = JSON.parse(raw) as FakeChatBody;
    } catch {
      sendError(res, 400, {
        message: "We could not parse the JSON body of your request.",
        type: "invalid_request_error",
      });
      return;
    }
    const request: RecordedChatRequest = { headers: req.headers, body };
    const refusal = chatRefusal(body) ?? contextRefusal(body, options.promptTokenLimit);
    if (refusal) {
      refused.push({ ...request, status: 400, refusal: refusal.message });
      sendError(res, 400, refusal);
      return;
    }
    requests.push(request);
    const source = queue.shift() ?? options.defaultReply ?? { text: "ok" };
    const reply = typeof source === "function" ? source(request) : source;
    counter.completions += 1;
    await answer(reply, body, res, `chatcmpl-fake-${counter.completions}`, counter);
  }

  const server = createServer((req, res) => {
    void handle(req, res).catch((error: unknown) => {
      if (!res.headersSent)
        sendError(res, 500, {
          message: `fake server failed: ${String(error)}`,
          type: "server_error",
        });
      else res.destroy();
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  const root = `http://127.0.0.1:${port}`;
  return {
    url: `${root}/v1`,
    root,
    requests,
    refused,
    get modelListings() {
      return counter.listings;
    },
    script(...replies) {
      queue.push(...replies);
    },
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
  };
}

function toListedModel(model: FakeListedModel): Record<string, unknown> {
  return {
    id: model.id,
    object: "model",
    created: 1_700_000_000,
    owned_by: "fake",
    ...(model.contextLength === undefined ? {} : { context_length: model.contextLength }),
  };
}

/** The API's refusal of a prompt over the window, in OpenAI's (and vLLM's) words. */
function contextRefusal(body: FakeChatBody, limit: number | undefined): ApiErrorBody | null {
  if (limit === undefined) return null;
  const prompt = estimatePromptTokens(body);
  const completion = body.max_completion_tokens ?? body.max_tokens ?? 0;
  if (prompt + completion <= limit) return null;
  return {
    message: `This model's maximum context length is ${limit} tokens. However, you requested ${prompt + completion} tokens (${prompt} in the messages, ${completion} in the completion). Please reduce the length of the messages or completion.`,
    type: "invalid_request_error",
    param: "messages",
    code: "context_length_exceeded",
  };
}

// ---------------------------------------------------------------------------------------
// Answers

async function answer(
  reply: FakeOpenAiReply,
  body: FakeChatBody,
  res: ServerResponse,
  id: string,
  counter: { calls: number },
): Promise<void> {
  if ("hang" in reply) return;
  if ("html" in reply) {
    sendHtml(res, reply.html.status);
    return;
  }
  if ("error" in reply) {
    const { status, message, retryAfterS, type, code } = reply.error;
    sendError(
      res,
      status,
      { message, type: type ?? ERROR_TYPES[status] ?? "server_error", ...(code ? { code } : {}) },
      retryAfterS,
    );
    return;
  }
  if (body.stream !== true) {
    sendError(res, 400, {
      message: "The fake answers streamed requests only.",
      type: "invalid_request_error",
    });
    return;
  }
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
    sse(res, {
      id,
      object: "chat.completion.chunk",
      created: 1_700_000_000,
      model: body.model,
      choices: [{ index: 0, delta, finish_reason: finish }],
    });
  chunk({ role: "assistant", content: "" });
  if ("cutAfterChunks" in reply) {
    for (const piece of split(reply.text, reply.cutAfterChunks + 1).slice(0, reply.cutAfterChunks))
      chunk({ content: piece });
    await flushed(res);
    res.destroy();
    return;
  }
  if ("streamError" in reply) {
    for (const piece of split(reply.text, reply.afterChunks + 1).slice(0, reply.afterChunks))
      chunk({ content: piece });
    const { message, type, code } = reply.streamError;
    sse(res, { error: { message, type: type ?? "server_error", ...(code ? { code } : {}) } });
    res.end(DONE);
    return;
  }
  for (const piece of split(reply.text, reply.chunks ?? 3)) chunk({ content: piece });
  const calls = (reply.toolCalls ?? []).map((call) => ({
    ...call,
    id: call.id ?? `call_fake_${++counter.calls}`,
  }));
  if (reply.wholeCallsAtIndexZero) streamWholeCalls(calls, chunk);
  else streamToolCalls(calls, chunk);
  chunk({}, reply.finishReason ?? (calls.length > 0 ? "tool_calls" : "stop"));
  if (body.stream_options?.include_usage === true) {
    sse(res, {
      id,
      object: "chat.completion.chunk",
      created: 1_700_000_000,
      model: body.model,
      choices: [],
      usage: usageOf(reply, body),
    });
  }
  res.end(DONE);
}

/** Each call in one chunk, at index 0. */
function streamWholeCalls(
  calls: Array<FakeOpenAiToolCall & { id: string }>,
  chunk: (delta: Record<string, unknown>) => void,
): void {
  for (const call of calls) {
    const called = { name: call.name, arguments: JSON.stringify(call.input) };
    chunk({ tool_calls: [{ index: 0, id: call.id, type: "function", function: called }] });
  }
}

/** Each call's id and name, then its arguments in two pieces, the calls' pieces interleaved. */
function streamToolCalls(
  calls: Array<FakeOpenAiToolCall & { id: string }>,
  chunk: (delta: Record<string, unknown>) => void,
): void {
  const pieces = calls.map((call) => split(JSON.stringify(call.input), 2));
  for (const [index, call] of calls.entries()) {
    chunk({
      tool_calls: [
        { index, id: call.id, type: "function", function: { name: call.name, arguments: "" } },
      ],
    });
  }
  for (let part = 0; part < 2; part++) {
    pieces.forEach((parts, index) => {
      const text = parts[part];
      if (text !== undefined) chunk({ tool_calls: [{ index, function: { arguments: text } }] });
    });
  }
}

function usageOf(reply: FakeOpenAiTextReply, body: FakeChatBody): Record<string, unknown> {
  const prompt = reply.usage?.prompt_tokens ?? estimatePromptTokens(body);
  const completion = reply.usage?.completion_tokens ?? Math.ceil(reply.text.length / 4) + 1;
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    prompt_tokens_details: { cached_tokens: reply.usage?.cached_tokens ?? 0 },
  };
}

/** `text` in `count` pieces (fewer when it is shorter), none empty unless the text is. */
function split(text: string, count: number): string[] {
  const characters = [...text];
  const pieces = Math.max(1, Math.min(count, characters.length));
  const size = Math.ceil(characters.length / pieces);
  const result: string[] = [];
  for (let start = 0; start < characters.length; start += size) {
    result.push(characters.slice(start, start + size).join(""));
  }
  return result.length === 0 ? [] : result;
}

// ---------------------------------------------------------------------------------------
// HTTP

/** The API's error body fields. */
export interface ApiErrorBody {
  message: string;
  type: string;
  param?: string;
  code?: string;
}

const ERROR_TYPES: Record<number, string> = {
  400: "invalid_request_error",
  401: "invalid_request_error",
  403: "invalid_request_error",
  404: "invalid_request_error",
  413: "invalid_request_error",
  429: "rate_limit_exceeded",
};

function sse(res: ServerResponse, data: unknown): void {
  res.write(`data: ${JSON.stringify(data)}\n\n`);
}

function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(body));
}

function sendError(
  res: ServerResponse,
  status: number,
  error: ApiErrorBody,
  retryAfterS?: number,
): void {
  const headers: Record<string, string> =
    retryAfterS === undefined ? {} : { "retry-after": String(retryAfterS) };
  sendJson(res, status, { error: { param: null, code: null, ...error } }, headers);
}

function sendHtml(res: ServerResponse, status: number): void {
  res.writeHead(status, { "content-type": "text/html; charset=utf-8" });
  res.end(
    `<!DOCTYPE html><html><head><title>${status}</title></head><body><h1>${status === 200 ? "Open WebUI" : "502 Bad Gateway"}</h1></body></html>`,
  );
}

function flushed(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => res.write("", () => resolve()));
}

async function readBody(req: IncomingMessage): Promise<string> {
  const parts: Buffer[] = [];
  for await (const part of req) parts.push(part as Buffer);
  return Buffer.concat(parts).toString("utf8");
}
