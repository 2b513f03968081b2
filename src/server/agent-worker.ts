/**
 * AgentWorker: claims jobs and runs them, at most `concurrency` at once (p-queue), one
 * at a time per session (the queue's claim guarantees it).
 *
 * A job's life here:
 *   claimed ─► one attempt (job-attempt.ts): session resolved, its turn driven
 *              (agents/turn.ts: compaction when needed, the user message checkpointed,
 *              the run; a job past its checkpoint resumes its turn from history), reply
 *              finished; or `/compact` done
 *           ─► what becomes of it is decided by the outcome policy (job-outcome.ts:
 *              complete, park, discard, ride out an outage, retry, fail for good) and
 *              applied here, against the queue and the chat
 *   parked ─► waiting, no worker held; woken when its wait ends (job-waits.ts) or at
 *             its deadline, it is claimed again and resumes the turn
 *   stop asked while it was not running ─► its next claim ends it as stopped
 *
 * Starting: jobs this worker's id left running are requeued, and parked jobs whose wait
 * ended while no process watched are woken.
 * Stopping (the run signal aborts): no new claims; running jobs finish within their
 * own `job_timeout_s`; `run` resolves when the pool is idle.
 */
import PQueue from "p-queue";
import type { TurnEnding } from "../agents/context-builder.js";
import type { AgentRunner } from "../agents/runner.js";
import { newTurnProgress, TurnDriver } from "../agents/turn.js";
import { deadline } from "../base/deadline.js";
import { CancelledError, describeWait, type ParkRequest, toError } from "../base/errors.js";
import type { Logger } from "../base/log.js";
import { checkNumberOptions } from "../base/options.js";
import { Wakeup } from "../base/wakeup.js";
import { JobEventPublisher } from "../events/job-events.js";
import { replyOfSession } from "../frontends/heartbeat-reply.js";
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
  TurnClosing,
  Worker,
} from "../ports/index.js";
import { noEvents } from "../ports/index.js";
import { type AttemptProgress, JobAttempts, type JobAttemptsOptions } from "./job-attempt.js";
import { type Attempt, decideOutcome } from "./job-outcome.js";
import { JobWaits } from "./job-waits.js";
import type { ServerMetrics } from "./metrics.js";

/** Logged (with a `recovered` count) when jobs a dead process left running are requeued. */
export const JOBS_RECOVERED = "requeued jobs left running by the previous server";

/** Logged (with a `woken` count) when parked jobs whose wait had ended are woken at start. */
export const PARKED_JOBS_WOKEN = "woke parked jobs whose wait ended while no server watched";

/** What an AgentWorker needs. */
export interface AgentWorkerOptions {
  /** Reads the files sent with chat messages. (Default: none; a job's files are left out) */
  media?: JobAttemptsOptions["media"];
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
  /** How far its attempt got: where and how its turn is closed if it ends unfinished. */
  progress: AttemptProgress;
}

/** Runs agent jobs from the queue. */
export class AgentWorker implements Worker {
  readonly name = "agent";
  readonly #options: AgentWorkerOptions;
  readonly #active = new Map<string, ActiveJob>();
  readonly #publish: JobEventPublisher;
  readonly #turns: TurnDriver;
  readonly #attempts: JobAttempts;
  readonly #waits: JobWaits;

