/**
 * The UsageLedger port: every model call's tokens, recorded by the history store in the
 * same transaction as the message the call produced (see `AppendOptions.usage`), so a
 * crash never loses a call nor counts one twice.
 */
import type { TokenUsage } from "./messages.js";

/** One model call in the ledger. Times are epoch milliseconds. */
export interface UsageRecord extends TokenUsage {
  at: number;
  agentId: string;
  sessionId: string;
  sessionKey: string;
  /** The job that made the call, or null (a terminal chat, a compaction outside a job). */
  jobId: string | null;
  model: string;
  /** Sent through the Message Batches API, at the batch price. */
  batch: boolean;
}

/** Which calls {@link UsageLedger.calls} returns. */
export interface UsageQuery {
  /** Calls at or after this time. */
  since: number;
  /** Calls before this time. (Default: no end) */
  until?: number;
  /** Only this session's calls. (Default: every session) */
  sessionId?: string;
}

/** The model calls a workspace made, read back for reports and budgets. */
export interface UsageLedger {
  /** The calls the query selects, oldest first. */
  calls(query: UsageQuery): Promise<UsageRecord[]>;
}

/** A budget that is reached now, as a heartbeat that stops at it tells the owner. */
export interface ReachedBudget {
  /** `the workspace spent $0.0500 of its $0.0500 daily budget`. */
  summary: string;
  /** When its period started and when the next starts (epoch ms). */
  periodStart: number;
  resetsAt: number;
}
