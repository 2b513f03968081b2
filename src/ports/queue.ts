/** The JobQueue port: jobs as plain data, the durable queue and its admin side. */
import type { CHAT_PLATFORMS, ChatAttachment, ChatPlatformKind } from "./chat.js";
import type { ToolResultBlock } from "./messages.js";

/**
 * A checkpointed job's message (docs/design.md §4): its user message is in history, and a retry
 * resumes from there instead of appending it again.
 */
export const RESUME_MARKER = ".";

/** Jobs {@link JobAdmin.list} returns when the caller names no limit. */
export const JOB_LIST_LIMIT = 50;

/** Where a job's reply goes: plain data, resolved to a live {@link Frontend} at run time. */
export type ReplyTarget = ChatReplyTarget | { kind: "console" } | { kind: "silent" };

/**
 * A chat on one platform, the same shape for every platform of {@link CHAT_PLATFORMS}:
 * `{ kind: "telegram", chatId }`, `{ kind: "discord", chatId }` (a Discord channel id;
 * stored as `channelId` before migration 012 on SQLite, 014 on PostgreSQL).
 */
export type ChatReplyTarget = {
  [Kind in ChatPlatformKind]: { kind: Kind; chatId: string };
}[ChatPlatformKind];

/**
 * Every job state, in the order lists show them: `queued` (due or scheduled), `running`
 * (claimed), `waiting` (parked: see {@link JobQueue.park}), `failed` (gave up), `stopped`
 * (the person stopped it: `/stop`, `jobs cancel`, the dashboard's Cancel), `done`.
 */
export const JOB_STATES = ["queued", "running", "waiting", "failed", "stopped", "done"] as const;

/** A job's state (see {@link JOB_STATES}). */
export type JobState = (typeof JOB_STATES)[number];

/** The states a job ends in: it does not run again (unless `jobs retry` requeues a failed one). */
export const FINAL_JOB_STATES: readonly JobState[] = ["failed", "stopped", "done"];

/** How a job attempt ended, the `outcome` label of `picklebot_jobs_processed_total`. */
export type JobOutcome =
  | "done"
  | "retry"
  | "failed"
  | "stopped"
  | "interrupted"
  | "parked"
  | "discarded";

/**
 * What a parked job waits for. It is woken (due at once) when that happens, and runs at
 * its deadline in any case; either way it resumes from its checkpoint and looks again.
 */
export type JobWait =
  /** These jobs (its subagents) to end: the queue wakes it when one of them ends. */
  | { kind: "children"; jobIds: string[] }
  /** A point in time (a snoozed tool call): its deadline. */
  | { kind: "time" }
  /** The owner's answer to an approval request. */
  | { kind: "approval"; approvalId: string }
  /**
   * Message Batches to end: the one its model step was sent in, or (after a crash between
   * submitting and recording it) the batches that may hold its request.
   */
  | { kind: "batch"; batchIds: string[] };

/**
 * The model step a batch job has sent (or is about to send) through the Message Batches
 * API, stored in its row before the batch is created, so that no crash submits it twice.
 */
export interface BatchStep {
  /** The request's `custom_id`: names the job and the history the step answers. */
  customId: string;
  /** The batch, once created; null: the intent is stored, the batch may exist or not. */
  batchId: string | null;
  /** Epoch ms the intent was stored: a batch holding it was created after this. */
  at: number;
  /** Model steps the job has sent through batches so far (this one included). */
  steps: number;
  /** The item errored, expired or was canceled: this step is made with a normal call. */
  fallback: boolean;
}

/** One failed attempt, kept in the job's error history. */
export interface JobAttemptError {
  attempt: number;
  at: number;
  message: string;
}

/**
 * Who sent the message a chat job answers: their person key (`telegram:<user id>`, see
 * `src/base/person-key.ts`), and whether the chat is theirs alone with the bot (a private
 * chat, a DM) rather than a group. Their memory is written under that key; it is shown
 * only in a conversation that is theirs alone.
 */
export interface JobSender {
  person: string;
  direct: boolean;
}

/** Attempts a job gets when its producer names none (the default of `workers.max_attempts`). */
export const DEFAULT_MAX_ATTEMPTS = 5;