  constructor(options: AgentWorkerOptions) {
    checkNumberOptions("AgentWorker", options, {
      concurrency: "count",
      jobTimeoutMs: "positive",
      outageBudgetMs: "non-negative",
      pollMs: "positive",
    });
    this.#options = options;
    this.#publish = new JobEventPublisher(options.events ?? noEvents);
    this.#turns = new TurnDriver({ runner: options.runner, history: options.history });
    this.#attempts = new JobAttempts({ ...options, turns: this.#turns, publish: this.#publish });
    this.#waits = new JobWaits(options);
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
    const woken = await this.#waits.wakeSettled();
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
    const progress = { sessionId: job.sessionId, turn: newTurnProgress(job.checkpointed) };
    const active: ActiveJob = { job, stop, progress };
    this.#active.set(job.id, active);
    metrics.jobsInFlight.inc();
    const { signal, clear } = deadline(stop.signal, jobTimeoutMs);
    if (job.stopRequested) stop.abort(new CancelledError("stopped by the user"));
    let outcome: JobOutcome;
    let reply: ReplyStream | null = null;
    let error: string | undefined;
    this.#publish.job("job.started", job);
    try {
      reply = replyOfSession(
        job.sessionKey,
        this.#options.frontends.openReply(job.replyTo, {
          jobId: job.id,
          agentId: job.agentId,
          cameAsVoice: job.attachments.some(({ kind }) => kind === "voice" || kind === "audio"),
        }),
      );
      const attempt = await this.#attempts.attempt(job, reply, signal, progress);
      outcome = await this.#apply(job, reply, attempt);
    } catch (thrown) {
      error = toError(signal.aborted ? signal.reason : thrown).message;
      const stopped = signal.aborted ? { stopReason: signal.reason as unknown } : {};
      outcome = await this.#apply(job, reply, { kind: "threw", error: thrown, ...stopped });
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

  /** Decides what becomes of the job after `attempt` (job-outcome.ts), and does it. */
  async #apply(job: ClaimedJob, reply: ReplyStream | null, attempt: Attempt): Promise<JobOutcome> {
    const { queue, clock, logger, jobTimeoutMs, outageBudgetMs, onBudgetExceeded } = this.#options;
    const policy = { now: clock.now(), jobTimeoutMs, outageBudgetMs, onBudgetExceeded };
    const decision = decideOutcome(attempt, job, policy);
    switch (decision.kind) {
      case "complete":
        await this.#complete(job);
        return "done";
      case "let-go":
        return "interrupted";
      case "park":
        return this.#park(job, reply, decision.park);
      case "discard":
        reply?.close();
        await this.#complete(job);
        logger.info({ job: job.id, reason: decision.reason }, "job discarded by a tool");
        return "discarded";
      case "ride-out": {
        const { error, retryAt, outageFailures } = decision;
        await queue.fail(job, error, retryAt, { transient: true });
        if (outageFailures === 0) reply?.update(STILL_TRYING);
        const logged = { job: job.id, outageFailures: outageFailures + 1, retryAt, error };
        logger.warn(logged, "service unavailable; the job will be retried");
        return "retry";
      }
      case "retry": {
        const { error, retryAt } = decision;
        await queue.fail(job, error, retryAt);
        logger.warn({ job: job.id, attempt: job.attempts, retryAt, error }, "job will be retried");
        return "retry";
      }
      case "fail":
        await this.#end(job, reply, { ...decision, stopped: false });
        return "failed";
      case "stop":
        await this.#end(job, reply, { ...decision, ending: "stopped by the user", stopped: true });
        return "stopped";
      default: {
        const never: never = decision;
        throw new Error(`unknown job decision ${JSON.stringify(never)}`);
      }
    }
  }

  /** Marks the job done (a lost lock means another process has it: only said). */
  async #complete(job: ClaimedJob): Promise<void> {
    if (!(await this.#options.queue.complete(job))) {
      this.#options.logger.warn({ job: job.id }, "job finished after its lock was lost");
    }
  }

  /**
   * Parks the job until what its calls wait for happens (or their deadline), keeping
   * the results of the calls that finished. A wait that was settled while the job ran
   * (a subagent ended, the owner answered) wakes it again at once (job-waits.ts).
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
    if (await this.#waits.settled(park.wait)) await queue.wake(job.id);
    logger.info(
      { job: job.id, waitingFor: park.wait, until: new Date(park.until).toISOString() },
      `job waiting for ${describeWait(park.wait)}`,
    );
    return "parked";
  }

  /**
   * Ends the job for good, failed or stopped, and, in the same transaction, closes its
   * unfinished turn: the tool calls it left open are answered, so the session's next
   * message is a valid request and the model sees why the calls have no results; a stop
   * also keeps the reply the person saw and the stop (agents/turn.ts). A stopped job's
   * subagents stop too; the person is told.
   */
  async #end(
    job: ClaimedJob,
    reply: ReplyStream | null,
    end: { error: string; ending: TurnEnding; notice: string; stopped: boolean },
  ): Promise<void> {
    const { failJob, logger } = this.#options;
    const { error, ending, notice, stopped } = end;
    const closing = await this.#closing(job, ending);
    if (!(await failJob(job, error, closing, { stopped }))) {
      logger.warn({ job: job.id }, `job ${stopped ? "stopped" : "failed"} after its lock was lost`);
    }
    if (stopped) await this.#stopSubagents(job);
    // No reply stream means its frontend failed to open: there is nowhere to tell.
    await reply
      ?.fail(notice)
      .catch((failure) =>
        logger.warn({ job: job.id, error: toError(failure).message }, "could not report a failure"),
      );
  }

  /** What closes the running job's unfinished turn, or null (see TurnDriver.closing). */
  async #closing(job: ClaimedJob, ending: TurnEnding): Promise<TurnClosing | null> {
    const progress = this.#active.get(job.id)?.progress;
    if (!progress?.sessionId) return null;
    return this.#turns.closing(progress.sessionId, ending, progress.turn);
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
}

/** Shown once in the chat while a job waits out an outage; the answer replaces it. */
export const STILL_TRYING =
  "The model service is not answering right now; I keep trying and will answer here when it is back.";
