/**
 * A fake Anthropic Messages API on 127.0.0.1, for tests that run the real SDK.
 *
 * `POST /v1/messages` answers with the next scripted reply (or the default reply when
 * the script is empty): an SSE stream when the request says `stream: true`, plain JSON
 * otherwise. Every request is recorded. Token counts are rough but deterministic:
 * input ≈ request JSON length / 4, output ≈ reply text length / 4.
 *
 * `POST /v1/messages/count_tokens` answers `{ input_tokens }`, counted as the fake counts
 * a request's input (so a count is exact against `promptTokenLimit`); it refuses what
 * `/v1/messages` refuses, except a prompt over the limit, and is recorded in `counts`.
 *
 * A request the real API would refuse (see anthropic-rules.ts: tool pairs, alternating
 * roles, empty content, two tools of one name) is answered with the API's 400 and its error text, recorded in
 * `refused` instead of `requests`, and consumes no scripted reply.
 *
 * Prompt caching is modelled as the API does it (see anthropic-cache.ts: breakpoints,
 * the 20-block lookback, the minimum cacheable length, 5-minute and 1-hour TTLs on the
 * `now` clock); a request with more than 4 breakpoints is refused as the API refuses it.
 * Prompt caching is modelled as the API does it: the prompt is the sequence of blocks
 * tools → system → message content; a block with `cache_control` writes the prefix that
 * ends with it to the cache, and a request reads the longest prefix it shares, ending at
 * a block boundary, with one written before (`cache_read_input_tokens`). Tokens between
 * that prefix and the last breakpoint are `cache_creation_input_tokens`.
 *
 * Web search, the API's server tool: a reply scripted with `webSearch` answers as the API
 * does when it searched before writing its text: a `server_tool_use` block, then a
 * `web_search_tool_result` (titles, URLs, page ages and opaque `encrypted_content`), then
 * the text, with `usage.server_tool_use.web_search_requests`. A request that offers no
 * `web_search_20250305` tool cannot be answered so (a 400, recorded in `refused`), and a
 * later request must send those two blocks back as they came, together (anthropic-rules.ts).
 *
 * `/v1/messages/batches` (see anthropic-batches.ts) answers batch items from the same
 * script, with the same usage and cache figures, once the test ends the batch; batch
 * items are not recorded in `requests`, which counts `/v1/messages` calls only.
 */
import { once } from "node:events";
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type ServerResponse,
} from "node:http";
import type { AddressInfo } from "node:net";
import { createBatchRoutes, type FakeBatches, type FakeBatchResult } from "./anthropic-batches.js";
import { cacheControlRefusal, FakePromptCache, promptBlocks } from "./anthropic-cache.js";
import { canonicalJson, refusalOf, serverResultsRefusal, toolsRefusal } from "./anthropic-rules.js";

/** A tool call the fake model makes. */
export interface FakeToolUse {
  name: string;
  input: Record<string, unknown>;
  /** (Default: `toolu_fake_<n>`) */
  id?: string;
}

/** Waits this long before answering. */
interface Delayed {
  delayMs?: number;
}

/** Token counts as the API reports them. */
export interface FakeUsage {
  input_tokens: number;
  output_tokens: number;
  cache_read_input_tokens: number;
  cache_creation_input_tokens: number;
  cache_creation?: { ephemeral_5m_input_tokens: number; ephemeral_1h_input_tokens: number };
  /** Tools the API ran itself (set when the reply searched the web). */
  server_tool_use?: { web_search_requests: number };
}

/** A page the fake's web search finds. */
export interface FakeWebResult {
  title: string;
  url: string;
  /** (Default: null) */
  page_age?: string;
}

/** Replaces some of the estimated token counts. */
interface WithUsage {
  usage?: Partial<FakeUsage>;
}

