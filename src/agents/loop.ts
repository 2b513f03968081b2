/**
 * The agent loop: drives one turn of a session to its end, reading the session's
 * history as the only state. Because every step is written to history before the next
 * one starts, the same function both runs a fresh turn and resumes one interrupted by a
 * crash. It looks at the last stored message:
 *
 *   assistant, no tool_use      → the turn is finished: return its text (no model call)
 *   assistant, with tool_use    → run the tools, append their results, look again
 *   user (message or results)   → call the model, append its reply, look again
 */

import { PicklebotError } from "../base/errors.js";
import { addUsage, zeroUsage } from "../base/usage.js";
import type {
  ChatMessage,
  HistoryStore,
  ModelProvider,
  TokenUsage,
  Tool,
  ToolContext,
  ToolUseBlock,
} from "../ports/index.js";
import { buildRequestMessages } from "./context-builder.js";
import { runToolCalls, summarizeToolCall } from "./tools/index.js";

/** What a person watching the turn is shown as it happens. */
export interface TurnEvents {
  /** A piece of the reply's text, as the model streams it. */
  onText?(delta: string): void;
  /** A tool call is about to run. */
  onToolCall?(call: ToolUseBlock, summary: string): void;
  /** A model call starts (before its first text). */
  onModelCall?(): void;
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
  /** Passed to every tool run; its signal also aborts the model call. */
  toolContext: ToolContext;
  /** Messages sent to the model per call (`history.max_messages`). */
  maxMessages: number;
  /** Model calls allowed in one turn before it stops. (Default: 25) */
  maxModelCalls?: number;
  events?: TurnEvents;
}

/** How a turn ended. */
export interface TurnResult {
  /** The final reply's text. */
  text: string;
  /** Model calls made by this run (0 when a finished reply was found in history). */
  modelCalls: number;
  /** Tokens used by this run's model calls. */
  usage: TokenUsage;
}

const DEFAULT_MAX_MODEL_CALLS = 25;

/** Runs (or resumes) the turn at the end of the session's history until the agent replies. */
export async function runTurn(options: TurnOptions): Promise<TurnResult> {
  const { history, sessionId, toolContext } = options;
  const limit = options.maxModelCalls ?? DEFAULT_MAX_MODEL_CALLS;
  let usage = zeroUsage();
  let modelCalls = 0;
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
      if (calls.length === 0) return { text: textOf(last), modelCalls, usage };
      await runTools(options, calls);
      continue;
    }
    if (modelCalls >= limit) {
      return { text: `(stopped after ${limit} model calls in one turn)`, modelCalls, usage };
    }
    modelCalls += 1;
    const reply = await callModel(options, context);
    usage = addUsage(usage, reply.usage);
  }
}

async function callModel(options: TurnOptions, messages: ChatMessage[]) {
  options.events?.onModelCall?.();
  const reply = await options.provider.complete({
    model: options.model,
    system: options.system,
    currentTime: options.currentTime,
    messages: buildRequestMessages(messages),
    tools: options.tools.map((tool) => tool.spec),
    maxTokens: options.maxTokens,
    signal: options.toolContext.signal,
    onText: options.events?.onText,
  });
  // The API rejects empty assistant messages, so a silent reply is stored as a marker.
  const content =
    reply.content.length > 0 ? reply.content : [{ type: "text" as const, text: "(no reply)" }];
  await options.history.append(
    options.sessionId,
    { role: "assistant", content },
    { usage: reply.usage },
  );
  return reply;
}

async function runTools(options: TurnOptions, calls: ToolUseBlock[]): Promise<void> {
  for (const call of calls) options.events?.onToolCall?.(call, summarizeToolCall(call));
  const results = await runToolCalls(options.tools, calls, options.toolContext);
  options.toolContext.signal.throwIfAborted();
  await options.history.append(options.sessionId, { role: "user", content: results });
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
