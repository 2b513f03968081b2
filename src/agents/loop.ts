/**
 * The agent loop: drives one turn of a session to its end, reading the session's
 * history as the only state. Because every step is written to history before the next
 * one starts, the same function both runs a fresh turn and resumes one interrupted by a
 * crash. It looks at the last stored message:
 *
 *   assistant, no tool_use      → the turn is finished: return its text (no model call)
 *   assistant, with tool_use    → run the tools, append their results, look again
 *                                 (a call that must wait throws ParkRequest instead)
 *   user, with a job's end      → a tool ended the job: throw JobEnded (no model call)
 *   user (message or results)   → call the model, append its reply, look again
 *
 * This is also where the configured secrets (`secrets`) are taken out of what the agent
 * produces, before anything is stored or shown: the model's reply (text and tool inputs,
 * streamed text as it comes) and every tool result. Whatever is read back from history
 * (the final reply, `post_message` text, a resumed turn) is therefore clean already.
 */

import type { Sleep } from "../base/clock.js";
import { JobEnded, ParkRequest, PicklebotError, toError } from "../base/errors.js";
import { redactStrings, SecretStreamRedactor } from "../base/redact.js";
import { addUsage, zeroUsage } from "../base/usage.js";
import type {
  ChatMessage,
  HistoryStore,
  JobEndBlock,
  ModelFallback,
  ModelProvider,
  RequestMessage,
  ServerToolSpec,
  TokenUsage,
  Tool,
  ToolContext,
  ToolResultBlock,
  ToolUseBlock,
} from "../ports/index.js";
import {
  capToolResult,
  estimateMessageTokens,
  estimateTokens,
  fitToBudget,
  promptTooLong,
  requestBudget,
  toolResultMaxChars,
} from "./context-budget.js";
import { buildRequestMessages } from "./context-builder.js";
import { runToolCalls, summarizeToolCall } from "./tools/index.js";

/** What a person watching the turn is shown as it happens. */
export interface TurnEvents {
  /** A piece of the reply's text, as the model streams it. */
  onText?(delta: string): void;
  /** A tool call is about to run. */
  onToolCall?(call: ToolUseBlock, summary: string): void;
  /** A tool call finished (its result is about to be stored). */
  onToolResult?(call: ToolUseBlock, isError: boolean): void;
  /** A model call starts (before its first text). */
  onModelCall?(model: string): void;
  /** A model call answered, with its tokens. */
  onModelReply?(model: string, usage: TokenUsage): void;
}

/** Everything one turn needs. */
export interface TurnOptions {
  sessionId: string;
  history: HistoryStore;
  provider: ModelProvider;
  /** The rendered system prompt. */
  system: string;
  /** The time the turn started, as the model is shown it. (Default: not shown) */
  currentTime?: string;
  model: string;
  maxTokens: number;
  tools: Tool[];
  /** Tools the model API runs itself, offered in every call of the turn. (Default: none) */
  serverTools?: ServerToolSpec[];
  /** Passed to every tool run; its signal also aborts the model call. */
  toolContext: ToolContext;
  /** Messages sent to the model per call (`history.max_messages`). */
  maxMessages: number;
  /** The model's context window in tokens; no request passes it (see context-budget.ts). */
  contextWindow: number;
  /** Told the window a "prompt is too long" refusal named, when smaller than `contextWindow`. */
  onSmallerWindow?: (tokens: number) => void;
  /**
   * Runs before each model call of the turn; throws to stop the turn there (a budget used
   * up: BudgetExceeded), with history valid. (Default: none)
   */
  beforeModelCall?: () => Promise<void>;
  /** Model calls allowed in one turn before it stops. (Default: 25) */
  maxModelCalls?: number;
  /**
   * Results of the open calls that finished before the job parked (`Job.toolResults`):
   * used instead of running those calls again.
   */
  finishedResults?: readonly ToolResultBlock[];
  /**
   * Values that never reach history or a person: replaced by `[redacted]` in the model's
   * replies and the tools' results (`secretValues(config)`). (Default: none)
   */
  secrets?: readonly string[];
  events?: TurnEvents;
  /** How a tool's retry waits its backoff. (Default: real timers) */
  sleep?: Sleep;
}

