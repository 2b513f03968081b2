/**
 * The turn driver: how one turn of a session is driven, by the AgentWorker (a job) and by
 * `picklebot chat` (a line typed) alike, so what a message may hold and what happens
 * around a run is decided here once.
 *
 * A turn, step by step:
 *   1. stopped already?            ─► the signal's reason is thrown; nothing is written
 *   2. a user message to add?      ─► compaction when the session has grown past
 *                                     COMPACT_BEFORE (see compaction.ts); a summary that
 *                                     fails is reported and the turn goes on, its oldest
 *                                     turns left out of requests instead
 *                                  ─► the message joins the session through the caller's
 *                                     `append` (the worker's checkpoint, which may find the
 *                                     job's lock lost: the turn is then "lost", not run)
 *      no message (a job resumed past its checkpoint): straight to the run
 *   3. the run (AgentRunner.run)   ─► "answered" with the reply, or whatever it threw
 *                                     (a park, a tool's job end, a stop, a failure)
 *   4. ended unfinished?           ─► the caller decides whether the turn is over (the
 *                                     terminal at once; the worker only when the job ends
 *                                     for good, not when it is retried) and closes it with
 *                                     {@link TurnDriver.closing}: an `is_error` result for
 *                                     every call left open, saying why, so the session's
 *                                     next request is valid; a turn the person stopped
 *                                     also gets the reply they saw so far and the stop
 *                                     (see `closingMessages`), so the next turn starts
 *                                     after it instead of answering the stopped request.
 *
 * How far a turn got is kept in the caller's {@link TurnProgress}: whether its message is
 * in the session (before that, there is nothing to close) and the text the model call in
 * progress has streamed but not yet stored.
 */
import { CancelledError, TimeoutError, toError } from "../base/errors.js";
import type { ChatMessage, HistoryStore, TurnClosing } from "../ports/index.js";
import type { CompactionResult } from "./compaction.js";
import { closingMessages, type TurnEnding } from "./context-builder.js";
import type { TurnEvents, TurnResult } from "./loop.js";
import type { AgentRunner, RunRequest } from "./runner.js";

/** What a {@link TurnDriver} is built from. */
export interface TurnDriverOptions {
  /** Compacts sessions and runs turns. */
  runner: Pick<AgentRunner, "compact" | "run">;
  /** Where the last message of an unfinished turn is read, and (by default) messages added. */
  history: Pick<HistoryStore, "append" | "loadContext">;
}

/** One turn to drive: the run's request, and what starts it. */
export interface TurnRequest extends RunRequest {
  /**
   * The person's message that starts the turn; none when the turn resumes one whose
   * message is stored already (a job past its checkpoint). (Default: none)
   */
  message?: ChatMessage;
  /**
   * Adds `message` to the session; resolves false when the turn must not go on (the
   * job's lock was lost to another process). (Default: `history.append`)
   */
  append?: (message: ChatMessage) => Promise<boolean>;
  /** Told when the session was compacted before the message joined it. (Default: nobody) */
  onCompacted?: (compacted: CompactionResult) => void;
  /**
   * Told when that compaction failed; the turn goes on, its oldest turns left out of
   * requests. (Default: nobody)
   */
  onCompactionFailed?: (error: Error) => void;
  /**
   * Where the driver records how far the turn got, for {@link TurnDriver.closing}.
   * (Default: not kept)
   */
  progress?: TurnProgress;
}

/** How far a turn got, as {@link TurnDriver.drive} records it. */
export interface TurnProgress {
  /** The turn's message is in the session (a job past its checkpoint starts so). */
  started: boolean;
  /** What the model call in progress has streamed so far, not stored yet. */
  unsavedText: string;
}

/** The progress of a turn not driven yet; `started` when its message is stored already. */
export function newTurnProgress(started = false): TurnProgress {
  return { started, unsavedText: "" };
}

/** How a driven turn came back (a turn that failed throws instead). */
export type TurnOutcome =
  /** The agent replied. */
  | { status: "answered"; result: TurnResult }
  /** The message could not join the session (`append` said no): nothing ran. */
  | { status: "lost" };

/** Drives turns: compaction, the user message, the run, and closing an unfinished turn. */
export class TurnDriver {
  readonly #options: TurnDriverOptions;