/** Holds a streamed reply in the middle of its text until the test lets it go on. */
interface Pausable {
  /** Streams this many text deltas, then waits for `resume` before sending the rest. */
  pauseAfterChunks?: number;
  /** Settles when the paused stream may go on. */
  resume?: Promise<unknown>;
}

/** A text answer, stop reason `end_turn`. */
export interface FakeTextReply extends Delayed, WithUsage, Pausable {
  text: string;
  /** Number of `text_delta` events the text is split into. (Default: 3, or fewer for short text) */
  chunks?: number;
  /** Wait between two text deltas of a stream, as a model writing. (Default: 0) */
  chunkDelayMs?: number;
  /**
   * (Default: `end_turn`.) `pause_turn` with `webSearch` and empty `text` is a turn the
   * API paused after a search: the client sends the content back as the assistant's
   * message to continue it, and the next scripted reply continues it.
   */
  stopReason?: string;
  /** The API searched the web for `query` before the text, and found `results`. (Default: no search) */
  webSearch?: { query: string; results: FakeWebResult[] };
}

/** Tool calls, optionally after some text (which is where a pause happens); stop reason `tool_use`. */
export interface FakeToolReply extends Delayed, WithUsage, Pausable {
  toolUses: FakeToolUse[];
  text?: string;
}

/** An HTTP error with Anthropic's JSON error body and an optional `retry-after` header. */
export interface FakeErrorReply extends Delayed {
  error: { status: number; message?: string; retryAfterS?: number };
}

/** A stream that sends `cutAfterChunks` text deltas, then drops the connection. */
export interface FakeCutReply extends Delayed {
  cutAfterChunks: number;
  text: string;
}

/**
 * A stream that sends `afterChunks` text deltas, then an `error` event with the API's
 * error body and ends, as the API does when it fails mid-reply (an `overloaded_error`
 * under load). Not streamed, the request gets the status of that error type instead.
 */
export interface FakeStreamErrorReply extends Delayed {
  streamError: { type: string; message?: string };
  afterChunks: number;
  text: string;
}

/** Never answers; the request ends only when the client gives up. */
export interface FakeHangReply extends Delayed {
  hang: true;
}

/** One scripted answer. */
export type FakeReply =
  | FakeTextReply
  | FakeToolReply
  | FakeErrorReply
  | FakeCutReply
  | FakeStreamErrorReply
  | FakeHangReply;

/** A reply, or a function that picks one from the request (e.g. an echo). */
export type FakeReplySource = FakeReply | ((request: RecordedRequest) => FakeReply);

/** A request body as the Messages API receives it (only the fields the fake reads are typed). */
export interface FakeMessagesBody {
  model: string;
  max_tokens: number;
  stream?: boolean;
  system?: string | Array<Record<string, unknown>>;
  messages: Array<{ role: string; content: string | Array<Record<string, unknown>> }>;
  tools?: Array<Record<string, unknown>>;
  [field: string]: unknown;
}

/** A request the fake received. */
export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** The parsed JSON body. */
  body: FakeMessagesBody;
  /** The `usage` answered (absent for an error or a hang). */
  usage?: FakeUsage;
}

/** A request the fake refused with a 400, as the real API would have. */
export interface RefusedRequest extends RecordedRequest {
  /** The error message of the 400. */
  refusal: string;
}

/** Options of {@link startFakeAnthropic}. */
export interface FakeAnthropicOptions {
  /** Answer when the script is empty. (Default: `{ text: "ok" }`) */
  defaultReply?: FakeReplySource;
  /**
   * The model ids `GET /v1/models` lists and `GET /v1/models/{id}` knows (any other id
   * is a 404 `not_found_error`, as the API answers). (Default: {@link FAKE_MODEL_IDS})
   */
  models?: readonly string[];
  /**
   * The model's context window: a prompt (tools, system and messages, counted as the fake
   * counts input tokens) over it is refused with the API's "prompt is too long" 400.
   * (Default: no limit)
   */
  promptTokenLimit?: number;
  /**
   * Whether `count_tokens` exists; without it the route answers 404, as some
   * Anthropic-compatible endpoints do. (Default: true)
   */
  countTokens?: boolean;
  /** The clock the prompt cache's TTLs run on, in ms. (Default: `Date.now`) */
  now?: () => number;
  /**
   * The one key accepted (in `x-api-key`, or `Authorization: Bearer` as the SDK sends
   * it); any other gets the API's 401 `authentication_error` "invalid x-api-key". A
   * request with neither header gets the API's 401 "x-api-key
   * header is required" whatever this says. (Default: any key)
   */
  apiKey?: string;
}

