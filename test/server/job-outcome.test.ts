/**
 * The outcome policy of an agent job (server/job-outcome.ts), one row per branch: what
 * happened in the attempt and the job's attempts and failures in, the decision out. No
 * queue, no timers: the clock is a number and the backoff's jitter is fixed (random 0.5
 * is no jitter, so the first retry waits 1 s, then 2 s, 4 s…).
 */
import { describe, expect, it } from "vitest";
import {
  BudgetExceeded,
  CancelledError,
  JobEnded,
  ModelError,
  ParkRequest,
  PicklebotError,
  StorageUnavailableError,
  TimeoutError,
  UserError,
} from "../../src/base/errors.js";
import {
  type Attempt,
  decideOutcome,
  type JobDecision,
  type OutcomeJob,
  type OutcomePolicy,
} from "../../src/server/job-outcome.js";

const NOW = 1_800_000_000_000;
const MINUTE = 60_000;
const policy: OutcomePolicy = { now: NOW, jobTimeoutMs: 300_000, random: () => 0.5 };

/** A job at its `attempts`th of 3, with `errors` recorded so far. */
function job(attempts = 1, errors: OutcomeJob["errors"] = []): OutcomeJob {
  return { attempts, maxAttempts: 3, errors };
}

const threw = (error: unknown): Attempt => ({ kind: "threw", error });
const stoppedWith = (stopReason: unknown, error: unknown = stopReason): Attempt => ({
  kind: "threw",
  error,
  stopReason,
});

const park = new ParkRequest({ kind: "children", jobIds: ["child"] }, NOW + MINUTE);
const overBudget = new BudgetExceeded("the daily budget of $1.00 is used up", NOW + 60 * MINUTE);
const discarded = new JobEnded({ type: "job_end", outcome: "discard", message: "nothing new" });
const cancelled = new JobEnded({ type: "job_end", outcome: "cancel", message: "not today" });
const overloaded = new ModelError("overloaded (529)", { retryable: true, status: 529 });
const limited = new ModelError("rate limited", { retryable: true, status: 429, retryAfterS: 30 });
const badRequest = new ModelError("bad request (400)", { retryable: false, status: 400 });
/** What the SQLite driver throws for a busy database (src/storage/sqlite/unavailable.ts). */
const busyDatabase = new StorageUnavailableError("database is locked", {
  context: { backend: "sqlite", code: "SQLITE_BUSY" },
});
const stop = new CancelledError("stopped by the user");
const deadline = new TimeoutError("the job ran out of time");
/** Two outage failures recorded at attempt 1, the first `ago` ms before now. */
const outageSince = (ago: number) => [
  { attempt: 1, at: NOW - ago, message: "overloaded (529)" },
  { attempt: 1, at: NOW - ago / 2, message: "overloaded (529)" },
];

const fail = (error: string, notice: string): JobDecision => ({
  kind: "fail",
  error,
  ending: "interrupted",
  notice,
});
const stopped: JobDecision = { kind: "stop", error: "stopped by the user", notice: "Stopped." };

interface Row {
  what: string;
  attempt: Attempt;
  job?: OutcomeJob;
  policy?: Partial<OutcomePolicy>;
  decision: JobDecision;
}

