/**
 * AgentWorker: claims jobs and runs them, at most `concurrency` at once (p-queue), one
 * at a time per session (the queue's claim guarantees it).
 *
 * A job's life here:
 *   claimed ─► session resolved ─► checkpoint (user message in history, message ".")
 *           ─► agent turn (resumes from history) ─► reply finished ─► complete
 *   a call must wait (subagent, approval, snooze) ─► parked: waiting, no worker held;
 *               woken (or at its deadline) it is claimed again and resumes the turn
 *   a tool ended the job ─► cancel: failed with its message; discard: done, nothing sent
 *   stop asked while it was not running ─► its next claim ends it as stopped
 *   any failure ─► transient: requeued with backoff (until max_attempts, then failed)
 *               └► permanent: failed at once; the person is told either way.
 *   ended as stopped ─► its subagent jobs are stopped too.
 *
 * Starting: jobs this worker's id left running are requeued, and parked jobs whose wait
 * ended while no process watched are woken.
 * Stopping (the run signal aborts): no new claims; running jobs finish within their
 * own `job_timeout_s`; `run` resolves when the pool is idle.
 */
import PQueue from "p-queue";
import { type BatchJob, LostBatchLock } from "../agents/batch-provider.js";
import { describeCompaction } from "../agents/compaction.js";
import { formatContextUsage } from "../agents/context-budget.js";
import { closingMessages, type TurnEnding } from "../agents/context-builder.js";
import type { AgentRunner } from "../agents/runner.js";
import { nextAttemptAt, retryDelayMs } from "../base/backoff.js";
import { deadline } from "../base/deadline.js";
import {
  BudgetExceeded,
  CancelledError,
  describeWait,
  isRetryable,
  JobEnded,
  ModelError,
  ParkRequest,
  PicklebotError,
  StorageUnavailableError,
  TimeoutError,
  toError,
} from "../base/errors.js";
import type { Logger } from "../base/log.js";
import { checkNumberOptions } from "../base/options.js";
import { Wakeup } from "../base/wakeup.js";
import { JobEventPublisher } from "../events/job-events.js";
import type { FrontendRegistry } from "../frontends/registry.js";
import type {
  Checkpoint,
  ClaimedJob,
  Clock,
  EventSink,
  FailJob,
  HistoryStore,
  JobAdmin,
  JobOutcome,
  JobQueue,
  JobWait,
  ReplyStream,
  Session,
  Worker,
} from "../ports/index.js";
import { noEvents } from "../ports/index.js";
import type { ServerMetrics } from "./metrics.js";

/** Logged (with a `recovered` count) when jobs a dead process left running are requeued. */
export const JOBS_RECOVERED = "requeued jobs left running by the previous server";

/** Logged (with a `woken` count) when parked jobs whose wait had ended are woken at start. */
export const PARKED_JOBS_WOKEN = "woke parked jobs whose wait ended while no server watched";

/** Parked jobs looked at once, at start, for a wait that ended unseen. */
const PARKED_SWEEP_LIMIT = 10_000;

