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
 *     ─► else summarise:
 *        1. the verbatim tail: the latest whole turns, up to TAIL_MAX_MESSAGES messages
 *           and `history.keep_verbatim_tokens` tokens (and TAIL_SHARE of max_messages
 *           and of the budget), stay as they are; what comes before them is summarised;
 *        2. the memory save (when the run may write memory): one model call offered only
 *           the `memory` tool, capped at MEMORY_SAVE_MAX_TOKENS, on what is about to be
 *           summarised; its calls are stored as a memory save marker, then run;
 *        3. one summary call on the older part fitted to the budget, and the summary
 *           stored as a compaction point that keeps the tail. Every later request starts
 *           with the summary, then the tail (see `cutContext`, `buildRequestMessages`).
 *   forced (/compact, `picklebot sessions compact`): summarise.
 *
 * Raw messages are never deleted: the points are messages of their own, and what they
 * stand in for stays stored in full. It runs before the turn's user message is written,
 * so a crash during the save call redoes only that call; a crash after its marker is
 * stored runs the stored calls again (each writes at most once: keyed by session and call
 * id) without calling the model again; a crash during the summary call redoes only that
 * call, and a crash after it finds the point stored and compacts no more. It is bounded:
 * one prune, or one save call and one summary call, per turn; a marker stored since the
 * last point (a summary that failed after it) is reused, never called again. A summary
 * that fails leaves the session as it was; the request budget still leaves the oldest
 * turns out, and says so.
 */
import { toError } from "../base/errors.js";
import { isCompaction, isWordsTurnStart } from "../base/turns.js";
import { addUsage, zeroUsage } from "../base/usage.js";
import type {
  ChatMessage,
  HistoryStore,
  MemorySaveBlock,
  ModelProvider,
  RequestMessage,
  TokenUsage,
  Tool,
  ToolContext,
  ToolUseBlock,
} from "../ports/index.js";
import {
  estimateMessageTokens,
  estimateTokens,
  fitToBudget,
  requestBudget,
} from "./context-budget.js";
import { buildRequestMessages, prunePoint } from "./context-builder.js";
import { textOf } from "./loop.js";
import { runToolCalls } from "./tools/index.js";

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

/**
 * Most messages a summary keeps verbatim after it (the peers keep 8 to 20), whole turns
 * only; and at most {@link TAIL_SHARE} of `history.max_messages`.
 */
export const TAIL_MAX_MESSAGES = 20;

/**
 * Share of the request budget, and of `history.max_messages`, the verbatim tail may take:
 * with the summary, a compacted session stays well under {@link PRUNED_ENOUGH}, so it is
 * not compacted again a few turns later.
 */
export const TAIL_SHARE = 0.25;

/** Longest reply of the memory save call before a summary, in tokens: a few short entries. */
export const MEMORY_SAVE_MAX_TOKENS = 1024;

/** The instructions of the memory save call; what the memories hold now follows them. */
const MEMORY_SAVE_SYSTEM =
  "The conversation below is about to be summarised, and its details will be forgotten. Before that, save to your long-term memory, with the `memory` tool, what will still matter in later conversations and is not saved yet: the person's preferences, names, dates, plans and decisions, and what you learned about your work. One short, self-contained fact per call; never passwords, keys or tokens; nothing your memory already holds (below). This is your only chance, and the tool's answers are not shown to you. If nothing is worth saving, reply with: Nothing to save.";

const MEMORY_SAVE_REQUEST =
  "The conversation above is about to be summarised. Save what matters to your memory now, following your instructions.";