  constructor(options: TurnDriverOptions) {
    this.#options = options;
  }

  /**
   * Drives one turn (steps 1–3 of the file header). Throws what stopped it: the signal's
   * reason, or what the run threw; the session may then hold an unfinished turn, which
   * the caller closes with {@link closing} once it knows the turn is over.
   */
  async drive(request: TurnRequest): Promise<TurnOutcome> {
    const { message, append, onCompacted, onCompactionFailed, progress: kept, ...run } = request;
    const progress = kept ?? newTurnProgress();
    if (!message) progress.started = true;
    run.signal.throwIfAborted();
    if (message) {
      await this.#compactFirst(run, onCompacted, onCompactionFailed);
      const added = append
        ? await append(message)
        : await this.#options.history.append(run.sessionId, message).then(() => true);
      if (!added) return { status: "lost" };
      progress.started = true;
    }
    const events = recordingUnsavedText(run.events, progress);
    return { status: "answered", result: await this.#options.runner.run({ ...run, events }) };
  }

  /**
   * What closes the session's unfinished turn (see `closingMessages`): results for its
   * open tool calls saying why they have none and, for a stop, the reply so far and the
   * stop; null when nothing is left to close (or the turn never started).
   */
  async closing(
    sessionId: string,
    ending: TurnEnding,
    progress: TurnProgress,
  ): Promise<TurnClosing | null> {
    if (!progress.started) return null;
    const last = (await this.#options.history.loadContext(sessionId, 1)).at(-1);
    const messages = closingMessages(last, ending, progress.unsavedText);
    return messages.length > 0 ? { sessionId, messages } : null;
  }

  /** Closes the session's unfinished turn by appending {@link closing}'s messages. */
  async close(sessionId: string, ending: TurnEnding, progress: TurnProgress): Promise<void> {
    const closing = await this.closing(sessionId, ending, progress);
    for (const message of closing?.messages ?? []) {
      await this.#options.history.append(sessionId, message);
    }
  }

  /** Compacts the session when it has grown too big; a failure is reported, not thrown. */
  async #compactFirst(
    request: RunRequest,
    onCompacted: TurnRequest["onCompacted"],
    onCompactionFailed: TurnRequest["onCompactionFailed"],
  ): Promise<void> {
    const { agentId, sessionId, sessionKey, signal, jobId, sender, replyTo } = request;
    let compacted: CompactionResult | null;
    try {
      compacted = await this.#options.runner.compact({
        agentId,
        sessionId,
        sessionKey,
        signal,
        ...(jobId === undefined ? {} : { jobId }),
        ...(sender === undefined ? {} : { sender }),
        ...(replyTo === undefined ? {} : { replyTo }),
      });
    } catch (thrown) {
      if (signal.aborted) throw thrown;
      onCompactionFailed?.(toError(thrown));
      return;
    }
    if (compacted) onCompacted?.(compacted);
  }
}

/**
 * Why a turn stopped by its signal ended, as the model is told: its reason is a
 * CancelledError (`/stop`, Ctrl+C) or a TimeoutError (the job's deadline); anything
 * else, or no stop at all, is an interruption.
 */
export function turnEndingOf(stopReason: unknown): TurnEnding {
  if (stopReason instanceof CancelledError) return "stopped by the user";
  if (stopReason instanceof TimeoutError) return "timed out";
  return "interrupted";
}

/**
 * The turn's events, also keeping in `progress` the text of the model call in progress
 * that the caller was shown: it starts empty with each call and is stored with the
 * call's reply. A caller that shows no text (no `onText`) keeps the model call unstreamed.
 */
function recordingUnsavedText(
  events: TurnEvents | undefined,
  progress: TurnProgress,
): TurnEvents | undefined {
  const onText = events?.onText;
  if (!onText) return events;
  return {
    ...events,
    onModelCall: (model) => {
      progress.unsavedText = "";
      events.onModelCall?.(model);
    },
    onText: (delta) => {
      progress.unsavedText += delta;
      onText(delta);
    },
    onModelReply: (model, usage) => {
      progress.unsavedText = "";
      events.onModelReply?.(model, usage);
    },
  };
}
