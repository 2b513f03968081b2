/**
 * Cutting a session's history into the context of the next model call. Both history
 * adapters use these pure functions, so they cut at exactly the same places.
 *
 * A context may only start at a **turn start**: a `user` message that holds no
 * `tool_result` block. Starting anywhere else would send a `tool_result` without its
 * `tool_use` (or begin with an assistant message), which the Messages API refuses.
 */

import { isCompaction, isTurnStart } from "../base/turns.js";
import type { ChatMessage } from "../ports/index.js";

export { isCompaction, isTurnStart };

/**
 * Whether a tail read from storage is enough for {@link cutContext}: it is once it holds
 * a turn start. Adapters read the last `maxMessages` messages of a session, then older
 * pages while this is false and older messages remain (a turn longer than the page).
 */
export function hasTurnStart(tail: readonly ChatMessage[]): boolean {
  return tail.some(isTurnStart);
}

/**
 * The context for the next model call, from the tail of a session (oldest first): the
 * longest suffix of at most `maxMessages` messages that starts at a turn start, and not
 * before the last compaction point and the messages it keeps (stored order is kept: the
 * context builder sends the point's summary first). When the
 * latest turn alone is longer than `maxMessages`, that whole turn. A tail without any
 * turn start yields `[]`, since no valid context can be built from it.
 */
export function cutContext(tail: readonly ChatMessage[], maxMessages: number): ChatMessage[] {
  if (!Number.isInteger(maxMessages) || maxMessages < 1) {
    throw new RangeError(`maxMessages must be a positive integer, got ${maxMessages}`);
  }
  // Nothing before the last compaction is sent again but the turns it keeps: its summary
  // stands in for the rest.
  const compaction = tail.findLastIndex(isCompaction);
  const kept = compaction === -1 ? 0 : keptBefore(tail[compaction] as ChatMessage);
  const earliestAllowed = Math.max(0, tail.length - maxMessages, compaction - kept);
  for (let index = earliestAllowed; index < tail.length; index++) {
    if (isTurnStart(tail[index] as ChatMessage)) return tail.slice(index);
  }
  const latestTurnStart = findLastTurnStart(tail, earliestAllowed - 1);
  return latestTurnStart === -1 ? [] : tail.slice(latestTurnStart);
}

/** Messages a compaction point keeps verbatim before it (`CompactionBlock.keeps`). */
function keptBefore(point: ChatMessage): number {
  const block = point.content.find((candidate) => candidate.type === "compaction");
  return block?.type === "compaction" ? (block.keeps ?? 0) : 0;
}

/** Index of the last turn start at or before `fromIndex`, or -1. */
function findLastTurnStart(tail: readonly ChatMessage[], fromIndex: number): number {
  for (let index = fromIndex; index >= 0; index--) {
    if (isTurnStart(tail[index] as ChatMessage)) return index;
  }
  return -1;
}
