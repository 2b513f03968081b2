/**
 * One attempt at an agent job, as the AgentWorker runs it once the job is claimed:
 *
 *   past its last attempt (requeued by crash recovery) ─► thrown: it fails for good
 *   stopped before its checkpoint                      ─► thrown: no session is made
 *   session found (the checkpointed one; a chat's current one of the job's agent; else new)
 *   `/compact` (task "compact") ─► summarised now; the reply says how ─► answered
 *   else the files sent with its message read (agents/media/intake.ts: downloaded, stored,
 *   prepared; until the job is checkpointed), then its turn driven (agents/turn.ts):
 *   compaction when needed, the message written with the checkpoint (what transcribing
 *   its voice notes cost, when priced, becomes the message's row of the usage ledger) (until the job is checkpointed; a lost lock makes the attempt "lost"),
 *   the run, model and tool calls published and streamed into the reply ─► reply
 *   finished ─► answered
 *
 * What becomes of the job then is the outcome policy's (job-outcome.ts) to decide.
 */
import { type BatchJob, LostBatchLock } from "../agents/batch-provider.js";
import type { MediaIntake, MediaOrigin, ReadFiles } from "../agents/media/intake.js";
import type { AgentRunner } from "../agents/runner.js";
import type { TurnDriver, TurnProgress, TurnRequest } from "../agents/turn.js";
import { chatAddressOf } from "../base/chat-address.js";
import { PicklebotError } from "../base/errors.js";
import type { Logger } from "../base/log.js";
import { isWebSessionKey } from "../base/session-key.js";
import { zeroUsage } from "../base/usage.js";
import type { CallEvent, JobEventPublisher } from "../events/job-events.js";
import type {
  Checkpoint,
  ClaimedJob,
  HistoryStore,
  JobAdmin,
  JobQueue,
  MessageCharge,
  ReplyStream,
  RequestContentBlock,
  Session,
} from "../ports/index.js";
import type { Attempt } from "./job-outcome.js";
import type { ServerMetrics } from "./metrics.js";

/** Jobs looked at once for the batch ids other jobs hold. */
const BATCH_SWEEP_LIMIT = 10_000;

/** What {@link JobAttempts} works with: the AgentWorker's collaborators. */
export interface JobAttemptsOptions {
  queue: Pick<JobQueue, "recordBatchStep"> & Pick<JobAdmin, "list">;
  history: HistoryStore;
  checkpoint: Checkpoint;
  runner: AgentRunner;
  turns: TurnDriver;
  metrics: ServerMetrics;
  logger: Logger;
  publish: JobEventPublisher;
  /** Reads the files sent with chat messages. (Default: none; a job's files are left out) */
  media?: MediaIntake;
}

/** How far an attempt got: what the worker needs to close its turn if it ends unfinished. */
export interface AttemptProgress {
  /** The job's session, once known: where its turn is closed. */
  sessionId: string | null;
  /** How far its turn got (agents/turn.ts). */
  turn: TurnProgress;
}

/** Runs attempts at agent jobs (see the file header). */
export class JobAttempts {
  readonly #deps: JobAttemptsOptions;

  constructor(deps: JobAttemptsOptions) {
    this.#deps = deps;
  }

  /**
   * Runs one attempt at the job (see the file header), keeping in `progress` how far it
   * got (where its turn is closed if it ends unfinished). Throws what ended the attempt
   * otherwise, for the outcome policy to judge.
   */
  async attempt(
    job: ClaimedJob,
    reply: ReplyStream,
    signal: AbortSignal,
    progress: AttemptProgress,
  ): Promise<Attempt> {
    const { metrics, turns } = this.#deps;
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
    progress.sessionId = session.id;
    const files = await this.#readFiles(job, signal);
    const request = this.#turnRequest(job, session.id, reply, signal, files);
    const turn = await turns.drive({ ...request, progress: progress.turn });
    if (turn.status === "lost") return { kind: "lost" };
    const { result } = turn;
    metrics.countTokens({ agentId: job.agentId, model: result.model, usage: result.usage });
    const notices = files.notices.map((notice) => `(${notice})\n\n`).join("");
    await reply.finish(`${notices}${result.text}`);
    return { kind: "answered" };
  }

