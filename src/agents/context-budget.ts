/**
 * The context budget: what a model call may send so that it never passes the model's
 * context window, whatever the conversation holds.
 *
 *   window     per model (a table, or `llm.context_window`)
 *   threshold  COMPACT_AT of the window, minus the reply's `max_tokens`: a request is
 *              fitted under it before it is sent
 *   tool cap   one tool result may take TOOL_RESULT_SHARE of the window; a longer one is
 *              cut with a note saying how to read the rest
 *
 * Sizes are estimated from the request's text, then corrected by what the API reported
 * for the turn's previous call (`usage`), and by the count a "prompt is too long" refusal
 * names: the estimate only decides where to cut, the API's numbers correct it.
 */

import { assertNever } from "../base/assert-never.js";
import { isTurnStart } from "../base/turns.js";
import type {
  RequestContentBlock,
  RequestMessage,
  ToolResultBlock,
  ToolSpec,
  ToolUseBlock,
} from "../ports/index.js";

/** The window of a model this table does not know. */
export const DEFAULT_CONTEXT_WINDOW = 200_000;

/** Context windows of well-known models, by model-name prefix (longest match wins). */
const CONTEXT_WINDOWS: ReadonlyArray<readonly [prefix: string, tokens: number]> = [
  ["claude-opus-4", 200_000],
  ["claude-sonnet-4", 200_000],
  ["claude-haiku-4", 200_000],
  ["claude-3", 200_000],
  // OpenAI's own API (https://platform.openai.com/docs/models), whose model list says
  // none: the prompt's limit (gpt-5's window of 400k holds 272k of prompt).
  ["gpt-4o", 128_000],
  ["gpt-4.1", 1_047_576],
  ["gpt-5", 272_000],
  ["o3", 200_000],
  ["o4-mini", 200_000],
];

/** Share of the window a request is fitted under (Claude Code compacts at about 83%). */
export const COMPACT_AT = 0.8;

/** Share of the window one tool result may take. */
export const TOOL_RESULT_SHARE = 0.1;

/** Characters per token this estimate assumes: on the low side, so it overcounts. */
const CHARS_PER_TOKEN = 3;

/** Tokens one request may take: {@link COMPACT_AT} of the window, less the reply's room. */
export function requestBudget(contextWindow: number, maxTokens: number): number {
  return contextWindow * COMPACT_AT - maxTokens;
}

/** The longest tool result, in characters, for a model with this window. */
export function toolResultMaxChars(contextWindow: number): number {
  return Math.floor(contextWindow * TOOL_RESULT_SHARE * CHARS_PER_TOKEN);
}

/**
 * The context window of `model`: `override` (`llm.context_window`), the table, the
 * `provider`'s (its model list's), or {@link DEFAULT_CONTEXT_WINDOW}.
 */
export function contextWindowOf(model: string, override?: number, provider?: number): number {
  if (override !== undefined) return override;
  return tableWindow(model) ?? provider ?? DEFAULT_CONTEXT_WINDOW;
}

/** Whether the table knows the window of `model`. */
export function hasKnownContextWindow(model: string): boolean {
  return tableWindow(model) !== undefined;
}

function tableWindow(model: string): number | undefined {
  const known = CONTEXT_WINDOWS.filter(([prefix]) => model.startsWith(prefix)).sort(
    (a, b) => b[0].length - a[0].length,
  );
  return known[0]?.[1];
}

/** A rough, high token count of a text (a system prompt) or of the tools' specs. */
export function estimateTokens(value: string | readonly ToolSpec[]): number {
  const text = typeof value === "string" ? value : JSON.stringify(value);
  return Math.ceil(text.length / CHARS_PER_TOKEN);
}

/**
 * A rough, high token count of request messages: their characters as JSON, each block
 * sized by its kind (an image and a PDF by their tokens, not their base64).
 */
export function estimateMessageTokens(messages: readonly RequestMessage[]): number {
  let chars = 2 + Math.max(0, messages.length - 1);
  for (const message of messages) {
    chars += `{"role":${JSON.stringify(message.role)},"content":[]}`.length;
    chars += Math.max(0, message.content.length - 1);
    for (const block of message.content) chars += blockChars(block);
  }
  return Math.ceil(chars / CHARS_PER_TOKEN);
}