/** What an AgentWorker needs. */
export interface AgentWorkerOptions {
  /** Written to `lockedBy` of claimed jobs; crash recovery requeues by it. */
  workerId: string;
  /** The queue; its admin side finds a job's subagent jobs and stops them. */
  queue: JobQueue & Pick<JobAdmin, "get" | "list" | "requestStop">;
  history: HistoryStore;
  checkpoint: Checkpoint;
  /** Ends a job for good, closing its session's unfinished turn in the same transaction. */
  failJob: FailJob;
  runner: AgentRunner;
  frontends: FrontendRegistry;
  /** Jobs run at once (`workers.agent_concurrency`). */
  concurrency: number;
  /** Time one attempt may take (`workers.job_timeout_s`). */
  jobTimeoutMs: number;
  /**
   * How long a job rides out an unavailable service (network, 429, 5xx, 529, a dropped
   * database) without those failures counting against its attempts
   * (`workers.outage_budget_s`). (Default: 300 000 ms)
   */
  outageBudgetMs?: number;
  clock: Clock;
  logger: Logger;
  metrics: ServerMetrics;
  /** Claim only jobs of these agents. (Default: any agent) */
  agentIds?: string[];
  /** Backstop poll, in case a wake-up notification is lost. (Default: 1000 ms) */
  pollMs?: number;
  /**
   * Aborts the running job of a session key wherever it runs (a subagent job of a job
   * that was stopped). (Default: this worker's {@link AgentWorker.stopSession})
   */
  stopRunning?: (sessionKey: string) => Promise<boolean>;
  /**
   * True when what a parked job waits for (besides its subagents) has already happened:
   * checked once it is parked, since the answer may have come before. (Default: never)
   */
  waitSettled?: (wait: JobWait) => Promise<boolean>;
  /** Where job, model-call and tool-call events go (`GET /events`). (Default: nowhere) */
  events?: EventSink;
  /**
   * What a job whose budget is used up does: `park` until the period resets, or `refuse`
   * (fail, saying why). (Default: park; `budget.on_exceeded`)
   */
  onBudgetExceeded?: "park" | "refuse";
}

/** A job this worker is running, and how to stop it. */
interface ActiveJob {
  job: ClaimedJob;
  stop: AbortController;
  /** The job's session, once known: where its turn is closed if it ends unfinished. */
  sessionId: string | null;
}

/** Runs agent jobs from the queue. */
export class AgentWorker implements Worker {
  readonly name = "agent";
  readonly #options: AgentWorkerOptions;
  readonly #active = new Map<string, ActiveJob>();
  readonly #publish: JobEventPublisher;

  constructor(options: AgentWorkerOptions) {
    checkNumberOptions("AgentWorker", options, {
      concurrency: "count",
      jobTimeoutMs: "positive",
      outageBudgetMs: "non-negative",
      pollMs: "positive",
    });
    this.#options = options;
    this.#publish = new JobEventPublisher(options.events ?? noEvents);
  }

  /** Jobs running now. */
  get running(): ClaimedJob[] {
    return [...this.#active.values()].map((active) => active.job);
  }

  /** Aborts the running job of a session key (`/stop`); false when none runs here. */
  stopSession(sessionKey: string): boolean {
    for (const active of this.#active.values()) {
      if (active.job.sessionKey !== sessionKey) continue;
      active.stop.abort(new CancelledError("stopped by the user"));
      return true;
    }
    return false;
  }

  async run(signal: AbortSignal): Promise<void> {
    const { queue, concurrency, workerId, agentIds, pollMs = 1000, logger } = this.#options;
    // Jobs still marked running under our id belong to a previous run that died (the
    // process, or this worker: a restarted worker has finished all of its own jobs).
    const recovered = await queue.recover(workerId);
    if (recovered > 0) logger.info({ recovered }, JOBS_RECOVERED);
    const woken = await this.#wakeSettled();
    if (woken > 0) logger.info({ woken }, PARKED_JOBS_WOKEN);
    const pool = new PQueue({ concurrency });
    const wakeup = new Wakeup();
    const unsubscribe = queue.onRunnable(() => wakeup.notify());
    signal.addEventListener("abort", () => wakeup.notify(), { once: true });
    let fatal: unknown = null;
    try {
      while (!signal.aborted && fatal === null) {
        const free = concurrency - pool.pending - pool.size;
        const jobs = free > 0 ? await queue.claim(workerId, free, { agentIds }) : [];
        for (const job of jobs) {
          pool
            .add(() => this.#process(job))
            .catch((error: unknown) => {
              fatal ??= error;
            })
            .finally(() => wakeup.notify());
        }
        if (jobs.length === 0 || jobs.length < free) await wakeup.wait(pollMs);
      }
    } finally {
      unsubscribe();
      await pool.onIdle();
    }
    // The outcome of a job could not be written (e.g. the database stayed busy): crash, so
    // the supervisor restarts this worker, which requeues the job.
    if (fatal !== null) throw fatal;
  }

  async #process(job: ClaimedJob): Promise<void> {
    const { clock, metrics, jobTimeoutMs } = this.#options;
    const started = clock.now();
    const stop = new AbortController();
    this.#active.set(job.id, { job, stop, sessionId: job.sessionId });
    metrics.jobsInFlight.inc();
    const { signal, clear } = deadline(stop.signal, jobTimeoutMs);
    if (job.stopRequested) stop.abort(new CancelledError("stopped by the user"));
    let outcome: JobOutcome;
    let reply: ReplyStream | null = null;
    let error: string | undefined;
    this.#publish.job("job.started", job);
    try {
      reply = this.#options.frontends.openReply(job.replyTo, { jobId: job.id });
      outcome = await this.#runJob(job, reply, signal);
    } catch (thrown) {
      error = toError(signal.aborted ? signal.reason : thrown).message;
      outcome = await this.#handleFailure(job, reply, signal, thrown);
    } finally {
      clear();
      this.#active.delete(job.id);
      metrics.jobsInFlight.dec();
    }
    const durationS = (clock.now() - started) / 1000;
    metrics.jobDuration.observe(durationS);
    metrics.jobsProcessed.inc({ outcome });
    this.#publish.outcome(job, outcome, error);
    this.#options.logger.info(
      {
        job: job.id,
        session: job.sessionKey,
        agent: job.agentId,
        attempts: job.attempts,
        durationMs: Math.round(durationS * 1000),
        outcome,
      },
      `job ${outcome}`,
    );
  }

