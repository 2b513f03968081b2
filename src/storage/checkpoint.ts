import type { Checkpoint, FailJob, HistoryStore, JobQueue } from "../ports/index.js";

/**
 * The checkpoint for stores that cannot share a transaction: the append carries the job
 * id, so a crash between the two steps leaves a message the retry will not append again.
 */
export function sequentialCheckpoint(history: HistoryStore, queue: JobQueue): Checkpoint {
  return async (job, sessionId, message, charge) => {
    await history.append(sessionId, message, { jobId: job.id, ...charge });
    return queue.checkpoint(job, sessionId);
  };
}

/**
 * Failing a job for stores that cannot share a transaction: the job first, so a crash
 * before the closing messages leaves an open tool call in an ended turn, which the
 * context builder answers as "interrupted" when it builds the next request.
 */
export function sequentialFailJob(history: HistoryStore, queue: JobQueue): FailJob {
  return async (job, error, closing, options = {}) => {
    if (!(await queue.fail(job, error, null, options))) return false;
    if (!closing) return true;
    for (const message of closing.messages) await history.append(closing.sessionId, message);
    return true;
  };
}

/** Thrown inside a checkpoint's transaction to roll it back: the job's lock was lost. */
export class LockLost extends Error {}
