/**
 * The outcome policy of an agent job: what the AgentWorker does with a job once its
 * attempt is over, decided by one pure function ({@link decideOutcome}) from what happened,
 * the job (its attempts and recorded failures), the time and the worker's limits. The
 * worker applies the decision to the queue; nothing here touches a queue, a clock or a
 * chat, so every branch is a row in a table test.
 *
 *   answered                              ─► complete: done
 *   the lock was lost (checkpoint refused) ─► let go: another process owns the job
 *   threw, while not stopped:
 *     a call must wait (ParkRequest)       ─► park until it happens (or its deadline)
 *     the budget is used up                ─► park until the period resets
 *                                              (`budget.on_exceeded: refuse`: fail below)
 *     a tool discarded the job             ─► discard: done, nothing sent
 *     the service is down (model 429/5xx/529 or network, the database unavailable),
 *     for less than `outage_budget_s` so far ─► ride it out: requeued, the attempt given
 *                                              back, "still trying" said once
 *   stopped by the user (`/stop`, `jobs cancel`, the dashboard's Cancel)
 *                                          ─► stop: ends `stopped`, its turn closed where
 *                                              the person stopped it, "Stopped." said, its
 *                                              subagents stopped too
 *   a timeout, or any retryable failure
 *   with attempts left                     ─► retry with backoff (retry-after wins if longer)
 *   anything else (a permanent failure, attempts spent)
 *                                          ─► fail for good, closing the unfinished turn;
 *                                              the person is told
 */
import type { TurnEnding } from "../agents/context-builder.js";
import { turnEndingOf } from "../agents/turn.js";
import { nextAttemptAt, retryDelayMs } from "../base/backoff.js";
import {
  BudgetExceeded,
  CancelledError,
  isRetryable,
  JobEnded,
  ModelError,
  ParkRequest,
  PicklebotError,
  StorageUnavailableError,
  TimeoutError,
  toError,
} from "../base/errors.js";
import type { ClaimedJob } from "../ports/index.js";

/** How long a job rides out an outage by default (`workers.outage_budget_s`). */
export const DEFAULT_OUTAGE_BUDGET_MS = 300_000;

/** What happened in a job's attempt. */
export type Attempt =
  /** The agent answered and the reply was handed to the chat. */
  | { kind: "answered" }
  /** The job's lock was lost before its message joined the session: nothing ran. */
  | { kind: "lost" }
  /**
   * The attempt threw `error`. `stopReason` is the reason of the job's signal when it
   * aborted (only with our own errors: the deadline's TimeoutError, `/stop`'s
   * CancelledError), which then stands for what was thrown; absent when it did not abort.
   */
  | { kind: "threw"; error: unknown; stopReason?: unknown };

/** The job, as the policy sees it. */
export type OutcomeJob = Pick<ClaimedJob, "attempts" | "maxAttempts" | "errors">;

/** The worker's limits and the moment the decision is made. */
export interface OutcomePolicy {
  /** Epoch ms now. */
  now: number;
  /** Time one attempt may take (`workers.job_timeout_s`), named in a timeout's message. */
  jobTimeoutMs: number;
  /** How long a job rides out an outage (`workers.outage_budget_s`). (Default: 300 000 ms) */
  outageBudgetMs?: number;
  /** What a used-up budget does (`budget.on_exceeded`). (Default: park) */
  onBudgetExceeded?: "park" | "refuse";
  /** Source of the backoff's jitter, in [0, 1). (Default: Math.random) */
  random?: () => number;
}

/** What the worker does with the job. */
export type JobDecision =
  /** Mark the job done. */
  | { kind: "complete" }
  /** Leave the job alone: its lock belongs to another process now. */
  | { kind: "let-go" }
  /** Park the job until `park.wait` happens or `park.until`, keeping `park.finished`. */
  | { kind: "park"; park: ParkRequest }
  /** Mark the job done without a reply: a tool discarded it. */
  | { kind: "discard"; reason: string }
  /**
   * Requeue the job at `retryAt` without spending an attempt: the service failed, not the
   * job. `outageFailures` counts the outage's failures before this one (at 0 the person
   * is told, once, that we keep trying).
   */
  | { kind: "ride-out"; error: string; retryAt: number; outageFailures: number }
  /** Requeue the job at `retryAt`; the attempt counts. */
  | { kind: "retry"; error: string; retryAt: number }
  /** Fail the job for good, closing its unfinished turn with `ending`, and tell the person `notice`. */
  | { kind: "fail"; error: string; ending: TurnEnding; notice: string }
  /**
   * End the job as stopped by the person, closing its turn where they stopped it (see
   * `closingMessages`), stop its subagent jobs, and tell them `notice`.
   */
  | { kind: "stop"; error: string; notice: string };

