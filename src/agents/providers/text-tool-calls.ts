/**
 * Tool calls that a model wrote as text instead of as `tool_calls` (Ollama's OpenAI
 * surface and some local chat templates lose them: docs/decisions/text-tool-calls.md),
 * repaired into real calls when every one names a tool of the request. Two forms are
 * known:
 *
 *   <tool_call>{"name": "read", "arguments": {"path": "a.md"}}</tool_call>   (one or more)
 *   {"name": "read", "arguments": {"path": "a.md"}}       (the whole reply, maybe fenced;
 *                                                          `parameters` for `arguments`,
 *                                                          or an array of such objects)
 *
 * While a reply streams, {@link TextToolCallFilter} holds back text that may be such a
 * call, so the person does not see it; text that turns out to be none is let through at
 * the end.
 */

/** A tool call found in text. */
export interface TextToolCall {
  name: string;
  input: Record<string, unknown>;
}

/** What a repair found: the calls, and the text around them. */
export interface RepairedText {
  text: string;
  calls: TextToolCall[];
}

const OPEN_TAG = "<tool_call>";
const TAGGED = /<tool_call>\s*([\s\S]*?)\s*(?:<\/tool_call>|$)/g;
const FENCED = /^```(?:json)?\s*([\s\S]*?)\s*```$/;

/**
 * The tool calls `text` holds, when it holds some and each names one of `tools`;
 * null otherwise (the text stays a text reply).
 */
export function repairTextToolCalls(text: string, tools: ReadonlySet<string>): RepairedText | null {
  if (tools.size === 0) return null;
  if (text.includes(OPEN_TAG)) {
    const bodies = [...text.matchAll(TAGGED)].map((match) => match[1] ?? "");
    const calls = bodies.map((body) => toCall(parseJson(body), tools));
    if (calls.length === 0 || calls.some((call) => call === null)) return null;
    return { text: text.replace(TAGGED, "").trim(), calls: calls as TextToolCall[] };
  }
  const trimmed = text.trim();
  const parsed = parseJson(FENCED.exec(trimmed)?.[1] ?? trimmed);
  const list = Array.isArray(parsed) ? parsed : [parsed];
  const calls = list.map((item) => toCall(item, tools));
  if (calls.length === 0 || calls.some((call) => call === null)) return null;
  return { text: "", calls: calls as TextToolCall[] };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function toCall(value: unknown, tools: ReadonlySet<string>): TextToolCall | null {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return null;
  const { name, arguments: args, parameters } = value as Record<string, unknown>;
  if (typeof name !== "string" || !tools.has(name)) return null;
  const input = typeof args === "string" ? parseJson(args) : (args ?? parameters ?? {});
  if (typeof input !== "object" || input === null || Array.isArray(input)) return null;
  return { name, input: input as Record<string, unknown> };
}

/**
 * Passes streamed text on, holding back what may be a tool call written as text: a reply
 * that starts with `{`, `[` or a code fence, and everything from a `<tool_call>` tag on.
 */
export class TextToolCallFilter {
  readonly #onText: (delta: string) => void;
  #passed = "";
  #held = "";
  #holding = false;

  constructor(onText: (delta: string) => void) {
    this.#onText = onText;
  }

  /** Takes the next delta of the reply. */
  write(delta: string): void {
    this.#held += delta;
    if (this.#holding) return;
    if (this.#passed === "") {
      const start = this.#held.trimStart();
      if (start === "") return;
      if (/^[{[`]/.test(start)) {
        this.#holding = true;
        return;
      }
    }
    const tag = this.#held.indexOf(OPEN_TAG);
    if (tag >= 0) {
      this.#pass(this.#held.slice(0, tag));
      this.#held = this.#held.slice(tag);
      this.#holding = true;
      return;
    }
    const keep = partialTagLength(this.#held);
    this.#pass(this.#held.slice(0, this.#held.length - keep));
    this.#held = this.#held.slice(this.#held.length - keep);
  }

  /** The reply ended: lets the held text through unless it was repaired into tool calls. */
  end(repaired: boolean): void {
    if (!repaired) this.#pass(this.#held);
    this.#held = "";
  }

  #pass(text: string): void {
    if (text === "") return;
    this.#passed += text;
    this.#onText(text);
  }
}

/** How many characters at the end of `text` may be the start of a `<tool_call>` tag. */
function partialTagLength(text: string): number {
  for (let length = Math.min(OPEN_TAG.length - 1, text.length); length > 0; length--) {
    if (OPEN_TAG.startsWith(text.slice(-length))) return length;
  }
  return 0;
}