/** What a producer hands to {@link JobQueue.enqueue}. */
export interface NewJob {
  agentId: string;
  sessionKey: string;
  /** Null: the worker picks the key's current session (chat) or a new one (job). */
  sessionId?: string | null;
  message: string;
  /**
   * Files sent with the message, downloaded and read by the job before its message is
   * written (see `Job.attachments`). (Default: none)
   */
  attachments?: ChatAttachment[];
  /** `chat`: continue the key's current session; `job`: a cron run in a fresh session. */
  mode: "chat" | "job";
  replyTo: ReplyTarget;
  /** What the job does. (Default: `turn`, see {@link JobTask}) */
  task?: JobTask;
  /** (Default: `workers.max_attempts`, {@link DEFAULT_MAX_ATTEMPTS}) */
  maxAttempts?: number;
  /** Epoch ms before which the job is not run. (Default: now) */
  runAt?: number;
  /**
   * Idempotency key: enqueueing a second job with a key already in the queue stores
   * nothing and returns the first job (a cron occurrence, a chat update id).
   */
  dedupeKey?: string;
  /** The job this one works for (a subagent's parent), woken when this one ends. */
  parentId?: string;
  /** Send its model calls through the Message Batches API (a `batch: true` cron). (Default: false) */
  batch?: boolean;
  /** Who sent its message (a chat's job). (Default: nobody: a cron, a subagent) */
  sender?: JobSender | null;
  /**
   * The named model (or model id) its turn uses instead of its agent's (a cron's `model`).
   * (Default: the agent's)
   */
  model?: string;
}

/**
 * `turn`: answer the job's message; `compact`: summarise the session so far (`/compact`),
 * in line with the conversation's other jobs.
 */
export type JobTask = "turn" | "compact";

/** A job as stored. Times are epoch milliseconds. */
export interface Job {
  id: string;
  agentId: string;
  sessionKey: string;
  sessionId: string | null;
  message: string;
  /**
   * The user message is in history (set by the checkpoint, with `message` set to
   * {@link RESUME_MARKER}): a run of this job resumes the session instead of appending it.
   */
  checkpointed: boolean;
  /** Files sent with its message; read into its user message by the checkpoint. */
  attachments: ChatAttachment[];
  task: JobTask;
  mode: "chat" | "job";
  replyTo: ReplyTarget;
  state: JobState;
  /** Attempts started so far (a claim counts one). */
  attempts: number;
  maxAttempts: number;
  runAt: number;
  lockedBy: string | null;
  lockedAt: number | null;
  lastError: string | null;
  errors: JobAttemptError[];
  createdAt: number;
  updatedAt: number;
  /** What the job waits for while `waiting`; null in every other state. */
  waitingFor: JobWait | null;
  /** The job this one works for (a subagent's parent), or null. */
  parentId: string | null;
  /**
   * `/stop` or `jobs cancel` asked to stop it while it was not running: the next run
   * ends it as stopped by the user instead of going on. True on every `stopped` job.
   */
  stopRequested: boolean;
  /**
   * Results of tool calls that finished before the job last parked (the other calls of
   * that turn waited): a resumed run uses them instead of running those calls again.
   */
  toolResults: ToolResultBlock[];
  /** Its model calls go through the Message Batches API (see {@link NewJob.batch}). */
  batch: boolean;
  /** The model its turn uses instead of its agent's (see {@link NewJob.model}), or null. */
  model: string | null;
  /** The batch step it sent last (see {@link JobQueue.recordBatchStep}), or null. */
  batchStep: BatchStep | null;
  /** Who sent its message (see {@link NewJob.sender}), or null. */
  sender: JobSender | null;
}

/** How {@link JobQueue.fail} records a failed attempt. */
export interface FailOptions {
  /** On a requeue: the service failed, not the job; the attempt is given back. (Default: false) */
  transient?: boolean;
  /** On the end (`retryAt` null): the person stopped the job; it ends `stopped`. (Default: false) */
  stopped?: boolean;
}

/** How a job parks (see {@link JobQueue.park}). */
export interface Parking {
  wait: JobWait;
  /** Epoch ms by which it runs again in any case. */
  until: number;
  /** See {@link Job.toolResults}. */
  toolResults: ToolResultBlock[];
}

/** A job claimed by a worker; `lockToken` fences every later change to it. */
export interface ClaimedJob extends Job {
  lockToken: string;
}

/**
 * The durable queue between producers (bus, crons, CLI) and AgentWorkers.
 *
 * Per-session order: a job is claimable only when it is the oldest queued job of its
 * session key and no job of that key is running. Every change after the claim is
 * fenced: it applies only while the job is still running under the same lock token,
 * and returns false otherwise.
 */
