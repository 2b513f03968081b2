/**
 * `job.enqueued` for the jobs this process enqueues (chat messages, crons, subagents):
 * the server's queue, wrapped. Jobs another process enqueued (`picklebot cron run` from a
 * shell) have no `job.enqueued` here; their stream starts at `job.started`, when claimed.
 */
import type { EventSink, JobQueue, NewJob } from "../ports/index.js";

/**
 * The same queue, whose `enqueue` also publishes `job.enqueued`. A dedupe key that names
 * a job already started or ended publishes nothing; one that names a job still queued
 * announces it again (rare: a chat update delivered twice), which a reader takes as the
 * same job.
 */
export function announcingEnqueues<Q extends JobQueue>(queue: Q, events: EventSink): Q {
  const enqueue = async (job: NewJob) => {
    const stored = await queue.enqueue(job);
    if (stored.state === "queued" && stored.attempts === 0) {
      const { id: jobId, agentId, sessionKey, attempts } = stored;
      events.publish({ type: "job.enqueued", jobId, agentId, sessionKey, attempts });
    }
    return stored;
  };
  return new Proxy(queue, {
    get(target, property) {
      if (property === "enqueue") return enqueue;
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}