  async #runJob(job: ClaimedJob, reply: ReplyStream, signal: AbortSignal): Promise<JobOutcome> {
    const { queue, checkpoint, runner, metrics } = this.#options;
    if (job.attempts > job.maxAttempts) {
      // Requeued by crash recovery after its last attempt: a job that kills the process
      // every time must not be retried forever.
      throw new PicklebotError(
        `interrupted ${job.attempts - 1} times; ${job.lastError ?? "no error recorded"}`,
      );
    }
    // A job stopped before it began has no turn to close: no session is made for it.
    if (!job.checkpointed) signal.throwIfAborted();
    reply.typing();
    const session = await this.#sessionFor(job);
    if (job.task === "compact") return this.#compactNow(job, session.id, reply, signal);
    const active = this.#active.get(job.id);
    if (active) active.sessionId = session.id;
    signal.throwIfAborted();
    if (!job.checkpointed) {
      await this.#compactFirst(job, session.id, signal);
      const message = {
        role: "user" as const,
        content: [{ type: "text" as const, text: job.message }],
      };
      if (!(await checkpoint(job, session.id, message))) return "interrupted";
      this.#publish.job("job.checkpointed", job);
    }
    let streamed = "";
    const result = await runner.run({
      agentId: job.agentId,
      sessionId: session.id,
      sessionKey: job.sessionKey,
      signal,
      jobId: job.id,
      replyTo: job.replyTo,
      finishedResults: job.toolResults,
      ...(job.batch ? { batch: this.#batchJob(job) } : {}),
      events: {
        onModelCall: (model) => {
          streamed = "";
          reply.typing();
          this.#publish.call({ type: "model.started", model }, job, session.id);
        },
        onModelReply: (model, usage) =>
          this.#publish.call({ type: "model.ended", model, usage }, job, session.id),
        onText: (delta) => {
          streamed += delta;
          reply.update(streamed);
        },
        onToolCall: (call, summary) => {
          reply.toolCall(call.name, summary);
          const started = { type: "tool.started", tool: call.name, callId: call.id } as const;
          this.#publish.call(started, job, session.id);
        },
        onToolResult: (call, isError) => {
          const ended = { type: "tool.ended", tool: call.name, callId: call.id, isError } as const;
          this.#publish.call(ended, job, session.id);
        },
      },
    });
    metrics.countTokens({ agentId: job.agentId, model: result.model, usage: result.usage });
    await reply.finish(result.text);
    if (!(await queue.complete(job))) {
      this.#options.logger.warn({ job: job.id }, "job finished after its lock was lost");
    }
    return "done";
  }

  /** What a batch job's turn needs of the queue: its step, stored fenced. */
  #batchJob(job: ClaimedJob): BatchJob {
    const { queue } = this.#options;
    return {
      jobId: job.id,
      step: job.batchStep,
      record: async (step) => {
        if (!(await queue.recordBatchStep(job, step))) throw new LostBatchLock(job.id);
      },
      othersBatchIds: async () => {
        const ids = new Set<string>();
        for (const state of ["waiting", "running", "queued"] as const) {
          for (const other of await queue.list({ state, limit: PARKED_SWEEP_LIMIT })) {
            if (other.id !== job.id && other.batchStep?.batchId) ids.add(other.batchStep.batchId);
          }
        }
        return ids;
      },
    };
  }