export interface JobQueue {
  /** Stores a job; resolves only once it is durable. */
  enqueue(job: NewJob): Promise<Job>;
  /** Claims up to `limit` runnable jobs for `workerId`, oldest first. */
  claim(workerId: string, limit: number, options?: { agentIds?: string[] }): Promise<ClaimedJob[]>;
  /**
   * Records the job's session, marks it checkpointed and sets its message to
   * {@link RESUME_MARKER} (the checkpoint).
   */
  checkpoint(job: ClaimedJob, sessionId: string): Promise<boolean>;
  /** Marks the job done. */
  complete(job: ClaimedJob): Promise<boolean>;
  /**
   * Records the error; requeues at `retryAt` (epoch ms), or ends the job when null:
   * `failed`, or `stopped` with `stopped` (the person stopped it). A requeue with
   * `transient` (the service was down, not the job at fault) gives the attempt back:
   * `attempts` counts real failures only, the error history has them all.
   */
  fail(
    job: ClaimedJob,
    error: string,
    retryAt: number | null,
    options?: FailOptions,
  ): Promise<boolean>;
  /**
   * Parks a running job without holding a worker: it is `waiting` for `wait`, its line
   * stays blocked, and the attempt is given back. It is due again when woken
   * ({@link JobQueue.wake}, or a child in `wait` ending) or at `until` (epoch ms),
   * whichever comes first. `toolResults` are kept for the resumed run (see `Job.toolResults`).
   */
  park(job: ClaimedJob, parking: Parking): Promise<boolean>;
  /**
   * Stores the batch step a running batch job sends (before and after creating the
   * batch); fenced like every change to a running job.
   */
  recordBatchStep(job: ClaimedJob, step: BatchStep): Promise<boolean>;
  /** Makes a waiting job due at once (what it waited for happened); false when not waiting. */
  wake(id: string): Promise<boolean>;
  /** Requeues every job left running by `workerId` (a process that died). */
  recover(workerId: string): Promise<number>;
  /** Calls `listener` when a job may have become runnable; returns an unsubscribe. */
  onRunnable(listener: () => void): () => void;
  /** Stops timers and closes connections. */
  close(): Promise<void>;
}

/** Which jobs {@link JobAdmin.list} returns. */
export interface JobFilter {
  state?: JobState;
  /** Only the subagent jobs of this job. */
  parentId?: string;
  /** Only the jobs of this session key (a chat, a cron). */
  sessionKey?: string;
  /** Only the jobs whose session key starts with this text (`cron:<id>:`: every run of a cron). */
  sessionKeyPrefix?: string;
  limit?: number;
}

/** Read and repair access to the queue, for the CLI and `/status`. */
export interface JobAdmin {
  /** The job with this id, or null. */
  get(id: string): Promise<Job | null>;
  /** Jobs, newest first. (Default: every state, parent and key, {@link JOB_LIST_LIMIT}) */
  list(options?: JobFilter): Promise<Job[]>;
  /** Number of jobs in each state. */
  counts(): Promise<Record<JobState, number>>;
  /**
   * Requeues a failed job with a fresh attempt budget; false when it is not failed (a
   * stopped job is not retried: its turn was closed where the person stopped it).
   */
  retryFailed(id: string): Promise<boolean>;
  /**
   * Asks a queued or waiting job to stop: it is due at once and its next run ends it as
   * stopped by the user (`stopRequested`); false when it is not queued or waiting.
   */
  requestStop(id: string): Promise<boolean>;
  /**
   * Requeues, due at once, running jobs whatever process claimed them (every one, or only
   * the one with `id`), recording the interrupted attempt as {@link JobQueue.recover}
   * does. Only for a caller that knows no process runs them: the holder of the SQLite
   * workspace lock (a server starting, or the CLI while no server runs).
   */
  requeueRunning(options?: { id?: string }): Promise<number>;
  /**
   * Deletes up to `batch` done, failed or stopped jobs last changed before `cutoff` (epoch ms), in
   * one short statement, and returns how many; the retention worker calls it in a loop.
   * (Default batch: {@link PRUNE_BATCH})
   */
  prune(cutoff: number, batch?: number): Promise<number>;
}

/** Rows one retention statement deletes at most: short enough never to hold up a claim. */
export const PRUNE_BATCH = 500;
