/**
 * Compaction: before a session's next turn would send more than COMPACT_BEFORE of what a
 * request may take, the model summarises the conversation so far, and the summary is stored
 * as a compaction point. Every later request starts there (see `cutContext`): the summary
 * stands in for the older turns, which stay stored in full.
 *
 *   size ≥ COMPACT_BEFORE × request budget (or forced: /compact, `picklebot sessions compact`)
 *     ─► one summary call, on the context fitted to the budget (old tool outputs are the
 *        first thing left out) ─► the compaction point appended ─► the turn goes on
 *
 * It runs before the turn's user message is written, so a crash during the summary call
 * redoes only that call, and a crash after it finds the point stored and compacts no
 * more. It is bounded: one summary call per turn at most. A summary that fails leaves the
 * session as it was; the request budget still leaves the oldest turns out, and says so.
 */
import type { HistoryStore, ModelProvider, TokenUsage } from "../ports/index.js";
import { estimateTokens, fitToBudget, requestBudget } from "./context-budget.js";
import { buildRequestMessages } from "./context-builder.js";
import { textOf } from "./loop.js";

/**
 * Share of a request's budget (see `requestBudget`) past which the next turn compacts
 * first: well before requests would have to leave turns out.
 */
export const COMPACT_BEFORE = 0.7;

/** The instructions of a summary call. */
const SUMMARY_SYSTEM =
  "You compress a conversation between a user and an AI assistant into notes the assistant will read instead of it. Keep what matters for going on: the user's goals and preferences, decisions, facts learned, names, numbers, file paths, open tasks and the state of the work. Drop pleasantries and tool output already acted upon. Write plain text, at most about 800 words.";

const SUMMARY_REQUEST =
  "Summarise the conversation above as notes for yourself, following your instructions. Reply with the notes only.";

/** Longest summary, in tokens. */
const SUMMARY_MAX_TOKENS = 2048;

/** What compaction needs. */
export interface CompactionOptions {
  history: HistoryStore;
  provider: ModelProvider;
  model: string;
  contextWindow: number;
  /** The agent's reply room (`max_tokens`), which a request's budget leaves free. */
  maxTokens: number;
  /** Messages a request may hold (`history.max_messages`). */
  maxMessages: number;
  signal: AbortSignal;
}

/** What a compaction did. */
export interface CompactionResult {
  /** Estimated tokens of the session's context before and after. */
  before: number;
  after: number;
  /** Messages the summary stands in for. */
  replaced: number;
  usage: TokenUsage;
}

/** The estimated size, in tokens, of what the session's next request would send. */
export async function contextSize(
  history: HistoryStore,
  sessionId: string,
  maxMessages: number,
): Promise<number> {
  return estimateTokens(buildRequestMessages(await history.loadContext(sessionId, maxMessages)));
}

/**
 * Compacts the session when its context has passed {@link COMPACT_BEFORE} of the window,
 * or whenever `force` is set and there is something to compact; null when it did not.
 * Throws when the summary call fails (nothing is written then).
 */
export async function compactSession(
  sessionId: string,
  options: CompactionOptions,
  { force = false }: { force?: boolean } = {},
): Promise<CompactionResult | null> {
  const { history, provider, model, contextWindow, maxTokens, maxMessages, signal } = options;
  const context = await history.loadContext(sessionId, maxMessages);
  const request = buildRequestMessages(context);
  const before = estimateTokens(request);
  const threshold = requestBudget(contextWindow, maxTokens) * COMPACT_BEFORE;
  const worthIt = request.length >= 2 && (force || before >= threshold);
  if (!worthIt) return null;
  const asked = buildRequestMessages([
    ...context,
    { role: "user", content: [{ type: "text", text: SUMMARY_REQUEST }] },
  ]);
  const budget = contextWindow * 0.9 - SUMMARY_MAX_TOKENS - estimateTokens(SUMMARY_SYSTEM);
  const reply = await provider.complete({
    model,
    system: SUMMARY_SYSTEM,
    messages: fitToBudget(asked, budget, estimateTokens),
    tools: [],
    maxTokens: SUMMARY_MAX_TOKENS,
    signal,
  });
  const summary = textOf({ role: "assistant", content: reply.content });
  if (summary === "") throw new Error("the model's summary of the conversation was empty");
  const point = { type: "compaction" as const, summary, replaces: context.length };
  await history.append(sessionId, { role: "user", content: [point] }, { usage: reply.usage });
  const after = await contextSize(history, sessionId, maxMessages);
  return { before, after, replaced: context.length, usage: reply.usage };
}
