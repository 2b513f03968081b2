import { cronManualKey, cronOccurrenceKey } from "../base/session-key.js";
import type { Clock, Job, JobQueue, NewJob } from "../ports/index.js";
import type { CronDefinition } from "./definition.js";

/**
 * Enqueues the job of one occurrence, in a fresh session. The dedupe key is the occurrence,
 * so enqueueing the same occurrence again (after a crash, or from a second process) returns
 * the first job instead of storing a second one.
 */
export function enqueueOccurrence(
  queue: JobQueue,
  cron: CronDefinition,
  occurrenceMs: number,
  maxAttempts: number | undefined,
): Promise<Job> {
  return queue.enqueue(
    cronJob(cron, cronOccurrenceKey(cron.id, occurrenceMs), maxAttempts, cron.batch),
  );
}

/**
 * Enqueues a cron's prompt now, outside its schedule (`picklebot cron run <id>`). Works for
 * disabled and finished one-off crons too, and does not touch the cron's stored state.
 * Session and dedupe key: `cron:<id>:manual:<now ISO>`. `batch` sends this run through
 * the Message Batches API whatever the file says (`cron run --batch`).
 */
export function runCronNow(
  cron: CronDefinition,
  queue: Pick<JobQueue, "enqueue">,
  clock: Clock,
  options: { maxAttempts?: number; batch?: boolean } = {},
): Promise<Job> {
  const key = cronManualKey(cron.id, clock.now());
  return queue.enqueue(
    cronJob(cron, key, options.maxAttempts, options.batch === true || cron.batch),
  );
}

/** A cron run in a fresh session; `key` is both its session key and its dedupe key. */
function cronJob(
  cron: CronDefinition,
  key: string,
  maxAttempts: number | undefined,
  batch: boolean,
): NewJob {
  return {
    agentId: cron.agentId,
    sessionKey: key,
    sessionId: null,
    message: cron.prompt,
    mode: "job",
    replyTo: cron.deliverTo,
    dedupeKey: key,
    maxAttempts,
    ...(batch ? { batch: true } : {}),
    ...(cron.model === undefined ? {} : { model: cron.model }),
  };
}