/** How a turn ended. */
export interface TurnResult {
  /** The final reply's text. */
  text: string;
  /** Model calls made by this run (0 when a finished reply was found in history). */
  modelCalls: number;
  /** Tokens used by this run's model calls. */
  usage: TokenUsage;
  /** The model the last of those calls went to (the turn's model when none was made). */
  model: string;
  /** The first call of this run that a fallback answered, if one did. (Default: none) */
  fallback?: ModelFallback;
  /**
   * The one line saying which model answered and why, when a fallback did; `text`
   * starts with it (the runner's result only). (Default: none)
   */
  notice?: string;
}

const DEFAULT_MAX_MODEL_CALLS = 25;

/** Runs (or resumes) the turn at the end of the session's history until the agent replies. */
export async function runTurn(options: TurnOptions): Promise<TurnResult> {
  const { history, sessionId, toolContext } = options;
  const limit = options.maxModelCalls ?? DEFAULT_MAX_MODEL_CALLS;
  let usage = zeroUsage();
  let modelCalls = 0;
  let model = options.model;
  let fallback: ModelFallback | undefined;
  const ended = (text: string): TurnResult => ({
    text,
    modelCalls,
    usage,
    model,
    ...(fallback ? { fallback } : {}),
  });
  const budget = new RequestBudget(options);
  for (;;) {
    toolContext.signal.throwIfAborted();
    const context = await history.loadContext(sessionId, options.maxMessages);
    const last = context.at(-1);
    if (!last) {
      // Nothing to answer now means nothing to answer on a retry either.
      throw new PicklebotError(`session ${sessionId} has no message to answer`, {
        retryable: false,
        context: { sessionId },
      });
    }
    if (last.role === "assistant") {
      const calls = toolUses(last);
      if (calls.length === 0) return ended(textOf(last));
      await runTools(options, calls);
      continue;
    }
    const ending = jobEndOf(last);
    if (ending) throw new JobEnded(ending);
    if (modelCalls >= limit) {
      return ended(`(stopped after ${limit} model calls in one turn)`);
    }
    await options.beforeModelCall?.();
    modelCalls += 1;
    const reply = await callModel(options, context, budget);
    usage = addUsage(usage, reply.usage);
    model = reply.fallback?.model ?? options.model;
    fallback ??= reply.fallback;
  }
}

/**
 * Calls the model on the history, fitted to the context budget. A "prompt is too long"
 * refusal (the estimate was low) corrects the budget by the count the API named, and the
 * call is made once more, smaller; it never becomes a permanent failure of the chat.
 */
async function callModel(options: TurnOptions, history: ChatMessage[], budget: RequestBudget) {
  options.events?.onModelCall?.(options.model);
  const secrets = options.secrets ?? [];
  const onText = options.events?.onText;
  const stream = onText && new SecretStreamRedactor(secrets, onText);
  const request = (messages: RequestMessage[]) =>
    options.provider.complete({
      model: options.model,
      system: options.system,
      currentTime: options.currentTime,
      messages,
      tools: options.tools.map((tool) => tool.spec),
      ...(options.serverTools?.length ? { serverTools: options.serverTools } : {}),
      maxTokens: options.maxTokens,
      signal: options.toolContext.signal,
      onText: stream && ((delta) => stream.write(delta)),
    });
  const valid = buildRequestMessages(history);
  let messages = budget.fit(valid);
  let reply: Awaited<ReturnType<ModelProvider["complete"]>>;
  try {
    reply = await request(messages);
  } catch (thrown) {
    const tooLong = promptTooLong(toError(thrown).message);
    if (!tooLong) throw thrown;
    budget.correct(messages, tooLong.tokens, tooLong.limit);
    if (tooLong.limit < options.contextWindow) options.onSmallerWindow?.(tooLong.limit);
    messages = budget.fit(valid);
    reply = await request(messages);
  }
  stream?.end();
  // A fallback's reply is recorded under the model that wrote it.
  const model = reply.fallback?.model ?? options.model;
  options.events?.onModelReply?.(model, reply.usage);
  budget.correct(messages, promptTokensOf(reply.usage));
  // The API rejects empty assistant messages, so a silent reply is stored as a marker.
  const content =
    reply.content.length > 0
      ? redactStrings(reply.content, secrets)
      : [{ type: "text" as const, text: "(no reply)" }];
  await options.history.append(
    options.sessionId,
    { role: "assistant", content },
    {
      usage: reply.usage,
      call: {
        model,
        jobId: options.toolContext.jobId,
        ...(reply.batch ? { batch: true } : {}),
      },
    },
  );
  return reply;
}

