/**
 * The few error classes picklebot throws. Each one wraps its cause, carries context
 * (file, key, job id) and says whether trying again can help.
 */
import type { Job, JobEndBlock, JobWait, ToolResultBlock } from "../ports/index.js";

/** Context attached to an error: where it happened and what it concerned. */
export type ErrorContext = Record<string, string | number | boolean | undefined>;

/** Options shared by all picklebot errors. */
export interface PicklebotErrorOptions {
  /** The underlying error, if any. */
  cause?: unknown;
  /** Whether retrying the same operation later can succeed. (Default: false) */
  retryable?: boolean;
  /** Where it happened: file, key, job id… */
  context?: ErrorContext;
  /**
   * What a chat user is told instead of the message, when the message holds what only
   * the owner should see (the server's paths, a file's contents). (Default: the message)
   */
  chatNotice?: string;
  /**
   * A service refused a credential of picklebot.yaml (a bot token, the model API key):
   * nothing it does works until the owner replaces it, and the message says how.
   * (Default: false)
   */
  credentialRefused?: boolean;
}

/** Base class: a failure with a message a person can act on. */
export class PicklebotError extends Error {
  readonly retryable: boolean;
  readonly context: ErrorContext;
  /** What a chat user is told instead of the message, if not the message itself. */
  readonly chatNotice: string | undefined;
  /** A service refused a credential; the message says what to do. */
  readonly credentialRefused: boolean;

  constructor(message: string, options: PicklebotErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.retryable = options.retryable ?? false;
    this.context = options.context ?? {};
    this.chatNotice = options.chatNotice;
    this.credentialRefused = options.credentialRefused ?? false;
  }
}

/**
 * Something the user can fix: a bad config value, a broken AGENT.md, an unknown id.
 * The CLI prints its message (no stack) and exits 1.
 */
export class UserError extends PicklebotError {}

/** The command line was used wrongly; the CLI exits 2. */
export class UsageError extends UserError {}

/** A call to the model provider failed; `retryable` tells 429/5xx/network from 400. */
export class ModelError extends PicklebotError {
  /** HTTP status, when the provider answered. */
  readonly status: number | undefined;
  /** Seconds the provider asked us to wait (retry-after), if it said. */
  readonly retryAfterS: number | undefined;

  constructor(
    message: string,
    options: PicklebotErrorOptions & { status?: number; retryAfterS?: number } = {},
  ) {
    super(message, options);
    this.status = options.status;
    this.retryAfterS = options.retryAfterS;
  }
}

/**
 * A chat platform (Telegram, Discord) refused or failed a login, a send, edit or typing
 * call, or the sending or answering of buttons.
 * `retryable` is true for 429, 5xx and network errors; `formatRejected` for a text the
 * platform could not parse as Markdown (resend it as plain text); `credentialRefused` for
 * a bot token the platform refused.
 */
export class ChatPlatformError extends PicklebotError {
  /** Seconds the platform asked us to wait (429 `retry_after`), if it said. */
  readonly retryAfterS: number | undefined;
  /** The platform rejected the text's formatting, not the message. */
  readonly formatRejected: boolean;

  constructor(
    message: string,
    options: PicklebotErrorOptions & { retryAfterS?: number; formatRejected?: boolean } = {},
  ) {
    super(message, options);
    this.retryAfterS = options.retryAfterS;
    this.formatRejected = options.formatRejected ?? false;
  }
}

/**
 * The storage cannot be used right now, though nothing is wrong with what was asked of
 * it: SQLite busy past its timeout, locked, full or failing I/O; PostgreSQL unreachable,
 * restarting, or a connection lost. Always `retryable`: the same work, unchanged, can
 * succeed later. Made where the driver's error is made (the SQLite database and the
 * PostgreSQL pools of `src/storage/`), with the driver's message, its error as `cause`
 * and its code in `context.code`; any other failure of a statement is thrown as the
 * driver made it.
 */
export class StorageUnavailableError extends PicklebotError {
  constructor(
    message: string,
    options: Omit<PicklebotErrorOptions, "retryable"> & {
      context: { backend: "sqlite" | "postgres"; code: string };
    },
  ) {
    super(message, { ...options, retryable: true });
  }
}

/** A tool was called with bad input or failed; it goes back to the model as `is_error`. */
export class ToolError extends PicklebotError {}

/**
 * A tool's transient failure (a 503, a timeout): the call runs again after a backoff,
 * without asking the model, up to `TOOL_RETRIES` times; then `message` goes back to the
 * model as an error.
 */
export class ToolRetry extends ToolError {
  /** What the other side asked us to wait (retry-after), in ms. (Default: 0) */
  readonly retryAfterMs: number;

  constructor(message: string, options: PicklebotErrorOptions & { retryAfterMs?: number } = {}) {
    super(message, { ...options, retryable: true });
    this.retryAfterMs = options.retryAfterMs ?? 0;
  }
}