const rows: Row[] = [
  { what: "answered: complete", attempt: { kind: "answered" }, decision: { kind: "complete" } },
  {
    what: "the lock was lost before the checkpoint: let go",
    attempt: { kind: "lost" },
    decision: { kind: "let-go" },
  },
  {
    what: "a call must wait: park as asked",
    attempt: threw(park),
    decision: { kind: "park", park },
  },
  {
    what: "the budget is used up: park until it resets",
    attempt: threw(overBudget),
    decision: { kind: "park", park: new ParkRequest({ kind: "time" }, NOW + 60 * MINUTE) },
  },
  {
    what: "the budget is used up and on_exceeded is refuse: fail, saying why",
    attempt: threw(overBudget),
    policy: { onBudgetExceeded: "refuse" },
    decision: fail(overBudget.message, `Sorry, I could not finish this: ${overBudget.message}`),
  },
  {
    what: "a tool discarded the job: discard",
    attempt: threw(discarded),
    decision: { kind: "discard", reason: "nothing new" },
  },
  {
    what: "a tool cancelled the job: fail with its message, not retried",
    attempt: threw(cancelled),
    decision: fail("not today", "Sorry, I could not finish this: not today"),
  },
  {
    what: "a failure with a chat notice: the person gets the notice, the job the message",
    attempt: threw(
      new UserError("agent broken: /srv/ws/agents/pickle/AGENT.md: description: missing", {
        chatNotice: "agent is broken; ask the owner",
      }),
    ),
    decision: fail(
      "agent broken: /srv/ws/agents/pickle/AGENT.md: description: missing",
      "Sorry, I could not finish this: agent is broken; ask the owner",
    ),
  },
  {
    what: "the model is overloaded: ride it out, the person told (first failure)",
    attempt: threw(overloaded),
    decision: {
      kind: "ride-out",
      error: overloaded.message,
      retryAt: NOW + 1000,
      outageFailures: 0,
    },
  },
  {
    what: "the outage goes on within the budget: ride it out, waiting longer, told once",
    attempt: threw(overloaded),
    job: job(1, outageSince(2 * MINUTE)),
    decision: {
      kind: "ride-out",
      error: overloaded.message,
      retryAt: NOW + 4000,
      outageFailures: 2,
    },
  },
  {
    what: "a 429's retry-after wins over the backoff",
    attempt: threw(limited),
    decision: {
      kind: "ride-out",
      error: limited.message,
      retryAt: NOW + 30_000,
      outageFailures: 0,
    },
  },
  {
    what: "the database is busy: ride it out like a model outage",
    attempt: threw(busyDatabase),
    decision: {
      kind: "ride-out",
      error: "database is locked",
      retryAt: NOW + 1000,
      outageFailures: 0,
    },
  },
  {
    what: "an outage past outage_budget_s: an ordinary retry, the attempt counted",
    attempt: threw(overloaded),
    job: job(1, outageSince(6 * MINUTE)),
    decision: { kind: "retry", error: overloaded.message, retryAt: NOW + 1000 },
  },
  {
    what: "an outage exactly outage_budget_s old is over: an ordinary retry",
    attempt: threw(overloaded),
    job: job(1, [{ attempt: 1, at: NOW - 10_000, message: "overloaded (529)" }]),
    policy: { outageBudgetMs: 10_000 },
    decision: { kind: "retry", error: overloaded.message, retryAt: NOW + 1000 },
  },
  {
    what: "an outage_budget_s of 0: no outage is ridden out",
    attempt: threw(overloaded),
    policy: { outageBudgetMs: 0 },
    decision: { kind: "retry", error: overloaded.message, retryAt: NOW + 1000 },
  },
  {
    what: "an outage past a shorter outage_budget_s",
    attempt: threw(overloaded),
    job: job(2, [{ attempt: 2, at: NOW - 20_000, message: "overloaded (529)" }]),
    policy: { outageBudgetMs: 10_000 },
    decision: { kind: "retry", error: overloaded.message, retryAt: NOW + 2000 },
  },
  {
    what: "an outage past its budget at the last attempt: fail, told after how many",
    attempt: threw(overloaded),
    job: job(3, [{ attempt: 3, at: NOW - 6 * MINUTE, message: "overloaded (529)" }]),
    decision: fail(
      overloaded.message,
      "Sorry, I could not finish this after 3 attempts: overloaded (529)",
    ),
  },
  {
    what: "a retryable failure (not the service's) with attempts left: retry with backoff",
    attempt: threw(new Error("socket hang up in a tool")),
    job: job(2),
    decision: { kind: "retry", error: "socket hang up in a tool", retryAt: NOW + 2000 },
  },
  {
    what: "anything thrown that is not an Error counts as a retryable failure",
    attempt: threw("a string"),
    decision: { kind: "retry", error: "a string", retryAt: NOW + 1000 },
  },
  {
    what: "a retryable failure at the last attempt: fail",
    attempt: threw(new Error("socket hang up in a tool")),
    job: job(3),
    decision: fail(
      "socket hang up in a tool",
      "Sorry, I could not finish this after 3 attempts: socket hang up in a tool",
    ),
  },
  {
    what: "a permanent failure (a 400): fail at once",
    attempt: threw(badRequest),
    decision: fail(badRequest.message, "Sorry, I could not finish this: bad request (400)"),
  },
  {
    what: "a permanent failure of ours: fail at once",
    attempt: threw(new PicklebotError("no agent named nope")),
    job: job(2),
    decision: fail(
      "no agent named nope",
      "Sorry, I could not finish this after 2 attempts: no agent named nope",
    ),
  },
  {
    what: "timed out with attempts left: retry, naming job_timeout_s",
    attempt: stoppedWith(deadline, new Error("aborted")),
    decision: { kind: "retry", error: "timed out after 300 s", retryAt: NOW + 1000 },
  },
  {
    what: "timed out at the last attempt: fail, the turn closed as timed out",
    attempt: stoppedWith(deadline),
    job: job(3),
    decision: {
      kind: "fail",
      error: "timed out after 300 s",
      ending: "timed out",
      notice: "Sorry, I could not finish this after 3 attempts: timed out after 300 s",
    },
  },
  {
    what: "stopped by the user: stop at once (not failed), say Stopped., stop its subagents",
    attempt: stoppedWith(stop),
    decision: stopped,
  },
  {
    what: "stopped while a call asked to wait: stopped, not parked",
    attempt: stoppedWith(stop, park),
    decision: stopped,
  },
  {
    what: "stopped while the budget was used up: stopped, not parked",
    attempt: stoppedWith(stop, overBudget),
    decision: stopped,
  },
  {
    what: "stopped while a tool discarded the job: stopped, not discarded",
    attempt: stoppedWith(stop, discarded),
    decision: stopped,
  },
  {
    what: "stopped during an outage: stopped, not ridden out",
    attempt: stoppedWith(stop, overloaded),
    decision: stopped,
  },
  {
    what: "stopped with another reason: the reason's failure, the turn closed as interrupted",
    attempt: stoppedWith(new PicklebotError("worker shutting down"), overloaded),
    decision: fail("worker shutting down", "Sorry, I could not finish this: worker shutting down"),
  },
];

describe("decideOutcome", () => {
  it.each(rows)("$what", (row) => {
    const decided = decideOutcome(row.attempt, row.job ?? job(), { ...policy, ...row.policy });
    expect(decided).toEqual(row.decision);
  });

  it("spreads retries with jitter when no random source is given", () => {
    const retryAts = new Set(
      Array.from({ length: 20 }, () => {
        const decided = decideOutcome(threw(new Error("flaky")), job(), {
          now: NOW,
          jobTimeoutMs: 1,
        });
        return decided.kind === "retry" ? decided.retryAt : null;
      }),
    );
    expect(retryAts.has(null)).toBe(false);
    expect(retryAts.size).toBeGreaterThan(1);
    for (const at of retryAts) expect(at).toBeGreaterThanOrEqual(NOW + 800);
  });
});
