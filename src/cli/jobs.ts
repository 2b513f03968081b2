/** `picklebot jobs`: inspect the queue and requeue failed (or orphaned) jobs. */
import { Command, InvalidArgumentError } from "commander";
import { type JobTurn, readTranscript, turnOfJob } from "../agents/transcript.js";
import { formatReplyTarget } from "../base/chat-address.js";
import { describeJobState, UserError } from "../base/errors.js";
import { truncate } from "../base/printable.js";
import { JOB_STATES, type Job, type JobState, RESUME_MARKER } from "../ports/index.js";
import { acquireWorkspaceLock, type WorkspaceLock } from "../storage/workspace-lock.js";
import { openWorkspace, type WorkspaceContext } from "./context.js";
import { formatTime, parseLimit, printJson, printLine, printTable } from "./output.js";
import { printIndented } from "./transcript-print.js";

/**
 * Requeues a job marked running when no server can be running it: in SQLite mode, when
 * this command can take the workspace lock. A server holding it refuses, with its pid.
 */
async function requeueOrphan(context: WorkspaceContext, job: Job): Promise<boolean> {
  if (context.storage.cluster) {
    throw new UserError(
      `job ${job.id} is running on ${job.lockedBy}; in distributed mode the leader requeues the jobs of an instance that stops sending heartbeats (cluster.instance_ttl_s)`,
    );
  }
  let lock: WorkspaceLock;
  try {
    lock = acquireWorkspaceLock(context.config.history.path);
  } catch (thrown) {
    const why = thrown instanceof UserError ? thrown.message : String(thrown);
    throw new UserError(
      `job ${job.id} is running and ${why.replace(/; stop it first.*$/, "")}; stop the job with /stop in its chat, or stop the server and retry`,
    );
  }
  try {
    return (await context.storage.queue.requeueRunning({ id: job.id })) > 0;
  } finally {
    lock.release();
  }
}

/** The `jobs` command group. */
export function jobsCommand(): Command {
  const jobs = new Command("jobs")
    .description(
      "list jobs in the queue (newest first); see also: jobs show, jobs retry, jobs cancel",
    )
    .option("--state <state>", `only jobs in this state (${JOB_STATES.join(" | ")})`, parseState)
    .option("--limit <n>", "at most this many jobs (default: 50)", parseLimit)
    .option("--json", "print JSON for scripts")
    .action(
      async (options: { state?: JobState; limit?: number; json?: boolean }, command: Command) => {
        const context = await openWorkspace(command);
        try {
          const list = await context.storage.queue.list({
            state: options.state,
            limit: options.limit ?? 50,
          });
          if (options.json) return printJson(list);
          if (list.length === 0)
            return void printLine(`no ${options.state ?? ""} jobs`.replace("  ", " "));
          printTable(
            ["id", "state", "agent", "session", "attempts", "run at", "last error"],
            list.map((job) => [
              job.id,
              describeJobState(job),
              job.agentId,
              job.sessionKey,
              `${job.attempts}/${job.maxAttempts}`,
              formatTime(job.runAt),
              truncate(job.lastError ?? "", 60),
            ]),
          );
        } finally {
          await context.close();
        }
      },
    );
  jobs
    .command("show")
    .description("show one job with its error history")
    .argument("<id>", "job id")
    .option("--json", "print JSON for scripts")
    .action(async (id: string, _options: unknown, command: Command) => {
      // `jobs` has a --json of its own that commander fills first: read both.
      const { json } = command.optsWithGlobals<{ json?: boolean }>();
      const context = await openWorkspace(command);
      try {
        const job = await context.storage.queue.get(id);
        if (!job) throw new UserError(`no job "${id}"; list them with picklebot jobs`);
        const subagents = await context.storage.queue.list({ parentId: id, limit: 1000 });
        const transcript = job.sessionId
          ? await readTranscript(context.storage, job.sessionId)
          : null;
        const turn = transcript ? turnOfJob(transcript, id) : { message: null, reply: null };
        if (json) {
          const subagentJobs = subagents.map((child) => child.id);
          return printJson({ ...job, subagentJobs, sentMessage: turn.message, reply: turn.reply });
        }
        printJob(job, subagents, turn);
      } finally {
        await context.close();
      }
    });
  jobs
    .command("retry")
    .description(
      "requeue a failed job with a fresh attempt budget, or a job left running by a server that is gone",
    )
    .argument("<id>", "job id (see picklebot jobs --state failed)")
    .option("--json", "print the requeued job as JSON")
    .action(async (id: string, _options: unknown, command: Command) => {
      const { json } = command.optsWithGlobals<{ json?: boolean }>();
      const context = await openWorkspace(command);
      try {
        const job = await context.storage.queue.get(id);
        if (!job)
          throw new UserError(
            `no job "${id}"; list failed jobs with picklebot jobs --state failed`,
          );
        const requeued =
          job.state === "running"
            ? await requeueOrphan(context, job)
            : await context.storage.queue.retryFailed(id);
        if (!requeued) throw new UserError(notRetried(job));
        if (json) return printJson(await context.storage.queue.get(id));
        printLine(`requeued job ${id}; a running server picks it up`);
      } finally {
        await context.close();
      }
    });
  jobs
    .command("cancel")
    .description(
      "stop a queued or waiting job (and its subagent jobs); a running one stops with /stop in its chat",
    )
    .argument("<id>", "job id (see picklebot jobs --state waiting)")
    .action(async (id: string, _options: unknown, command: Command) => {
      const context = await openWorkspace(command);
      try {
        const job = await context.storage.queue.get(id);
        if (!job) throw new UserError(`no job "${id}"; list them with picklebot jobs`);
        if (!(await context.storage.queue.requestStop(id))) {
          throw new UserError(
            job.state === "running"
              ? `job ${id} is running; stop it with /stop in its chat, or Ctrl+C the server`
              : `job ${id} is ${job.state}; only queued and waiting jobs can be cancelled`,
          );
        }
        printLine(`job ${id} will stop: a running server ends it (and its subagent jobs) at once`);
      } finally {
        await context.close();
      }
    });
  return jobs;
}