/** What the person is told when their job stopped. */
export const STOPPED_NOTICE = "Stopped.";

/** Decides what becomes of a job after its attempt (see the file header). */
export function decideOutcome(
  attempt: Attempt,
  job: OutcomeJob,
  policy: OutcomePolicy,
): JobDecision {
  switch (attempt.kind) {
    case "answered":
      return { kind: "complete" };
    case "lost":
      return { kind: "let-go" };
    case "threw":
      return attempt.stopReason === undefined
        ? (decideRunning(attempt.error, job, policy) ?? decideFailure(attempt.error, job, policy))
        : decideFailure(attempt.stopReason, job, policy, true);
    default: {
      const never: never = attempt;
      throw new Error(`unknown attempt ${JSON.stringify(never)}`);
    }
  }
}

/** The ends that only a job not stopped can have: parked, discarded, an outage ridden out. */
function decideRunning(
  thrown: unknown,
  job: OutcomeJob,
  policy: OutcomePolicy,
): JobDecision | null {
  if (thrown instanceof ParkRequest) return { kind: "park", park: thrown };
  if (thrown instanceof BudgetExceeded && policy.onBudgetExceeded !== "refuse") {
    return { kind: "park", park: new ParkRequest({ kind: "time" }, thrown.resetsAt) };
  }
  if (thrown instanceof JobEnded && thrown.ending.outcome === "discard") {
    return { kind: "discard", reason: thrown.ending.message };
  }
  const error = toError(thrown);
  if (isOutage(error) && withinOutageBudget(job, policy)) {
    const outageFailures = outageFailuresOf(job).length;
    const retryAfterMs = retryAfterMsOf(error);
    const delay = retryDelayMs(outageFailures + 1, { retryAfterMs, ...random(policy) });
    return { kind: "ride-out", error: error.message, retryAt: policy.now + delay, outageFailures };
  }
  return null;
}

/** A failure: retried while attempts are left and a retry can help, else the end. */
function decideFailure(
  thrown: unknown,
  job: OutcomeJob,
  policy: OutcomePolicy,
  stopped = false,
): JobDecision {
  const error = toError(thrown);
  const timedOut = stopped && error instanceof TimeoutError;
  const stoppedByUser = stopped && error instanceof CancelledError;
  if (stoppedByUser) return { kind: "stop", error: error.message, notice: STOPPED_NOTICE };
  const message = timedOut ? `timed out after ${policy.jobTimeoutMs / 1000} s` : error.message;
  if (timedOut || isRetryable(error)) {
    const options = { retryAfterMs: retryAfterMsOf(error), ...random(policy) };
    const retryAt = nextAttemptAt(job, policy.now, options);
    if (retryAt !== null) return { kind: "retry", error: message, retryAt };
  }
  return {
    kind: "fail",
    error: message,
    ending: stopped ? turnEndingOf(error) : "interrupted",
    notice: failureNotice(job, chatNoticeOf(error) ?? message),
  };
}

/** A failure of the service, not of the job: the model API or the database unavailable. */
function isOutage(error: Error): boolean {
  const service = error instanceof ModelError || error instanceof StorageUnavailableError;
  return service && error.retryable;
}

/** True while the job's current run of outage failures is younger than the budget. */
function withinOutageBudget(job: OutcomeJob, policy: OutcomePolicy): boolean {
  const since = outageFailuresOf(job)[0]?.at ?? policy.now;
  return policy.now - since < (policy.outageBudgetMs ?? DEFAULT_OUTAGE_BUDGET_MS);
}

/**
 * The failures of the job's current run of outages: those recorded at its current attempt
 * (an outage gives its attempt back, so they all carry the same number).
 */
function outageFailuresOf(job: OutcomeJob): OutcomeJob["errors"] {
  return job.errors.filter((failure) => failure.attempt === job.attempts);
}

/** What the provider asked us to wait (retry-after), in ms; 0 when it did not say. */
function retryAfterMsOf(error: Error): number {
  return error instanceof ModelError && error.retryAfterS ? error.retryAfterS * 1000 : 0;
}

function random(policy: OutcomePolicy): { random?: () => number } {
  return policy.random ? { random: policy.random } : {};
}

/** What the person may be told of `error` instead of its message (see PicklebotError). */
function chatNoticeOf(error: Error): string | undefined {
  return error instanceof PicklebotError ? error.chatNotice : undefined;
}

function failureNotice(job: OutcomeJob, message: string): string {
  const attempts = job.attempts === 1 ? "" : ` after ${job.attempts} attempts`;
  return `Sorry, I could not finish this${attempts}: ${message}`;
}