  /**
   * Compacts the session before the job's message joins it, when it has grown past
   * COMPACT_BEFORE of the window. A summary that fails is logged and the turn goes on:
   * its requests still fit, the oldest turns left out with a note.
   */
  async #compactFirst(job: ClaimedJob, sessionId: string, signal: AbortSignal): Promise<void> {
    const { runner, metrics, logger } = this.#options;
    try {
      const request = { agentId: job.agentId, sessionId, signal, jobId: job.id };
      const compacted = await runner.compact(request);
      if (!compacted) return;
      metrics.countTokens({ agentId: job.agentId, ...compacted });
      logger.info(
        { job: job.id, session: sessionId, ...compacted, usage: undefined },
        "session compacted",
      );
    } catch (thrown) {
      if (signal.aborted) throw thrown;
      logger.warn(
        { job: job.id, session: sessionId, error: toError(thrown).message },
        "could not compact the session; its oldest turns are left out of requests instead",
      );
    }
  }

  /** `/compact`: summarises the session now, and says what it did. */
  async #compactNow(
    job: ClaimedJob,
    sessionId: string,
    reply: ReplyStream,
    signal: AbortSignal,
  ): Promise<JobOutcome> {
    const { runner, queue, metrics } = this.#options;
    const request = { agentId: job.agentId, sessionId, signal, jobId: job.id };
    const compacted = await runner.compact(request, { force: true });
    if (compacted) metrics.countTokens({ agentId: job.agentId, ...compacted });
    const usage = formatContextUsage(await runner.contextUsage(job.agentId, sessionId));
    await reply.finish(
      compacted
        ? `Compacted: ${describeCompaction(compacted)}.`
        : `Nothing to compact yet; ${usage}.`,
    );
    await queue.complete(job);
    return "done";
  }

  /**
   * The job's session: the checkpointed one; for a chat, the key's newest session of the
   * job's agent (its current one, or, for a message queued before `/agent` switched the
   * chat, the one it was sent to, so the switch stays current); else a new one.
   */
  async #sessionFor(job: ClaimedJob): Promise<Session> {
    const { history } = this.#options;
    if (job.sessionId) {
      const session = await history.getSession(job.sessionId);
      if (session) return session;
      throw new PicklebotError(`session ${job.sessionId} of job ${job.id} is missing from history`);
    }
    if (job.mode === "chat") {
      const recent = await history.listSessions({ key: job.sessionKey, limit: 2 });
      const same = recent.find((session) => session.agentId === job.agentId);
      if (same) return same;
    }
    return history.createSession({ key: job.sessionKey, agentId: job.agentId });
  }

  async #handleFailure(
    job: ClaimedJob,
    reply: ReplyStream | null,
    signal: AbortSignal,
    thrown: unknown,
  ): Promise<JobOutcome> {
    const { queue, clock, logger } = this.#options;
    if (!signal.aborted && thrown instanceof ParkRequest) return this.#park(job, reply, thrown);
    if (
      !signal.aborted &&
      thrown instanceof BudgetExceeded &&
      this.#options.onBudgetExceeded !== "refuse"
    ) {
      const wait = { kind: "time" as const };
      return this.#park(job, reply, new ParkRequest(wait, thrown.resetsAt));
    }
    if (!signal.aborted && thrown instanceof JobEnded && thrown.ending.outcome === "discard") {
      return this.#discard(job, reply, thrown.ending.message);
    }
    const error = signal.aborted ? toError(signal.reason) : toError(thrown);
    // The job's signal aborts only with our own errors: its deadline's or /stop's.
    const timedOut = signal.aborted && error instanceof TimeoutError;
    const stoppedByUser = signal.aborted && error instanceof CancelledError;
    const retryAfterMs =
      error instanceof ModelError && error.retryAfterS ? error.retryAfterS * 1000 : 0;
    const retryAt =
      !stoppedByUser && (timedOut || isRetryable(error))
        ? nextAttemptAt(job, clock.now(), { retryAfterMs })
        : null;
    const message = timedOut
      ? `timed out after ${this.#options.jobTimeoutMs / 1000} s`
      : error.message;
    if (!signal.aborted && isOutage(error) && this.#withinOutageBudget(job)) {
      return this.#rideOutOutage(job, reply, message, retryAfterMs);
    }
    if (retryAt !== null) {
      await queue.fail(job, message, retryAt);
      logger.warn(
        { job: job.id, attempt: job.attempts, retryAt, error: message },
        "job will be retried",
      );
      return "retry";
    }
    const ending = stoppedByUser ? "stopped by the user" : timedOut ? "timed out" : "interrupted";
    await this.#failForGood(job, message, ending);
    if (stoppedByUser) await this.#stopSubagents(job);
    const why = stoppedByUser ? "Stopped." : failureNotice(job, message);
    // No reply stream means its frontend failed to open: there is nowhere to tell.
    await reply
      ?.fail(why)
      .catch((failure) =>
        logger.warn({ job: job.id, error: toError(failure).message }, "could not report a failure"),
      );
    return "failed";
  }

  /**
   * Parks the job until what its calls wait for happens (or their deadline), keeping
   * the results of the calls that finished. A wait that was settled while the job ran
   * (a subagent ended, the owner answered) wakes it again at once.
   */
  async #park(job: ClaimedJob, reply: ReplyStream | null, park: ParkRequest): Promise<JobOutcome> {
    const { queue, logger } = this.#options;
    reply?.close();
    const parked = await queue.park(job, {
      wait: park.wait,
      until: park.until,
      toolResults: park.finished,
    });
    if (!parked) {
      logger.warn({ job: job.id }, "job parked after its lock was lost");
      return "interrupted";
    }
    this.#publish.job("job.parked", job, {
      waitingFor: park.wait.kind === "children" ? "subagents" : park.wait.kind,
    });
    if (await this.#settled(park.wait)) await queue.wake(job.id);
    logger.info(
      { job: job.id, waitingFor: park.wait, until: new Date(park.until).toISOString() },
      `job waiting for ${describeWait(park.wait)}`,
    );
    return "parked";
  }

  /**
   * Wakes the parked jobs whose wait has already ended. A child that ends while its parent
   * still runs wakes nothing (the parent is not waiting yet); the parent sees it once
   * parked (#park). A process that died between the two left the parent parked until its
   * deadline (`subagent_timeout_s`), with nothing left to wake it.
   */
  async #wakeSettled(): Promise<number> {
    const { queue } = this.#options;
    let woken = 0;
    for (const job of await queue.list({ state: "waiting", limit: PARKED_SWEEP_LIMIT })) {
      if (job.waitingFor && (await this.#settled(job.waitingFor)) && (await queue.wake(job.id))) {
        woken += 1;
      }
    }
    return woken;
  }

  /** True when what `wait` names has already happened. */
  async #settled(wait: JobWait): Promise<boolean> {
    if (wait.kind !== "children") return (await this.#options.waitSettled?.(wait)) ?? false;
    for (const id of wait.jobIds) {
      const child = await this.#options.queue.get(id);
      if (!child || child.state === "done" || child.state === "failed") return true;
    }
    return false;
  }

  /** A tool discarded the job: it is done, and nothing is sent. */
  async #discard(job: ClaimedJob, reply: ReplyStream | null, why: string): Promise<JobOutcome> {
    reply?.close();
    if (!(await this.#options.queue.complete(job))) {
      this.#options.logger.warn({ job: job.id }, "job finished after its lock was lost");
    }
    this.#options.logger.info({ job: job.id, reason: why }, "job discarded by a tool");
    return "discarded";
  }

  /**
   * Stops the subagent jobs of a job that was stopped: queued and waiting ones at their
   * next claim, running ones now (they, in turn, stop theirs).
   */
  async #stopSubagents(job: ClaimedJob): Promise<void> {
    const { queue, logger } = this.#options;
    const stopRunning = this.#options.stopRunning ?? (async (key: string) => this.stopSession(key));
    for (const child of await queue.list({ parentId: job.id, limit: 1000 })) {
      if (child.state === "running") await stopRunning(child.sessionKey);
      else if (child.state === "queued" || child.state === "waiting") {
        await queue.requestStop(child.id);
      }
    }
    logger.debug({ job: job.id }, "stopped the job's subagents");
  }

  /** True while the job's current run of outage failures is younger than the budget. */
  #withinOutageBudget(job: ClaimedJob): boolean {
    const { clock, outageBudgetMs = DEFAULT_OUTAGE_BUDGET_MS } = this.#options;
    const since = outageFailures(job)[0]?.at ?? clock.now();
    return clock.now() - since < outageBudgetMs;
  }

  /**
   * Requeues a job the service failed (not the job): the attempt is given back, the wait
   * grows with the outage, and the person sees one notice that we keep trying, which the
   * answer replaces when it comes.
   */
  async #rideOutOutage(
    job: ClaimedJob,
    reply: ReplyStream | null,
    message: string,
    retryAfterMs: number,
  ): Promise<JobOutcome> {
    const { queue, clock, logger } = this.#options;
    const failures = outageFailures(job).length;
    const retryAt = clock.now() + retryDelayMs(failures + 1, { retryAfterMs });
    await queue.fail(job, message, retryAt, { transient: true });
    if (failures === 0) reply?.update(STILL_TRYING);
    logger.warn(
      { job: job.id, outageFailures: failures + 1, retryAt, error: message },
      "service unavailable; the job will be retried",
    );
    return "retry";
  }

  /**
   * Fails the job for good and, in the same transaction, answers the tool calls its turn
   * left open, so the session's next message is a valid request and the model sees why
   * the calls have no results.
   */
  async #failForGood(job: ClaimedJob, error: string, ending: TurnEnding): Promise<void> {
    const { history, failJob, logger } = this.#options;
    const sessionId = this.#active.get(job.id)?.sessionId ?? null;
    const last = sessionId ? (await history.loadContext(sessionId, 1)).at(-1) : undefined;
    const messages = closingMessages(last, ending);
    const closing = sessionId && messages.length > 0 ? { sessionId, messages } : null;
    if (!(await failJob(job, error, closing))) {
      logger.warn({ job: job.id }, "job failed after its lock was lost");
    }
  }
}

/** Shown once in the chat while a job waits out an outage; the answer replaces it. */
export const STILL_TRYING =
  "The model service is not answering right now; I keep trying and will answer here when it is back.";

const DEFAULT_OUTAGE_BUDGET_MS = 300_000;

/** A failure of the service, not of the job: the model API or the database unavailable. */
function isOutage(error: Error): boolean {
  const service = error instanceof ModelError || error instanceof StorageUnavailableError;
  return service && error.retryable;
}

/**
 * The failures of the job's current run of outages: those recorded at its current attempt
 * (an outage gives its attempt back, so they all carry the same number).
 */
function outageFailures(job: ClaimedJob): ClaimedJob["errors"] {
  return job.errors.filter((failure) => failure.attempt === job.attempts);
}

function failureNotice(job: ClaimedJob, message: string): string {
  const attempts = job.attempts === 1 ? "" : ` after ${job.attempts} attempts`;
  return `Sorry, I could not finish this${attempts}: ${message}`;
}