/** A running fake. */
export interface FakeAnthropic {
  /** Base URL for the SDK's `baseURL` (no `/v1`). */
  readonly url: string;
  /** Every request received and answered, oldest first. */
  readonly requests: RecordedRequest[];
  /** Requests refused as the real API refuses them, with the error text sent. */
  readonly refused: RefusedRequest[];
  /** `count_tokens` requests answered, oldest first. */
  readonly counts: RecordedRequest[];
  /** Scripted replies not used yet. */
  readonly unusedReplies: number;
  /** The Message Batches API: batches created, and ending them. */
  readonly batches: FakeBatches;
  /** Appends replies to the script; each request consumes one, in order. */
  script(...replies: FakeReplySource[]): void;
  /** Stops the server and drops open connections (hanging requests included). */
  close(): Promise<void>;
}

/** picklebot's note of the current time, which ends the newest message of a request. */
const TIME_NOTE = /^\(current time: .*\)$/;

/** A message of a request as the person sees it: its text, without the time note. */
export function messageText(
  message: FakeMessagesBody["messages"][number],
  show: (block: Record<string, unknown>) => string = () => "",
): string {
  if (typeof message.content === "string") return message.content;
  return message.content
    .map((block) => {
      if (block.type === "text")
        return TIME_NOTE.test(String(block.text)) ? "" : String(block.text);
      return show(block);
    })
    .join("");
}

/** The text (and tool results) of the newest user message of a request: handy for echo replies. */
export function lastUserText(request: RecordedRequest): string {
  const message = request.body.messages.filter((m) => m.role === "user").at(-1);
  if (!message) return "";
  return messageText(message, (block) =>
    block.type === "tool_result" ? String(block.content) : "",
  );
}

/** The instructions of a request, as one text. */
function systemText(request: RecordedRequest): string {
  const { system } = request.body;
  if (typeof system === "string") return system;
  return (system ?? []).map((block) => String(block.text ?? "")).join("\n");
}

/** A compaction's summary call (its instructions say so; it is offered no tools). */
export function isSummaryCall(request: RecordedRequest): boolean {
  return systemText(request).includes("You compress a conversation");
}

/**
 * A compaction's memory save call, made just before its summary call: its instructions
 * say the conversation is about to be summarised, and it is offered the `memory` tool alone.
 */
export function isMemorySaveCall(request: RecordedRequest): boolean {
  const tools = (request.body.tools ?? []).map((tool) => String(tool.name));
  return (
    tools.length === 1 &&
    tools[0] === "memory" &&
    systemText(request).includes("is about to be summarised")
  );
}

/** Request number `index` (from 0) that the fake received; throws when there is none yet. */
export function requestAt(fake: FakeAnthropic, index: number): RecordedRequest {
  const request = fake.requests[index];
  if (!request)
    throw new Error(`the fake model received ${fake.requests.length} requests, not ${index + 1}`);
  return request;
}

