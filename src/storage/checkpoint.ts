import type { ChatMessage, ClaimedJob, HistoryStore, JobQueue } from "../ports.js";

/** A job's message once its user message is in history (DESIGN §4). */
export const CHECKPOINTED = ".";

/**
 * Writes a job's user message into its session and marks the job checkpointed. Resolves
 * false when the job's lock was lost (another process owns it now): the caller stops.
 */
export type Checkpoint = (
  job: ClaimedJob,
  sessionId: string,
  message: ChatMessage,
) => Promise<boolean>;

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
