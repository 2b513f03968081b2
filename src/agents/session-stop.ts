/**
 * `/stop` of a conversation, wherever it is asked for (a chat's `/stop`, the Stop button
 * of the dashboard's web chat):
 *
 *   a job of the session key running? ── yes ─► aborted where it runs (the SessionStopper,
 *      │ no                                     across the cluster in PostgreSQL mode)
 *   jobs of the key waiting (for a subagent, an approval, a time)? ─► each asked to stop
 *
 * Either way the subagents of a stopped job are stopped with it (by the worker that ends it).
 */
import type { JobAdmin, SessionStopper } from "../ports/index.js";

/** What a stop found: the running reply, replies that waited, or nothing to stop. */
export type SessionStopOutcome = "running" | "waiting" | "nothing";

/** Stops the reply in progress of `sessionKey` (see the file header). */
export async function stopSessionReply(
  sessionKey: string,
  parts: { stopper: SessionStopper; queue: Pick<JobAdmin, "list" | "requestStop"> },
): Promise<SessionStopOutcome> {
  if (await parts.stopper.stop(sessionKey)) return "running";
  const waiting = await parts.queue.list({ sessionKey, state: "waiting" });
  let stopped = 0;
  for (const job of waiting) if (await parts.queue.requestStop(job.id)) stopped += 1;
  return stopped > 0 ? "waiting" : "nothing";
}
