/**
 * Compaction: before a session's next turn would send more than COMPACT_BEFORE of what a
 * request may take, the session is made smaller, in two steps, cheapest first:
 *
 *   size ≥ COMPACT_BEFORE × request budget (counted by the API's count_tokens once the
 *   estimate is past COUNT_FROM of that, as an estimate alone can be far off), or
 *   messages ≥ COMPACT_BEFORE × `history.max_messages` (then straight to a summary)
 *     ─► prune: a prune point is appended; the tool outputs of the turns before the last
 *        PRUNE_KEEP_TURNS are sent as a one-line note from then on. No model call.
 *        Enough when it brings the size under PRUNED_ENOUGH × budget.
 *     ─► else summarise: one summary call on the context fitted to the budget, and the
 *        summary stored as a compaction point. Every later request starts there (see
 *        `cutContext`), the summary standing in for the older turns.
 *   forced (/compact, `picklebot sessions compact`): summarise.
 *
 * Raw messages are never deleted: both points are messages of their own, and what they
 * stand in for stays stored in full. It runs before the turn's user message is written,
 * so a crash during the summary call redoes only that call, and a crash after it finds
 * the point stored and compacts no more. It is bounded: one prune or one summary call per
 * turn. A summary that fails leaves the session as it was; the request budget still
 * leaves the oldest turns out, and says so.
 */
import { zeroUsage } from "../base/usage.js";
import type {
  ChatMessage,
  HistoryStore,
  ModelProvider,
  RequestMessage,
  TokenUsage,
} from "../ports/index.js";
import {
  estimateMessageTokens,
  estimateTokens,
  fitToBudget,
  requestBudget,
} from "./context-budget.js";
import { buildRequestMessages, prunePoint } from "./context-builder.js";
import { textOf } from "./loop.js";

/**
 * Share of a request's budget (see `requestBudget`) past which the next turn compacts
 * first: well before requests would have to leave turns out.
 */
export const COMPACT_BEFORE = 0.7;

/** Share of the compaction threshold from which a size is counted by the API, not estimated. */
export const COUNT_FROM = 0.5;

/** Turns whose tool outputs a prune keeps in full: the work at hand. */
export const PRUNE_KEEP_TURNS = 2;

/**
 * Share of a request's budget a prune must bring the session under to be enough; one
 * that frees less would have to be done again a few turns later, so it summarises.
 */
export const PRUNED_ENOUGH = 0.5;

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
  /** The job compacting, recorded with the summary call in the usage ledger. (Default: none) */
  jobId?: string;
}

/** What a compaction did. */
export interface CompactionResult {
  /** `pruned`: old tool outputs left out; `summarised`: older turns replaced by a summary. */
  how: "pruned" | "summarised";
  /** Tokens of the session's context before (counted when it could be) and after (estimated). */
  before: number;
  after: number;
  /** Messages the summary stands in for (0 when pruned). */
  replaced: number;
  usage: TokenUsage;
  /** The model the summary call went to. */
  model: string;
}

/** A compaction for people: `3 old tool outputs left out, context ~52k → ~18k tokens`. */
export function describeCompaction(result: CompactionResult): string {
  const k = (tokens: number) => `~${Math.round(tokens / 1000)}k`;
  const what =
    result.how === "pruned"
      ? "old tool outputs left out"
      : `${result.replaced} messages summarised`;
  return `${what}, context ${k(result.before)} → ${k(result.after)} tokens`;
}

/** The estimated size, in tokens, of what the session's next request would send. */
export async function contextSize(
  history: HistoryStore,
  sessionId: string,
  maxMessages: number,
): Promise<number> {
  return estimateMessageTokens(
    buildRequestMessages(await history.loadContext(sessionId, maxMessages)),
  );
}

/**
 * Compacts the session when its context has passed {@link COMPACT_BEFORE} of the request
 * budget or of `maxMessages` (see above), or summarises whenever `force` is set and there is
 * something to compact; null when it did not. Throws when the summary call fails
 * (nothing is written then).
 */
export async function compactSession(
  sessionId: string,
  options: CompactionOptions,
  { force = false }: { force?: boolean } = {},
): Promise<CompactionResult | null> {
  const { history, contextWindow, maxTokens, maxMessages } = options;
  const context = await history.loadContext(sessionId, maxMessages);
  const request = buildRequestMessages(context);
  if (request.length < 2) return null;
  const estimate = estimateMessageTokens(request);
  if (force) return summarise(sessionId, context, estimate, options);
  const budget = requestBudget(contextWindow, maxTokens);
  const before = await measure(request, estimate, budget * COMPACT_BEFORE, options);
  // Past max_messages, requests would start one turn later each time, and no prompt cache
  // would ever be read again: well before that, only a summary makes the context shorter.
  const crowded = context.length >= maxMessages * COMPACT_BEFORE;
  if (!crowded && before < budget * COMPACT_BEFORE) return null;
  // The estimate of the pruned context, scaled as the measured size was.
  const pruned = estimateMessageTokens(
    buildRequestMessages([...context, prunePoint(PRUNE_KEEP_TURNS)]),
  );
  if (crowded || pruned * (before / estimate) > budget * PRUNED_ENOUGH) {
    return summarise(sessionId, context, before, options);
  }
  await history.append(sessionId, prunePoint(PRUNE_KEEP_TURNS));
  const { model } = options;
  return { how: "pruned", before, after: pruned, replaced: 0, usage: zeroUsage(), model };
}

/**
 * The size of a request in tokens: its `estimate`, or the API's count (when it can count)
 * once the estimate passes {@link COUNT_FROM} of `threshold`, near which an estimate
 * alone cannot decide. A count that fails leaves the estimate.
 */
async function measure(
  messages: RequestMessage[],
  estimate: number,
  threshold: number,
  { provider, model, signal }: CompactionOptions,
): Promise<number> {
  if (estimate < threshold * COUNT_FROM || !provider.countTokens) return estimate;
  try {
    return await provider.countTokens({ model, system: "", messages, tools: [], signal });
  } catch {
    signal.throwIfAborted();
    return estimate;
  }
}

/** One summary call, and its compaction point stored. */
async function summarise(
  sessionId: string,
  context: ChatMessage[],
  before: number,
  options: CompactionOptions,
): Promise<CompactionResult> {
  const { history, provider, model, contextWindow, maxMessages, signal } = options;
  const asked = buildRequestMessages([
    ...context,
    { role: "user", content: [{ type: "text", text: SUMMARY_REQUEST }] },
  ]);
  const budget = contextWindow * 0.9 - SUMMARY_MAX_TOKENS - estimateTokens(SUMMARY_SYSTEM);
  const reply = await provider.complete({
    model,
    system: SUMMARY_SYSTEM,
    messages: fitToBudget(asked, budget, estimateMessageTokens),
    tools: [],
    maxTokens: SUMMARY_MAX_TOKENS,
    signal,
  });
  const summary = textOf({ role: "assistant", content: reply.content });
  if (summary === "") throw new Error("the model's summary of the conversation was empty");
  const point = { type: "compaction" as const, summary, replaces: context.length };
  const call = { model, jobId: options.jobId };
  await history.append(sessionId, { role: "user", content: [point] }, { usage: reply.usage, call });
  const after = await contextSize(history, sessionId, maxMessages);
  return { how: "summarised", before, after, replaced: context.length, usage: reply.usage, model };
}
