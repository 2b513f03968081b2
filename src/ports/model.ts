/** The ModelProvider port: one language model behind an API. */
import type { MediaRef, ReplyContentBlock, RequestMessage, TokenUsage } from "./messages.js";

/**
 * Reads the bytes of a stored file an image or document block refers to (the media
 * folder of the history), for a provider to send.
 */
export type MediaReader = (ref: MediaRef) => Promise<Uint8Array>;

/** A tool as the model sees it. */
export interface ToolSpec {
  name: string;
  description: string;
  /** JSON Schema of the tool's input (an object schema). */
  input_schema: Record<string, unknown>;
}

/**
 * A tool the model API runs on its side, offered beside the request's `tools`: web
 * search, with at most `maxUses` searches in one call. A provider without it ignores it.
 */
export interface ServerToolSpec {
  kind: "web_search";
  maxUses: number;
}

/** One call to the model. */
export interface ModelRequest {
  model: string;
  system: string;
  messages: RequestMessage[];
  tools: ToolSpec[];
  /** Tools the API runs itself, offered after `tools`. (Default: none) */
  serverTools?: ServerToolSpec[];
  maxTokens: number;
  /**
   * The current time, shown to the model after the newest message's cache breakpoint,
   * so that a new time never invalidates the cached prompt. (Default: not sent)
   */
  currentTime?: string;
  /** Aborts the call (job timeout, `/stop`, Ctrl+C). */
  signal?: AbortSignal;
  /** Receives the reply's text as it streams. */
  onText?: (delta: string) => void;
}

/** What the model answered. */
export interface ModelReply {
  content: ReplyContentBlock[];
  /** `end_turn`, `tool_use`, `max_tokens`, `stop_sequence`, `refusal`, … */
  stopReason: string;
  usage: TokenUsage;
  /** It came through the Message Batches API, at the batch price. (Default: false) */
  batch?: boolean;
  /**
   * A fallback answered instead of the model the request named (a chain of named models):
   * which, and why. (Default: the request's model answered)
   */
  fallback?: ModelFallback;
}

/** Which named model answered in place of the first, and why the first did not. */
export interface ModelFallback {
  /** The entry that answered. */
  entry: string;
  /** Its model id: the one the call is recorded under. */
  model: string;
  /** The entry that should have answered. */
  from: string;
  /** Why it did not, in a few words after its name: "is failing (503)". */
  reason: string;
}

/** Time one model call may wait for its answer (the default of `llm.timeout_s`). */
export const DEFAULT_MODEL_TIMEOUT_MS = 600_000;

/** What a token count needs of a request. */
export type TokenCountRequest = Pick<
  ModelRequest,
  "model" | "system" | "messages" | "tools" | "serverTools" | "signal"
>;

/** How one request of an ended batch came out. */
export type BatchOutcome =
  | { kind: "succeeded"; reply: ModelReply }
  /** The API gave no answer (`errored`, `expired`, `canceled`): make the call normally. */
  | { kind: "failed"; reason: "errored" | "expired" | "canceled"; message: string };

/** A batch as its status tells it. */
export interface BatchStatus {
  id: string;
  /** Processing ended: every request has its result. */
  ended: boolean;
  /** Epoch ms. */
  createdAt: number;
}

/**
 * A provider's batch API (Anthropic's Message Batches: half the price, results within
 * 24 h). Each batch picklebot sends holds one request, named by its `customId`.
 * Failures throw {@link ModelError}.
 */
export interface ModelBatches {
  /** Creates a batch holding `request` as `customId`; resolves with the batch's id. */
  submit(customId: string, request: ModelRequest): Promise<string>;
  /**
   * The batches created at or after `since` (epoch ms), newest first, in as few requests
   * as the API allows (one, for up to 1000 batches).
   */
  listSince(since: number, signal?: AbortSignal): Promise<BatchStatus[]>;
  /** One batch's status. */
  status(batchId: string, signal?: AbortSignal): Promise<BatchStatus>;
  /** How `customId` came out in an ended batch; null when the batch does not hold it. */
  outcome(batchId: string, customId: string, signal?: AbortSignal): Promise<BatchOutcome | null>;
}

/** A language model behind an API. Failures throw {@link ModelError}. */
export interface ModelProvider {
  /** Streams one reply. */
  complete(request: ModelRequest): Promise<ModelReply>;
  /**
   * The input tokens the API counts for a request, without running it (Anthropic's
   * `count_tokens`); absent when the API cannot count.
   */
  countTokens?(request: TokenCountRequest): Promise<number>;
  /** Its batch API; absent when it has none. */
  batches?: ModelBatches;
  /**
   * The context window of `model` for a model the built-in table does not know: as the
   * endpoint's model list reports it, else the provider's stated default. Never fails
   * (an endpoint that cannot be asked gives the default). Absent: the table's default.
   */
  contextWindow?(model: string, signal?: AbortSignal): Promise<number>;
}