/**
 * Runs the open calls and appends their results; with a job's end when a tool ended the
 * job. Throws ParkRequest (nothing appended) when a call must wait.
 */
async function runTools(options: TurnOptions, calls: ToolUseBlock[]): Promise<void> {
  const { finishedResults = [] } = options;
  const finished = new Set(finishedResults.map((result) => result.tool_use_id));
  for (const call of calls) {
    if (!finished.has(call.id)) options.events?.onToolCall?.(call, summarizeToolCall(call));
  }
  const maxChars = toolResultMaxChars(options.contextWindow);
  const run = await runToolCalls(
    options.tools,
    calls,
    options.toolContext,
    finishedResults,
    options.sleep,
  );
  const secrets = options.secrets ?? [];
  const byId = new Map(calls.map((call) => [call.id, call]));
  const results = redactStrings(run.results, secrets).map((result) =>
    capToolResult(result, byId.get(result.tool_use_id) as ToolUseBlock, maxChars),
  );
  for (const result of run.results) {
    const call = byId.get(result.tool_use_id);
    if (call && !finished.has(call.id))
      options.events?.onToolResult?.(call, result.is_error === true);
  }
  options.toolContext.signal.throwIfAborted();
  if (run.park) throw new ParkRequest(run.park.wait, run.park.until, results);
  const content = run.ending ? [...results, redactStrings(run.ending, secrets)] : results;
  await options.history.append(options.sessionId, { role: "user", content });
}

/** The job's end a tool stored in `message`, if any. */
function jobEndOf(message: ChatMessage): JobEndBlock | undefined {
  return message.content.find((block): block is JobEndBlock => block.type === "job_end");
}

/** Input tokens the API counted for a request: uncached, read from and written to the cache. */
function promptTokensOf(usage: TokenUsage): number {
  return usage.input + usage.cacheRead + usage.cacheWrite;
}

/**
 * What one turn's requests may send: COMPACT_AT of the window, less the reply's
 * `max_tokens` and the system prompt and tools. Sizes are estimated, and the estimate is
 * scaled up whenever the API counted more than it said (never down: it errs high).
 */
class RequestBudget {
  /** Tokens a request may take. */
  #tokens: number;
  /** The estimate of what every request sends besides messages: system prompt, tools. */
  readonly #fixed: number;
  readonly #maxTokens: number;
  #scale = 1;

  constructor(options: TurnOptions) {
    this.#maxTokens = options.maxTokens;
    this.#tokens = this.#under(options.contextWindow);
    this.#fixed = estimateTokens(options.system) + estimateTokens(options.tools.map((t) => t.spec));
  }

  /** The messages, oldest turns left out as needed to stay under the budget. */
  fit(messages: RequestMessage[]): RequestMessage[] {
    return fitToBudget(messages, this.#tokens, (some) => this.#estimate(some));
  }

  /**
   * Learns from the API's count of a request made of `messages`, and from the window it
   * named when it refused one as too long (smaller than the table's, say).
   */
  correct(messages: RequestMessage[], countedTokens: number, window?: number): void {
    const estimated = this.#estimate(messages) / this.#scale;
    this.#scale = Math.max(this.#scale, (countedTokens / estimated) * 1.05);
    if (window !== undefined) this.#tokens = Math.min(this.#tokens, this.#under(window));
  }

  /** What a request may take in a window of `window` tokens. */
  #under(window: number): number {
    return requestBudget(window, this.#maxTokens);
  }

  #estimate(messages: readonly RequestMessage[]): number {
    return (estimateMessageTokens(messages) + this.#fixed) * this.#scale;
  }
}

function toolUses(message: ChatMessage): ToolUseBlock[] {
  return message.content.filter((block): block is ToolUseBlock => block.type === "tool_use");
}

/** The text of a message's text blocks, joined. */
export function textOf(message: ChatMessage): string {
  return message.content
    .map((block) => (block.type === "text" ? block.text : ""))
    .join("")
    .trim();
}