/**
 * The call cannot succeed before `until` (epoch ms; a 429 with a long Retry-After): the
 * job is parked until then without holding a worker, and the call runs again. Where no
 * job can park (`picklebot chat`), `message` goes back to the model as an error.
 */
export class ToolSnooze extends ToolError {
  constructor(
    message: string,
    readonly until: number,
    options: PicklebotErrorOptions = {},
  ) {
    super(message, options);
  }
}

/** The tool ends the job as failed with `message`: no further model call, no retry. */
export class ToolCancel extends ToolError {}

/** The tool ends the job quietly as done: no further model call, nothing sent. */
export class ToolDiscard extends ToolError {}

/**
 * A job a tool ended (see {@link JobEndBlock}): thrown by the agent loop once the ending
 * is stored; the worker fails (cancel) or completes (discard) the job without a reply.
 */
export class JobEnded extends PicklebotError {
  constructor(readonly ending: JobEndBlock) {
    super(ending.message, { retryable: false });
  }
}

/**
 * Not a failure: the job cannot go on before something happens (a subagent ends, the
 * owner answers, a time comes). A tool throws it; the worker parks the job (see
 * `JobQueue.park`) with the results of the calls that did finish, and when the job
 * resumes the call runs again and looks.
 */
export class ParkRequest extends Error {
  /** Results of the turn's other calls that finished, kept so they do not run again. */
  readonly finished: ToolResultBlock[];

  constructor(
    readonly wait: JobWait,
    /** Epoch ms by which the job runs again in any case. */
    readonly until: number,
    finished: ToolResultBlock[] = [],
  ) {
    super(`waiting for ${describeWait(wait)}`);
    this.name = "ParkRequest";
    this.finished = finished;
  }
}

/** What a parked job waits for, for people: `2 subagent jobs`, `the owner's approval`. */
export function describeWait(wait: JobWait): string {
  if (wait.kind === "children") {
    return wait.jobIds.length === 1 ? "a subagent job" : `${wait.jobIds.length} subagent jobs`;
  }
  if (wait.kind === "batch") return "a message batch";
  return wait.kind === "approval" ? "the owner's approval" : "a later time";
}

/** A job's state for people, with what it waits for when it waits. */
export function describeJobState(job: Pick<Job, "state" | "waitingFor">): string {
  return job.waitingFor ? `waiting for ${describeWait(job.waitingFor)}` : job.state;
}

/**
 * A spending budget is used up (docs/guides/cost.md, "Budgets"): no model call before
 * `resetsAt` (epoch ms, when its period ends). The turn stops before the call, its history valid; the worker
 * parks the job until then, or fails it (`budget.on_exceeded: refuse`).
 */
export class BudgetExceeded extends PicklebotError {
  constructor(
    message: string,
    readonly resetsAt: number,
  ) {
    super(message, { retryable: false });
  }
}

/**
 * Work was cancelled on purpose: `/stop`, Ctrl+C, a shutdown. Never retried: whoever
 * cancelled it does not want it to go on.
 */
export class CancelledError extends PicklebotError {
  constructor(message = "cancelled", options: Omit<PicklebotErrorOptions, "retryable"> = {}) {
    super(message, { ...options, retryable: false });
  }
}

/** Work ran out of its time (a job's `job_timeout_s`, a tool's limit); a retry may finish. */
export class TimeoutError extends PicklebotError {
  constructor(message: string, options: Omit<PicklebotErrorOptions, "retryable"> = {}) {
    super(message, { ...options, retryable: true });
  }
}

/**
 * The error for work stopped by `signal`, normalised once where a library's own abort
 * error (the SDK's, fetch's `AbortError`) is caught: the signal's reason when it is one
 * of ours (a {@link TimeoutError} of a deadline, a {@link CancelledError} of `/stop`),
 * else a CancelledError with `message` that wraps what was thrown.
 */
export function abortedError(
  signal: AbortSignal | undefined,
  thrown: unknown,
  message = "cancelled",
): CancelledError | TimeoutError {
  const reason: unknown = signal?.aborted ? signal.reason : undefined;
  if (reason instanceof TimeoutError || reason instanceof CancelledError) return reason;
  return new CancelledError(message, { cause: reason ?? thrown });
}

/** Turns anything thrown into an Error, keeping Errors as they are. */
export function toError(thrown: unknown): Error {
  if (thrown instanceof Error) return thrown;
  if (typeof thrown === "string") return new Error(thrown);
  try {
    return new Error(JSON.stringify(thrown));
  } catch {
    return new Error(String(thrown));
  }
}

/**
 * True when a retry of the failed operation can help. Our own errors say so themselves;
 * anything else (a network error, a bug, a crash) gets the benefit of the doubt, and
 * `max_attempts` bounds the retries.
 */
export function isRetryable(thrown: unknown): boolean {
  return thrown instanceof PicklebotError ? thrown.retryable : true;
}