/** Starts a fake Messages API on 127.0.0.1 with a free port. */
export async function startFakeAnthropic(
  options: FakeAnthropicOptions = {},
): Promise<FakeAnthropic> {
  const queue: FakeReplySource[] = [];
  const requests: RecordedRequest[] = [];
  const refused: RefusedRequest[] = [];
  const counts: RecordedRequest[] = [];
  const defaultReply = options.defaultReply ?? { text: "ok" };
  const counter: FakeCounter = { messages: 0, toolUses: 0, searchResults: new Map() };
  const promptCache = new FakePromptCache(options.now);
  const batchRoutes = createBatchRoutes((params) => {
    const source = queue.shift() ?? defaultReply;
    const body = params as FakeMessagesBody;
    const request: RecordedRequest = { method: "POST", path: "/v1/messages", headers: {}, body };
    const reply = typeof source === "function" ? source(request) : source;
    counter.messages += 1;
    return batchItemResult(reply, body, `msg_fake_${counter.messages}`, counter, promptCache);
  });

  const server = createServer((req, res) => {
    void handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) sendError(res, 500, `fake server failed: ${String(error)}`);
      else res.destroy();
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = await readBody(req);
    const url = new URL(req.url ?? "/", "http://fake");
    const path = url.pathname;
    const key = apiKeyOf(req);
    if (key === undefined) {
      sendError(res, 401, "x-api-key header is required");
      return;
    }
    if (options.apiKey !== undefined && key !== options.apiKey) {
      sendError(res, 401, "invalid x-api-key");
      return;
    }
    if (req.method === "GET" && path.startsWith("/v1/models")) {
      answerModels(res, path, options.models ?? FAKE_MODEL_IDS);
      return;
    }
    if (await batchRoutes.handle(req.method ?? "GET", path, url.searchParams, raw, res)) return;
    const counting = path === "/v1/messages/count_tokens" && options.countTokens !== false;
    if (req.method !== "POST" || (path !== "/v1/messages" && !counting)) {
      sendError(res, 404, `no route for ${req.method} ${path}`);
      return;
    }
    if (Buffer.byteLength(raw) > MAX_REQUEST_BYTES) {
      sendError(res, 413, "Request exceeds the maximum size");
      return;
    }
    let body: FakeMessagesBody;
    try {
      body = JSON.parse(raw) as FakeMessagesBody;
    } catch {
      sendError(res, 400, "request body is not valid JSON");
      return;
    }
    const request: RecordedRequest = { method: req.method, path, headers: req.headers, body };
    const limit = counting ? undefined : options.promptTokenLimit;
    const refusal =
      refusalOf(body.messages ?? []) ??
      serverResultsRefusal(body.messages ?? [], counter.searchResults) ??
      toolsRefusal(body.tools) ??
      cacheControlRefusal(body) ??
      tooLong(body, limit);
    if (refusal !== null) {
      refused.push({ ...request, refusal });
      sendError(res, 400, refusal);
      return;
    }
    if (counting) {
      counts.push(request);
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ input_tokens: promptTokens(body) }));
      return;
    }
    requests.push(request);
    const source = queue.shift() ?? defaultReply;
    const reply = typeof source === "function" ? source(request) : source;
    const searchRefusal = webSearchRefusal(reply, body);
    if (searchRefusal !== null) {
      requests.pop();
      queue.unshift(source);
      refused.push({ ...request, refusal: searchRefusal });
      sendError(res, 400, searchRefusal);
      return;
    }
    if (reply.delayMs) await sleepUnlessClosed(reply.delayMs, res);
    if (res.destroyed) return;
    counter.messages += 1;
    const plan = answer(reply, body, res, `msg_fake_${counter.messages}`, counter, promptCache);
    if (plan) request.usage = plan.usage;
  }

  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    refused,
    counts,
    get unusedReplies() {
      return queue.length;
    },
    batches: batchRoutes.control,
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

// ---------------------------------------------------------------------------------------
// Answering one request

