import type { Checkpoint, HistoryStore, JobQueue } from "../ports/index.js";

/**
 * The checkpoint for stores that cannot share a transaction: the append carries the job
 * id, so a crash between the two steps leaves a message the retry will not append again.
 */
export function sequentialCheckpoint(history: HistoryStore, queue: JobQueue): Checkpoint {
  return async (job, sessionId, message) => {
    await history.append(sessionId, message, { jobId: job.id });
    return queue.checkpoint(job, sessionId);
  };
}

/** Thrown inside a checkpoint's transaction to roll it back: the job's lock was lost. */
export class LockLost extends Error {}