/** The characters one block stands for in a request: its JSON, as the API receives it. */
function blockChars(block: RequestContentBlock): number {
  switch (block.type) {
    case "text":
    case "tool_use":
    case "tool_result":
      return JSON.stringify(block).length;
    case "server_tool_use":
    case "server_tool_result":
      return JSON.stringify(block.raw).length;
    case "image":
      return imageTokens(block.width, block.height) * CHARS_PER_TOKEN;
    case "document":
      return block.pages * PDF_PAGE_TOKENS * CHARS_PER_TOKEN;
    default:
      return assertNever(block, "request block");
  }
}

/**
 * Input tokens of an image, by the API's documented formula (width × height / 750): what
 * it costs, whatever the length of its base64.
 */
export function imageTokens(width: number, height: number): number {
  return Math.ceil((width * height) / 750);
}

/**
 * Input tokens one PDF page is counted as: the API reads each page as text (1,500 to
 * 3,000 tokens) and as an image; the high end, so the estimate overcounts.
 */
export const PDF_PAGE_TOKENS = 3000;

/** The note that replaces turns left out of a request. */
export const LEFT_OUT_NOTE =
  "(Earlier messages of this conversation are left out: they no longer fit in the model's context window. Ask the user if you need something from them.)";

/**
 * The request messages under `budget` tokens (as `estimate` counts them): the oldest turns
 * are left out, whole, until the rest fits, and the first kept message says so. The last
 * turn is always kept (its tool results are capped, so it fits on its own).
 */
export function fitToBudget(
  messages: readonly RequestMessage[],
  budget: number,
  estimate: (messages: readonly RequestMessage[]) => number,
): RequestMessage[] {
  if (estimate(messages) <= budget) return [...messages];
  let start = 0;
  for (let index = 1; index < messages.length; index++) {
    if (!isTurnStart(messages[index] as RequestMessage)) continue;
    start = index;
    if (estimate(messages.slice(start)) <= budget) break;
  }
  const [first, ...rest] = messages.slice(start);
  if (!first) return [];
  return [
    { ...first, content: [{ type: "text", text: LEFT_OUT_NOTE }, ...first.content] },
    ...rest,
  ];
}

/**
 * A tool result of at most `maxChars` characters: a longer one keeps its head and ends
 * with a note on what was cut and how to get the rest (`read` from an offset).
 */
export function capToolResult(
  result: ToolResultBlock,
  call: ToolUseBlock,
  maxChars: number,
): ToolResultBlock {
  if (result.content.length <= maxChars) return result;
  const shown = result.content.slice(0, maxChars);
  const how = howToReadOn(call, Buffer.byteLength(shown));
  const note = `\n\n[cut to fit the context window: ${maxChars} of ${result.content.length} characters shown; ${how}]`;
  return { ...result, content: `${shown}${note}` };
}

function howToReadOn(call: ToolUseBlock, shownBytes: number): string {
  const input = (call.input ?? {}) as { path?: unknown; offset?: unknown };
  if (call.name === "read" && typeof input.path === "string") {
    const offset = (typeof input.offset === "number" ? input.offset : 0) + shownBytes;
    return `read the rest with read {"path": ${JSON.stringify(input.path)}, "offset": ${offset}}`;
  }
  return "ask for less (a narrower command, a part of the page)";
}

/** A session's size against its window, for people: `context ~42k of 200k tokens (21%)`. */
export function formatContextUsage({ tokens, window }: { tokens: number; window: number }): string {
  const k = (value: number) => `${Math.round(value / 1000)}k`;
  return `context ~${k(tokens)} of ${k(window)} tokens (${Math.round((100 * tokens) / window)}%)`;
}

/** The prompt size a "prompt is too long" refusal names (`215000 tokens > 200000 maximum`), or null. */
export function promptTooLong(message: string): { tokens: number; limit: number } | null {
  const match = /prompt is too long: (\d+) tokens > (\d+) maximum/.exec(message);
  return match ? { tokens: Number(match[1]), limit: Number(match[2]) } : null;
}