function answer(
  reply: FakeReply,
  body: FakeMessagesBody,
  res: ServerResponse,
  messageId: string,
  counter: FakeCounter,
  promptCache: FakePromptCache,
): MessagePlan | null {
  if ("hang" in reply) return null;
  if ("error" in reply) {
    const { status, message, retryAfterS } = reply.error;
    sendError(res, status, message ?? defaultErrorMessage(status), retryAfterS);
    return null;
  }
  if ("streamError" in reply && body.stream !== true) {
    const status = statusOfErrorType(reply.streamError.type);
    sendError(res, status, reply.streamError.message ?? defaultErrorMessage(status));
    return null;
  }
  const plan = planMessage(reply, body, messageId, counter, promptCache);
  if (body.stream === true) void streamMessage(plan, res);
  else sendPlainMessage(plan, res);
  return plan;
}

/** A batch item's result: the reply as a whole message, or the error it scripts. */
function batchItemResult(
  reply: FakeReply,
  body: FakeMessagesBody,
  messageId: string,
  counter: FakeCounter,
  promptCache: FakePromptCache,
): FakeBatchResult {
  if ("error" in reply || "hang" in reply || "cutAfterChunks" in reply || "streamError" in reply) {
    const status =
      "error" in reply
        ? reply.error.status
        : "streamError" in reply
          ? statusOfErrorType(reply.streamError.type)
          : 500;
    const message = ("error" in reply && reply.error.message) || defaultErrorMessage(status);
    const type = ERROR_TYPES[status] ?? "api_error";
    return { type: "errored", error: { type: "error", error: { type, message } } };
  }
  const plan = planMessage(reply, body, messageId, counter, promptCache);
  return { type: "succeeded", message: wholeMessage(plan) };
}

/** What the fake counts across requests, and the search results it returned, by id. */
interface FakeCounter {
  messages: number;
  toolUses: number;
  /** Each `web_search_tool_result` sent, as canonical JSON, by its `tool_use_id`. */
  searchResults: Map<string, string>;
}

/** What the fake will send: blocks with their pieces, and how it ends. */
interface MessagePlan {
  id: string;
  message: Record<string, unknown>;
  blocks: Array<
    | { kind: "text"; pieces: string[] }
    | { kind: "tool_use"; id: string; name: string; input: unknown; pieces: string[] }
    | { kind: "server"; block: Record<string, unknown> }
  >;
  stopReason: string;
  usage: FakeUsage;
  /** Text deltas to send before dropping the connection; null: send everything. */
  cutAfter: number | null;
  /** The error event sent instead of dropping the connection at `cutAfter`; null: drop it. */
  streamError: { type: string; message: string } | null;
  /** Text deltas to send before waiting for `until`; null: no pause. */
  pause: { after: number; until: Promise<unknown> } | null;
  /** Wait between two text deltas. */
  chunkDelayMs: number;
}