/** What the memory save before a summary uses; without it there is no save call. */
export interface MemorySaveOptions {
  /** The run's `memory` tool: the only tool the save call is offered. */
  tool: Tool;
  /** What its calls run with: the session's key, the job (recorded with each change). */
  context: ToolContext;
  /** What the memories the run writes hold now, shown to the save call. */
  memory: string;
}

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
  /** Tokens of the latest turns a summary keeps verbatim (`history.keep_verbatim_tokens`). */
  tailTokens: number;
  signal: AbortSignal;
  /** The job compacting, recorded with the summary call in the usage ledger. (Default: none) */
  jobId?: string;
  /**
   * What the memory save before a summary uses, asked for only when summarising; null
   * when the run may not write memory (memory off, read-only, a cron or a subagent, a
   * policy that does not allow `memory`). (Default: no save)
   */
  memorySave?: () => Promise<MemorySaveOptions | null>;
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
  /** Messages of the latest turns kept verbatim after the summary (0 when pruned). */
  kept: number;
  /**
   * The memory save before the summary: the `memory` calls it ran (stored again after a
   * crash: written at most once), or why the save call failed (the summary went on).
   * Null when there was none (pruned, or the run may not write memory).
   */
  memorySave: { calls: number } | { error: string } | null;
  usage: TokenUsage;
  /** The model the summary call went to. */
  model: string;
}

/**
 * A compaction for people: `old tool outputs left out, context ~52k → ~18k tokens`, or
 * `12 messages summarised, the last 4 kept as they were, context ~52k → ~18k tokens`.
 */
