/** The ModelProvider port: one language model behind an API. */
import type { RequestMessage, TextBlock, TokenUsage, ToolUseBlock } from "./messages.js";

/** A tool as the model sees it. */
export interface ToolSpec {
  name: string;
  description: string;
  /** JSON Schema of the tool's input (an object schema). */
  input_schema: Record<string, unknown>;
}

/** One call to the model. */
export interface ModelRequest {
  model: string;
  system: string;
  messages: RequestMessage[];
  tools: ToolSpec[];
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
  content: Array<TextBlock | ToolUseBlock>;
  /** `end_turn`, `tool_use`, `max_tokens`, `stop_sequence`, `refusal`, … */
  stopReason: string;
  usage: TokenUsage;
}

/** Time one model call may wait for its answer (the default of `llm.timeout_s`). */
export const DEFAULT_MODEL_TIMEOUT_MS = 600_000;

/** What a token count needs of a request. */
export type TokenCountRequest = Pick<
  ModelRequest,
  "model" | "system" | "messages" | "tools" | "signal"
>;

/** A language model behind an API. Failures throw {@link ModelError}. */
export interface ModelProvider {
  /** Streams one reply. */
  complete(request: ModelRequest): Promise<ModelReply>;
  /**
   * The input tokens the API counts for a request, without running it (Anthropic's
   * `count_tokens`); absent when the API cannot count.
   */
  countTokens?(request: TokenCountRequest): Promise<number>;
}