  /** The files of a chat job's message, until its message is checkpointed. */
  async #readFiles(job: ClaimedJob, signal: AbortSignal): Promise<ReadFiles> {
    const { media } = this.#deps;
    const platform = mediaOriginOf(job);
    if (job.checkpointed || job.attachments.length === 0 || !media || !platform) {
      return { content: [], notices: [] };
    }
    const lastAttempt = job.attempts >= job.maxAttempts;
    const { id, attachments } = job;
    return media.read({ id, attachments, platform, lastAttempt }, signal);
  }

  /**
   * The job's turn: its message (until it is checkpointed), written with the checkpoint;
   * compactions logged; model and tool calls published and streamed into the reply.
   */
  #turnRequest(
    job: ClaimedJob,
    sessionId: string,
    reply: ReplyStream,
    signal: AbortSignal,
    files: ReadFiles,
  ): TurnRequest {
    const { checkpoint, metrics, logger } = this.#deps;
    const publish = (event: CallEvent) => this.#deps.publish.call(event, job, sessionId);
    let streamed = "";
    return {
      agentId: job.agentId,
      sessionId,
      sessionKey: job.sessionKey,
      signal,
      jobId: job.id,
      replyTo: job.replyTo,
      sender: job.sender,
      finishedResults: job.toolResults,
      ...(job.batch ? { batch: this.#batchJob(job) } : {}),
      ...(job.model === null ? {} : { model: job.model }),
      ...(job.checkpointed
        ? {}
        : { message: { role: "user", content: userContent(job.message, files) } }),
      append: async (message) => {
        if (!(await checkpoint(job, sessionId, message, chargeOf(job, files)))) return false;
        this.#deps.publish.job("job.checkpointed", job);
        return true;
      },
      onCompacted: (compacted) => {
        metrics.countTokens({ agentId: job.agentId, ...compacted });
        const logged = { job: job.id, session: sessionId, ...compacted, usage: undefined };
        logger.info(logged, "session compacted");
      },
      onCompactionFailed: (error) =>
        logger.warn(
          { job: job.id, session: sessionId, error: error.message },
          "could not compact the session; its oldest turns are left out of requests instead",
        ),
      events: {
        onModelCall: (model) => {
          streamed = "";
          reply.typing();
          publish({ type: "model.started", model });
        },
        onModelReply: (model, usage) => publish({ type: "model.ended", model, usage }),
        onText: (delta) => {
          streamed += delta;
          reply.update(streamed);
        },
        onToolCall: (call, summary) => {
          reply.toolCall(call.name, summary);
          publish({ type: "tool.started", tool: call.name, callId: call.id });
        },
        onToolResult: (call, isError) =>
          publish({ type: "tool.ended", tool: call.name, callId: call.id, isError }),
      },
    };
  }

  /** What a batch job's turn needs of the queue: its step, stored fenced. */
  #batchJob(job: ClaimedJob): BatchJob {
    const { queue } = this.#deps;
    return {
      jobId: job.id,
      step: job.batchStep,
      record: async (step) => {
        if (!(await queue.recordBatchStep(job, step))) throw new LostBatchLock(job.id);
      },
      othersBatchIds: async () => {
        const ids = new Set<string>();
        for (const state of ["waiting", "running", "queued"] as const) {
          for (const other of await queue.list({ state, limit: BATCH_SWEEP_LIMIT })) {
            if (other.id !== job.id && other.batchStep?.batchId) ids.add(other.batchStep.batchId);
          }
        }
        return ids;
      },
    };
  }

  /** `/compact`: summarises the session now, and says what it did. */
  async #compactNow(
    job: ClaimedJob,
    sessionId: string,
    reply: ReplyStream,
    signal: AbortSignal,
  ): Promise<Attempt> {
    const { runner, metrics } = this.#deps;
    const request = {
      agentId: job.agentId,
      sessionId,
      sessionKey: job.sessionKey,
      signal,
      jobId: job.id,
      sender: job.sender,
      replyTo: job.replyTo,
    };
    const { compacted, report } = await runner.compactNow(request);
    if (compacted) metrics.countTokens({ agentId: job.agentId, ...compacted });
    await reply.finish(report);
    return { kind: "answered" };
  }

  /**
   * The job's session: the checkpointed one; for a chat, the key's newest session of the
   * job's agent (its current one, or, for a message queued before `/agent` switched the
   * chat, the one it was sent to, so the switch stays current); else a new one.
   */
  async #sessionFor(job: ClaimedJob): Promise<Session> {
    const { history } = this.#deps;
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
}

/** A user message's content: its files (images before the words, as the APIs advise), then its text. */
function userContent(text: string, files: ReadFiles): RequestContentBlock[] {
  const words: RequestContentBlock[] = text.trim() === "" ? [] : [{ type: "text", text }];
  const content = [...files.content, ...words];
  return content.length > 0 ? content : [{ type: "text", text }];
}

/** Where a job's files were sent: its chat's platform, the web chat, or nowhere (null). */
function mediaOriginOf(job: ClaimedJob): MediaOrigin | null {
  const address = chatAddressOf(job.replyTo);
  if (address) return address.platform;
  return isWebSessionKey(job.sessionKey) ? "web" : null;
}

/** The ledger row of a job's user message: what transcribing its voice notes cost, if any. */
function chargeOf(job: ClaimedJob, files: ReadFiles): MessageCharge | undefined {
  if (!files.charge) return undefined;
  const { model, usd } = files.charge;
  return { usage: { ...zeroUsage(), serviceUsd: usd }, call: { model, jobId: job.id } };
}
