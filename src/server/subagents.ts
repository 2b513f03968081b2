/**
 * Subagents through the queue (agent-as-tool): a `subagent` call enqueues the task as a
 * child job of the calling one, and the caller parks until the child ends.
 *
 *   call ─► enqueue child (dedupe key = its session key: a resumed call finds it again)
 *        ├─ wait: false ─► answer with the child's job id
 *        ├─ child done ─► answer with its final text
 *        ├─ child failed ─► ToolError with its error
 *        ├─ past the deadline ─► stop the child (running or not), ToolError "timed out"
 *        └─ else ─► ParkRequest: the caller waits, woken when the child ends
 */
import { textOf } from "../agents/loop.js";
import type { SubagentDelegate, SubagentTask } from "../agents/tools/index.js";
import { ParkRequest, ToolError } from "../base/errors.js";
import type { Clock, HistoryStore, Job, JobAdmin, JobQueue, ToolContext } from "../ports/index.js";

/** What {@link queueSubagents} needs. */
export interface QueueSubagentsOptions {
  queue: JobQueue & Pick<JobAdmin, "requestStop">;
  history: HistoryStore;
  clock: Clock;
  /** How long a caller waits for its child (`workers.subagent_timeout_s`). */
  timeoutMs: number;
  /**
   * Aborts the running job of a session key wherever it runs: a child still running at
   * the deadline. (Default: a running child finishes its attempt, its answer unused)
   */
  stopRunning?: (sessionKey: string) => Promise<boolean>;
}

/** The delegate of the server: each task is a child job of the calling job. */
export function queueSubagents(options: QueueSubagentsOptions): SubagentDelegate {
  return async (task, context) => {
    const child = await options.queue.enqueue(childJob(task, context));
    if (!task.wait) {
      return (
        `Started job ${child.id}: the ${task.agent} agent works on the task on its own. ` +
        "Its answer is not sent to you; it is in its session (picklebot jobs show " +
        `${child.id}).`
      );
    }
    return outcomeOf(child, options);
  };
}

function childJob(task: SubagentTask, context: ToolContext) {
  if (context.jobId === undefined) {
    throw new ToolError("subagent: only a queued job can start a subagent job");
  }
  return {
    agentId: task.agent,
    sessionKey: task.sessionKey,
    dedupeKey: task.sessionKey,
    message: task.task,
    mode: "job" as const,
    replyTo: { kind: "silent" as const },
    parentId: context.jobId,
  };
}

/** The child's answer, its failure, or a wait for it to end. */
async function outcomeOf(child: Job, options: QueueSubagentsOptions): Promise<string> {
  const what = `the ${child.agentId} subagent (job ${child.id})`;
  if (child.state === "done") return (await finalText(child, options.history)) || "(no reply)";
  if (child.state === "failed") {
    throw new ToolError(`${what} failed: ${child.lastError ?? "no error recorded"}`);
  }
  if (child.state === "stopped") throw new ToolError(`${what} was stopped before it finished`);
  const deadline = child.createdAt + options.timeoutMs;
  if (options.clock.now() < deadline) {
    throw new ParkRequest({ kind: "children", jobIds: [child.id] }, deadline);
  }
  if (child.state === "running") await options.stopRunning?.(child.sessionKey);
  else await options.queue.requestStop(child.id);
  throw new ToolError(
    `${what} did not finish within ${Math.round(options.timeoutMs / 1000)} s and was stopped`,
  );
}

/** The final reply of a finished job: the last message of its session. */
async function finalText(job: Job, history: HistoryStore): Promise<string> {
  if (job.sessionId === null) return "";
  const last = (await history.loadContext(job.sessionId, 1)).at(-1);
  return last?.role === "assistant" ? textOf(last) : "";
}