export function describeCompaction(result: CompactionResult): string {
  const k = (tokens: number) => `~${Math.round(tokens / 1000)}k`;
  const tail = result.kept > 0 ? `, the last ${result.kept} kept as they were` : "";
  const what =
    result.how === "pruned"
      ? "old tool outputs left out"
      : `${result.replaced} messages summarised${tail}`;
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
  const usage = zeroUsage();
  return {
    how: "pruned",
    before,
    after: pruned,
    replaced: 0,
    kept: 0,
    usage,
    model,
    memorySave: null,
  };
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

/**
 * Where the verbatim tail of a context to summarise starts: at the earliest turn start
 * after its last compaction point from which the latest whole turns hold at most
 * {@link TAIL_MAX_MESSAGES} messages and `tailTokens` tokens (each at most
 * {@link TAIL_SHARE} of `maxMessages` and of the budget), leaving at least one turn to
 * summarise; `context.length` when no turn fits. A turn is kept whole, so a tool call is
 * never parted from its result, and the tail starts with the person's message.
 */
function tailStart(
  context: readonly ChatMessage[],
  limits: { budget: number; maxMessages: number; tailTokens: number },
): number {
  const { budget, maxMessages, tailTokens } = limits;
  const maxTokens = Math.min(tailTokens, budget * TAIL_SHARE);
  const maxCount = Math.min(TAIL_MAX_MESSAGES, Math.floor(maxMessages * TAIL_SHARE));
  const point = context.findLastIndex(isCompaction);
  const starts = context.flatMap((message, index) =>
    index > point && isWordsTurnStart(message) ? [index] : [],
  );
  let start = context.length;
  // The first turn after the last point is summarised, whatever its size.
  for (const candidate of starts.slice(1).reverse()) {
    const tail = context.slice(candidate);
    if (tail.length > maxCount) break;
    if (estimateMessageTokens(buildRequestMessages(tail)) > maxTokens) break;
    start = candidate;
  }
  return start;
}

/**
 * The memory save, then one summary call on what comes before the verbatim tail, and the
 * compaction point (keeping the tail) stored.
 */
async function summarise(
  sessionId: string,
  context: ChatMessage[],
  before: number,
  options: CompactionOptions,
): Promise<CompactionResult> {
  const { history, provider, model, contextWindow, maxTokens, maxMessages, signal } = options;
  const budget = requestBudget(contextWindow, maxTokens);
  const start = tailStart(context, { budget, maxMessages, tailTokens: options.tailTokens });
  const older = context.slice(0, start);
  const saved = await saveToMemory(sessionId, context, older, options);
  const reply = await provider.complete({
    model,
    system: SUMMARY_SYSTEM,
    messages: asking(older, SUMMARY_REQUEST, SUMMARY_SYSTEM, SUMMARY_MAX_TOKENS, contextWindow),
    tools: [],
    maxTokens: SUMMARY_MAX_TOKENS,
    signal,
  });
  const summary = textOf({ role: "assistant", content: reply.content });
  if (summary === "") throw new Error("the model's summary of the conversation was empty");
  // The marker stored now sits between the tail and the point: the point keeps it too.
  const kept = start === context.length ? 0 : context.length - start + (saved.stored ? 1 : 0);
  const point = {
    type: "compaction" as const,
    summary,
    replaces: start,
    ...(kept > 0 ? { keeps: kept } : {}),
  };
  const call = { model, jobId: options.jobId };
  await history.append(sessionId, { role: "user", content: [point] }, { usage: reply.usage, call });
  const after = await contextSize(history, sessionId, maxMessages);
  return {
    how: "summarised",
    before,
    after,
    replaced: start,
    kept: context.length - start,
    usage: addUsage(saved.usage, reply.usage),
    model,
    memorySave: saved.outcome,
  };
}

/**
 * The messages of a call about `older` (the save call, the summary call): them and
 * `request`, fitted to what the window leaves beside the call's instructions and reply.
 */
function asking(
  older: readonly ChatMessage[],
  request: string,
  system: string,
  replyTokens: number,
  contextWindow: number,
): RequestMessage[] {
  const asked = buildRequestMessages([
    ...older,
    { role: "user", content: [{ type: "text", text: request }] },
  ]);
  const budget = contextWindow * 0.9 - replyTokens - estimateTokens(system);
  return fitToBudget(asked, budget, estimateMessageTokens);
}

/** How the memory save before a summary went. */
interface SaveOutcome {
  outcome: CompactionResult["memorySave"];
  /** Its marker was stored by this compaction (it then sits right before the point). */
  stored: boolean;
  usage: TokenUsage;
}

/**
 * The memory save before a summary (see the file header): the calls of the marker stored
 * since the last point, else those of one save call on `older`, stored as a marker before
 * they run. A save call that fails is reported; the summary goes on.
 */
async function saveToMemory(
  sessionId: string,
  context: readonly ChatMessage[],
  older: readonly ChatMessage[],
  options: CompactionOptions,
): Promise<SaveOutcome> {
  const save = (await options.memorySave?.()) ?? null;
  const none = { stored: false, usage: zeroUsage() };
  if (!save) return { ...none, outcome: null };
  const earlier = storedSave(context);
  if (earlier) return { ...none, outcome: await runSaves(earlier.calls, save) };
  const { history, provider, model, contextWindow, signal } = options;
  const system = `${MEMORY_SAVE_SYSTEM}\n\n# Your memory now\n\n${save.memory}`;
  let reply: Awaited<ReturnType<ModelProvider["complete"]>>;
  try {
    reply = await provider.complete({
      model,
      system,
      messages: asking(older, MEMORY_SAVE_REQUEST, system, MEMORY_SAVE_MAX_TOKENS, contextWindow),
      tools: [save.tool.spec],
      maxTokens: MEMORY_SAVE_MAX_TOKENS,
      signal,
    });
  } catch (thrown) {
    signal.throwIfAborted();
    return { ...none, outcome: { error: toError(thrown).message } };
  }
  const calls = reply.content.filter(
    (block): block is ToolUseBlock =>
      block.type === "tool_use" && block.name === save.tool.spec.name,
  );
  const marker: MemorySaveBlock = { type: "memory_save", calls };
  const call = { model, jobId: options.jobId };
  await history.append(
    sessionId,
    { role: "assistant", content: [marker] },
    { usage: reply.usage, call },
  );
  return { stored: true, usage: reply.usage, outcome: await runSaves(calls, save) };
}

/** The memory save marker stored since the context's last compaction point, if any. */
function storedSave(context: readonly ChatMessage[]): MemorySaveBlock | undefined {
  const point = context.findLastIndex(isCompaction);
  for (const message of context.slice(point + 1).reverse()) {
    const block = message.content.find((candidate) => candidate.type === "memory_save");
    if (block?.type === "memory_save") return block;
  }
  return undefined;
}

/** Runs the saved `memory` calls (each writes at most once); their answers go nowhere. */
async function runSaves(
  calls: ToolUseBlock[],
  save: MemorySaveOptions,
): Promise<{ calls: number }> {
  await runToolCalls([save.tool], calls, save.context);
  save.context.signal.throwIfAborted();
  return { calls: calls.length };
}
