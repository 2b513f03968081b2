/**
 * What both queue adapters share about jobs: ids, defaults, and the checks a job must
 * pass before it is stored (producers are the bus, the crons and the CLI: outside input).
 */
import { randomBytes } from "node:crypto";
import { isChatPlatform } from "../base/chat-address.js";
import { UserError } from "../base/errors.js";
import type {
  BatchStep,
  Job,
  JobSender,
  JobState,
  JobWait,
  NewJob,
  ReplyTarget,
} from "../ports/index.js";

/** The error recorded for an attempt that was running when its process stopped. */
export const INTERRUPTED_MESSAGE = "interrupted: the process stopped while the job was running";

const instance = BigInt(`0x${randomBytes(5).toString("hex")}`)
  .toString(36)
  .padStart(8, "0")
  .slice(-8);
let counter = 0;
let lastMs = 0;
let timePart = "";

/**
 * A new job id: time-ordered (so the id index grows at its end), unique across processes
 * (a random part per process) and short enough to type in `picklebot jobs retry <id>`.
 */
export function newJobId(): string {
  const now = Date.now();
  if (now !== lastMs) {
    lastMs = now;
    timePart = now.toString(36);
  }
  counter = (counter + 1) % 1_679_616; // 36^4: four base-36 digits
  return `${timePart}${counter.toString(36).padStart(4, "0")}${instance}`;
}

/**
 * The lock tokens of one queue, the same for every adapter: a claim's token is a random
 * per-queue prefix and the claim's number, and a job's token is the claim's token, a dot
 * and the job's seq (the SQL adapters append `.seq` in the claim statement itself). Tokens
 * of two claims never collide, and every job of a claim is found by its prefix.
 */
export class LockTokens {
  readonly #prefix = randomBytes(6).toString("base64url");
  #claims = 0;

  /** The token of a new claim. */
  nextClaim(): string {
    this.#claims += 1;
    return `${this.#prefix}${this.#claims.toString(36)}`;
  }

  /** The token of the job with `seq` taken by the claim `claimToken`. */
  static forJob(claimToken: string, seq: number): string {
    return `${claimToken}.${seq}`;
  }
}

/** Job counts with every state at zero. */
export function emptyCounts(): Record<JobState, number> {
  return { queued: 0, running: 0, waiting: 0, done: 0, failed: 0, stopped: 0 };
}

/** True when `value` is a {@link JobWait}. */
export function isJobWait(value: unknown): value is JobWait {
  if (typeof value !== "object" || value === null) return false;
  const wait = value as Record<string, unknown>;
  if (wait.kind === "time") return true;
  if (wait.kind === "approval") return typeof wait.approvalId === "string";
  if (wait.kind === "batch") {
    return Array.isArray(wait.batchIds) && wait.batchIds.every((id) => typeof id === "string");
  }
  return (
    wait.kind === "children" &&
    Array.isArray(wait.jobIds) &&
    wait.jobIds.every((id) => typeof id === "string")
  );
}

/** True when `value` is a {@link ReplyTarget}. */
export function isReplyTarget(value: unknown): value is ReplyTarget {
  if (typeof value !== "object" || value === null) return false;
  const { kind, chatId } = value as { kind?: unknown; chatId?: unknown };
  if (kind === "console" || kind === "silent") return true;
  return isChatPlatform(kind) && typeof chatId === "string" && chatId !== "";
}

/**
 * A stored reply target as a {@link ReplyTarget}, or null when it is none. Also reads
 * `{ kind: "discord", channelId }`, the shape picklebot stored before migration 012
 * (SQLite) / 014 (PostgreSQL) rewrote it: in distributed mode a server of the previous
 * release may still write it while the others are upgraded one at a time.
 */
export function readReplyTarget(value: unknown): ReplyTarget | null {
  if (isReplyTarget(value)) return value;
  const legacy = value as { kind?: unknown; channelId?: unknown } | null;
  const chatId = legacy?.channelId;
  if (legacy?.kind !== "discord" || typeof chatId !== "string" || chatId === "") return null;
  return { kind: "discord", chatId };
}