/** Why `jobs retry` leaves a job as it is. */
function notRetried(job: Job): string {
  const why =
    job.state === "stopped"
      ? "a stopped job is not run again: send its message again (for a cron: picklebot cron run <id>)"
      : "only failed jobs, and running jobs no server runs, can be retried";
  return `job ${job.id} is ${job.state}; ${why}`;
}

function printJob(job: Job, subagents: Job[], turn: JobTurn): void {
  const fields: [string, string][] = [
    ["id", job.id],
    ["state", describeJobState(job)],
    ["agent", job.agentId],
    ["session key", job.sessionKey],
    ["session id", job.sessionId ?? "-"],
    ["mode", job.mode],
    ["reply to", formatReplyTarget(job.replyTo)],
    ["attempts", `${job.attempts}/${job.maxAttempts}`],
    ["run at", formatTime(job.runAt)],
    ["created", formatTime(job.createdAt)],
    ...(job.parentId ? [["parent job", job.parentId] as [string, string]] : []),
    ...subagents.map((child): [string, string] => [
      "subagent job",
      `${child.id} (${child.agentId}, ${child.state})`,
    ]),
    ["message", job.message === RESUME_MARKER ? (turn.message ?? job.message) : job.message],
  ];
  for (const [name, value] of fields) printLine(`${name.padEnd(12)} ${value}`);
  for (const error of job.errors) {
    printLine(`error        attempt ${error.attempt} at ${formatTime(error.at)}: ${error.message}`);
  }
  if (turn.reply !== null) {
    printLine("reply");
    printIndented(turn.reply);
  }
  if (job.sessionId) printLine(`transcript   picklebot sessions show ${job.sessionId}`);
}

function parseState(value: string): JobState {
  if ((JOB_STATES as readonly string[]).includes(value)) return value as JobState;
  throw new InvalidArgumentError(`expected one of ${JOB_STATES.join(", ")}`);
}