function planMessage(
  reply: FakeTextReply | FakeToolReply | FakeCutReply | FakeStreamErrorReply,
  body: FakeMessagesBody,
  messageId: string,
  counter: FakeCounter,
  promptCache: FakePromptCache,
): MessagePlan {
  const blocks: MessagePlan["blocks"] = [];
  let cutAfter: number | null = null;
  let streamError: MessagePlan["streamError"] = null;
  let stopReason = "end_turn";
  if ("cutAfterChunks" in reply) {
    cutAfter = reply.cutAfterChunks;
    blocks.push({ kind: "text", pieces: splitInto(reply.text, reply.cutAfterChunks + 1) });
  } else if ("streamError" in reply) {
    cutAfter = reply.afterChunks;
    const { type, message } = reply.streamError;
    streamError = { type, message: message ?? defaultErrorMessage(statusOfErrorType(type)) };
    blocks.push({ kind: "text", pieces: splitInto(reply.text, reply.afterChunks + 1) });
  } else if ("toolUses" in reply) {
    stopReason = "tool_use";
    if (reply.text) blocks.push({ kind: "text", pieces: splitInto(reply.text, 3) });
    for (const use of reply.toolUses) {
      counter.toolUses += 1;
      const id = use.id ?? `toolu_fake_${counter.toolUses}`;
      const json = JSON.stringify(use.input);
      blocks.push({
        kind: "tool_use",
        id,
        name: use.name,
        input: use.input,
        pieces: splitInto(json, 3),
      });
    }
  } else {
    stopReason = reply.stopReason ?? "end_turn";
    if (reply.webSearch) blocks.push(...webSearchBlocks(reply.webSearch, counter));
    // A search paused before any text (`pause_turn`) has no text block, as the API's.
    if (reply.text !== "" || !reply.webSearch)
      blocks.push({ kind: "text", pieces: splitInto(reply.text, reply.chunks ?? 3) });
  }
  const outputChars = blocks.reduce(
    (sum, block) => sum + ("pieces" in block ? block.pieces.join("").length : 0),
    0,
  );
  const scripted = "usage" in reply ? reply.usage : undefined;
  const output_tokens = Math.max(1, Math.ceil(outputChars / 4));
  const searched = "webSearch" in reply && reply.webSearch !== undefined;
  const usage: FakeUsage = {
    ...promptCache.use(body),
    output_tokens,
    ...(searched ? { server_tool_use: { web_search_requests: 1 } } : {}),
    ...scripted,
    ...scriptedCacheCreation(scripted),
  };
  const message = {
    id: messageId,
    type: "message",
    role: "assistant",
    model: body.model,
    content: [],
    stop_reason: null,
    stop_sequence: null,
    usage: { ...usage, output_tokens: 1 },
  };
  const pause =
    "resume" in reply && reply.resume
      ? { after: reply.pauseAfterChunks ?? 1, until: reply.resume }
      : null;
  const chunkDelayMs = "chunkDelayMs" in reply ? (reply.chunkDelayMs ?? 0) : 0;
  return {
    id: messageId,
    message,
    blocks,
    stopReason,
    usage,
    cutAfter,
    streamError,
    pause,
    chunkDelayMs,
  };
}

/** The two blocks of a web search the API ran: its call and its result. */
function webSearchBlocks(
  search: { query: string; results: FakeWebResult[] },
  counter: FakeCounter,
): MessagePlan["blocks"] {
  counter.toolUses += 1;
  const id = `srvtoolu_fake_${counter.toolUses}`;
  const content = search.results.map((result) => ({
    type: "web_search_result",
    title: result.title,
    url: result.url,
    encrypted_content: Buffer.from(`${id} ${result.url}`).toString("base64"),
    page_age: result.page_age ?? null,
  }));
  const result = { type: "web_search_tool_result", tool_use_id: id, content };
  counter.searchResults.set(id, canonicalJson(result));
  return [
    {
      kind: "server",
      block: { type: "server_tool_use", id, name: "web_search", input: { query: search.query } },
    },
    { kind: "server", block: result },
  ];
}

/** Why a reply that searches the web cannot answer `body`, or null. */
function webSearchRefusal(reply: FakeReply, body: FakeMessagesBody): string | null {
  if (!("webSearch" in reply) || reply.webSearch === undefined) return null;
  const offered = (body.tools ?? []).some((tool) => tool.type === "web_search_20250305");
  return offered
    ? null
    : "fake: the reply was scripted to search the web, but the request offers no web_search_20250305 tool";
}

/** The API's refusal of a prompt over the model's context window, or null. */
function tooLong(body: FakeMessagesBody, limit: number | undefined): string | null {
  if (limit === undefined) return null;
  const tokens = promptTokens(body);
  return tokens > limit ? `prompt is too long: ${tokens} tokens > ${limit} maximum` : null;
}

/** Input tokens of a whole prompt, as the prompt cache (anthropic-cache.ts) counts them. */
export function promptTokens(body: FakeMessagesBody): number {
  return Math.ceil(promptBlocks(body).reduce((sum, block) => sum + block.text.length, 0) / 4);
}