/** The stored form of a validated new job: queued, no attempts yet, defaults applied. */
export function queuedJob(
  newJob: NewJob,
  id: string,
  now: number,
  defaultMaxAttempts: number,
): Job {
  return {
    id,
    agentId: newJob.agentId,
    sessionKey: newJob.sessionKey,
    sessionId: newJob.sessionId ?? null,
    message: newJob.message,
    checkpointed: false,
    attachments: (newJob.attachments ?? []).map((attachment) => ({ ...attachment })),
    task: newJob.task ?? "turn",
    mode: newJob.mode,
    replyTo: { ...newJob.replyTo },
    state: "queued",
    attempts: 0,
    maxAttempts: newJob.maxAttempts ?? defaultMaxAttempts,
    runAt: newJob.runAt ?? now,
    lockedBy: null,
    lockedAt: null,
    lastError: null,
    errors: [],
    createdAt: now,
    updatedAt: now,
    waitingFor: null,
    parentId: newJob.parentId ?? null,
    stopRequested: false,
    toolResults: [],
    batch: newJob.batch ?? false,
    batchStep: null,
    sender: newJob.sender ? { ...newJob.sender } : null,
    model: newJob.model ?? null,
  };
}

/** True when `value` is a {@link BatchStep}. */
export function isBatchStep(value: unknown): value is BatchStep {
  if (typeof value !== "object" || value === null) return false;
  const step = value as Record<string, unknown>;
  return (
    typeof step.customId === "string" &&
    (step.batchId === null || typeof step.batchId === "string") &&
    typeof step.at === "number" &&
    typeof step.steps === "number" &&
    typeof step.fallback === "boolean"
  );
}

/** True when `value` is a {@link JobSender}. */
export function isJobSender(value: unknown): value is JobSender {
  if (typeof value !== "object" || value === null) return false;
  const sender = value as Record<string, unknown>;
  return isNonEmptyString(sender.person) && typeof sender.direct === "boolean";
}

/** Throws a {@link UserError} naming the first field of `job` that is not valid. */
export function validateNewJob(job: NewJob): void {
  const problem = newJobProblem(job);
  if (problem) throw new UserError(`Cannot enqueue the job: ${problem}.`, { context: { problem } });
}

function newJobProblem(job: NewJob): string | null {
  if (!isNonEmptyString(job.agentId))
    return `agentId must be a non-empty string, found ${show(job.agentId)}`;
  if (!isNonEmptyString(job.sessionKey)) {
    return `sessionKey must be a non-empty string, found ${show(job.sessionKey)}`;
  }
  if (typeof job.message !== "string")
    return `message must be a string, found ${show(job.message)}`;
  if (job.mode !== "chat" && job.mode !== "job")
    return `mode must be "chat" or "job", found ${show(job.mode)}`;
  if (job.task !== undefined && job.task !== "turn" && job.task !== "compact")
    return `task must be "turn" or "compact", found ${show(job.task)}`;
  if (!isReplyTarget(job.replyTo))
    return `replyTo is not a valid reply target, found ${show(job.replyTo)}`;
  if (job.sessionId != null && !isNonEmptyString(job.sessionId)) {
    return `sessionId must be a non-empty string or null, found ${show(job.sessionId)}`;
  }
  if (
    job.maxAttempts !== undefined &&
    !(Number.isInteger(job.maxAttempts) && job.maxAttempts >= 1)
  ) {
    return `maxAttempts must be a whole number of at least 1, found ${show(job.maxAttempts)}`;
  }
  if (job.runAt !== undefined && !Number.isFinite(job.runAt)) {
    return `runAt must be epoch milliseconds, found ${show(job.runAt)}`;
  }
  if (job.dedupeKey !== undefined && !isNonEmptyString(job.dedupeKey)) {
    return `dedupeKey must be a non-empty string when given, found ${show(job.dedupeKey)}`;
  }
  if (job.parentId !== undefined && !isNonEmptyString(job.parentId)) {
    return `parentId must be a non-empty string when given, found ${show(job.parentId)}`;
  }
  if (job.sender != null && !isJobSender(job.sender)) {
    return `sender must be {person, direct} or null, found ${show(job.sender)}`;
  }
  return null;
}

function isNonEmptyString(value: unknown): value is string {
  return typeof value === "string" && value !== "";
}

function show(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}