async function streamMessage(plan: MessagePlan, res: ServerResponse): Promise<void> {
  res.writeHead(200, {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    "request-id": `req_${plan.id}`,
  });
  const send = (type: string, data: Record<string, unknown>) =>
    res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
  send("message_start", { message: plan.message });
  send("ping", {});
  let textDeltasSent = 0;
  for (const [index, block] of plan.blocks.entries()) {
    if (block.kind === "text") {
      send("content_block_start", { index, content_block: { type: "text", text: "" } });
      for (const piece of block.pieces) {
        if (plan.cutAfter !== null && textDeltasSent >= plan.cutAfter) {
          endCut(plan, res);
          return;
        }
        if (plan.pause && textDeltasSent === plan.pause.after) await plan.pause.until;
        if (plan.chunkDelayMs > 0 && textDeltasSent > 0) {
          await sleepUnlessClosed(plan.chunkDelayMs, res);
          if (res.destroyed) return;
        }
        send("content_block_delta", { index, delta: { type: "text_delta", text: piece } });
        textDeltasSent += 1;
      }
      if (plan.cutAfter !== null) {
        endCut(plan, res);
        return;
      }
    } else if (block.kind === "server") {
      const { input, ...start } = block.block;
      send("content_block_start", {
        index,
        content_block: input === undefined ? start : { ...start, input: {} },
      });
      if (input !== undefined) {
        const delta = { type: "input_json_delta", partial_json: JSON.stringify(input) };
        send("content_block_delta", { index, delta });
      }
    } else {
      const start = { type: "tool_use", id: block.id, name: block.name, input: {} };
      send("content_block_start", { index, content_block: start });
      for (const piece of block.pieces) {
        const delta = { type: "input_json_delta", partial_json: piece };
        send("content_block_delta", { index, delta });
      }
    }
    send("content_block_stop", { index });
  }
  const { output_tokens, ...inputUsage } = plan.usage;
  send("message_delta", {
    delta: { stop_reason: plan.stopReason, stop_sequence: null },
    usage: { output_tokens, ...inputUsage },
  });
  send("message_stop", {});
  res.end();
}

/** Ends a stream cut short: with the planned error event, or by dropping the connection. */
function endCut(plan: MessagePlan, res: ServerResponse): void {
  if (plan.streamError === null) {
    dropConnection(res);
    return;
  }
  const error = { type: "error", error: plan.streamError };
  res.end(`event: error\ndata: ${JSON.stringify(error)}\n\n`);
}

function wholeMessage(plan: MessagePlan): Record<string, unknown> {
  const content = plan.blocks.map((block) => {
    if (block.kind === "text") return { type: "text", text: block.pieces.join("") };
    if (block.kind === "server") return block.block;
    return { type: "tool_use", id: block.id, name: block.name, input: block.input };
  });
  return { ...plan.message, content, stop_reason: plan.stopReason, usage: plan.usage };
}

function sendPlainMessage(plan: MessagePlan, res: ServerResponse): void {
  const json = JSON.stringify(wholeMessage(plan));
  if (plan.cutAfter !== null) {
    res.writeHead(200, { "content-type": "application/json" });
    res.write(json.slice(0, Math.floor(json.length / 2)));
    dropConnection(res);
    return;
  }
  res.writeHead(200, { "content-type": "application/json", "request-id": `req_${plan.id}` });
  res.end(json);
}

// ---------------------------------------------------------------------------------------
// Small pieces

/** The key a request carries: `x-api-key`, or `Authorization: Bearer` (this SDK's way). */
function apiKeyOf(req: IncomingMessage): string | undefined {
  const header = req.headers["x-api-key"];
  if (typeof header === "string" && header !== "") return header;
  const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? "");
  return bearer?.[1];
}

/** The models the fake knows by default: the Claude models the tests call. */
export const FAKE_MODEL_IDS = ["claude-sonnet-4-6", "claude-haiku-4-5", "claude-opus-4-5"];

/** A model as `GET /v1/models` lists it. */
function listedModel(id: string): Record<string, unknown> {
  return { type: "model", id, display_name: id, created_at: "2026-01-01T00:00:00Z" };
}

/**
 * `GET /v1/models` (one page of the list, as the API shapes it) and `GET /v1/models/{id}`
 * (the model, or a 404 `not_found_error` naming it, as the API answers an unknown id).
 */
function answerModels(res: ServerResponse, path: string, models: readonly string[]): void {
  const id = decodeURIComponent(path.slice("/v1/models/".length));
  if (path === "/v1/models") {
    const body = {
      data: models.map(listedModel),
      has_more: false,
      first_id: models[0] ?? null,
      last_id: models.at(-1) ?? null,
    };
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify(body));
    return;
  }
  if (!models.includes(id)) {
    sendError(res, 404, `model: ${id}`);
    return;
  }
  res.writeHead(200, { "content-type": "application/json" });
  res.end(JSON.stringify(listedModel(id)));
}

/** The largest Messages API request body: 32 MB (a larger one is refused with 413). */
const MAX_REQUEST_BYTES = 32 * 1024 * 1024;

const ERROR_TYPES: Record<number, string> = {
  400: "invalid_request_error",
  401: "authentication_error",
  403: "permission_error",
  404: "not_found_error",
  413: "request_too_large",
  429: "rate_limit_error",
  500: "api_error",
  529: "overloaded_error",
};

/** The HTTP status the API answers with an error of `type`. */
function statusOfErrorType(type: string): number {
  const found = Object.entries(ERROR_TYPES).find(([, name]) => name === type);
  return found === undefined ? 500 : Number(found[0]);
}

function defaultErrorMessage(status: number): string {
  if (status === 413) return "Request exceeds the maximum allowed number of bytes.";
  if (status === 429) return "Number of request tokens has exceeded your rate limit.";
  if (status === 529) return "Overloaded";
  if (status >= 500) return "Internal server error";
  return "Invalid request";
}

function sendError(
  res: ServerResponse,
  status: number,
  message: string,
  retryAfterS?: number,
): void {
  const headers: Record<string, string> = {
    "content-type": "application/json",
    "request-id": `req_fake_error_${status}`,
  };
  if (retryAfterS !== undefined) headers["retry-after"] = String(retryAfterS);
  const type = ERROR_TYPES[status] ?? "api_error";
  res.writeHead(status, headers);
  res.end(JSON.stringify({ type: "error", error: { type, message } }));
}

/** Sends what was written so far, then destroys the socket: the client sees a cut stream. */
function dropConnection(res: ServerResponse): void {
  res.write("", () => res.socket?.destroy());
}

/** Splits text into `count` pieces of about equal length (fewer when the text is short). */
export function splitInto(text: string, count: number): string[] {
  const pieces = Math.max(1, Math.min(count, text.length));
  const size = Math.ceil(text.length / pieces);
  const result: string[] = [];
  for (let start = 0; start < text.length; start += size)
    result.push(text.slice(start, start + size));
  return result.length > 0 ? result : [""];
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

function sleepUnlessClosed(ms: number, res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    res.once("close", done);
    function done(): void {
      clearTimeout(timer);
      res.off("close", done);
      resolve();
    }
  });
}

/**
 * The breakdown of a scripted `cache_creation_input_tokens` that names none: all of it
 * 5-minute writes, so the breakdown adds up to the total as the API's does.
 */
function scriptedCacheCreation(
  scripted: Partial<FakeUsage> | undefined,
): Pick<FakeUsage, "cache_creation"> | Record<string, never> {
  const total = scripted?.cache_creation_input_tokens;
  if (total === undefined || scripted?.cache_creation !== undefined) return {};
  return { cache_creation: { ephemeral_5m_input_tokens: total, ephemeral_1h_input_tokens: 0 } };
}
