/** `picklebot cron list` and `picklebot cron run <id>`. */
import { Command } from "commander";
import { definedAgentIds } from "../agents/definition.js";
import { formatReplyTarget } from "../base/chat-address.js";
import { systemClock } from "../base/clock.js";
import { UserError } from "../base/errors.js";
import { findCron, loadWorkspaceCrons } from "../cron/admin.js";
import type { CronDirLoad } from "../cron/definition.js";
import { type CronRow, describeCrons } from "../cron/describe.js";
import { runCronNow } from "../cron/worker.js";
import type { CronStateStore } from "../ports/index.js";
import { type LoadedWorkspace, openWorkspace } from "./context.js";
import { formatTime, printable, printJson, printLine, printTable } from "./output.js";

/** The `cron` command group. */
export function cronCommand(): Command {
  const cron = new Command("cron").description("list the crons of the workspace, or run one now");
  cron
    .command("list")
    .description("list crons with their schedule and next run")
    .option("--json", "print JSON for scripts")
    .action(async (options: { json?: boolean }, command: Command) => {
      const context = await openWorkspace(command);
      try {
        const rows = await describeCronsNow(context, context.storage.cronState);
        if (options.json) return printJson(rows);
        if (rows.length === 0)
          return void printLine("no crons: drop a YAML file into crons/ (see crons/example.yaml)");
        printTable(
          ["id", "schedule", "timezone", "agent", "next run", "last run", "deliver to", "status"],
          rows.map((row) => [
            row.id,
            row.schedule,
            row.timezone,
            row.agent,
            formatTime(row.nextRunAt, row.timezone),
            formatTime(row.lastFiredAt, row.timezone),
            row.deliverTo,
            row.status,
          ]),
        );
      } finally {
        await context.close();
      }
    });
  cron
    .command("run")
    .description("enqueue one run of a cron now (a running server picks it up)")
    .argument("<id>", "cron id: the file name in crons/ without .yaml")
    .option("--json", "print the job as JSON")
    .option(
      "--batch",
      "send its model calls through the Message Batches API (half the price, answer within 24 h)",
    )
    .action(async (id: string, options: { json?: boolean; batch?: boolean }, command: Command) => {
      const context = await openWorkspace(command);
      try {
        if (context.config.queue.backend === "memory") {
          throw new UserError(
            "cron run needs a durable queue, but queue.backend is memory in picklebot.yaml; use sqlite (the default) or postgres",
          );
        }
        const cron = findCron(loadCrons(context), id);
        const job = await runCronNow(cron, context.storage.queue, systemClock, {
          maxAttempts: context.config.workers.max_attempts,
          batch: options.batch === true,
        });
        if (options.json) return printJson(job);
        const mode = job.batch ? ", through the batch API" : "";
        printLine(
          `enqueued job ${job.id} for cron ${id} (agent ${job.agentId}, reply to ${formatReplyTarget(job.replyTo)}${mode})`,
        );
      } finally {
        await context.close();
      }
    });
  return cron;
}

/**
 * Rows for every cron file, with next run times; each bad file goes to `warn` (Default:
 * a warning on stderr).
 */
export async function describeCronsNow(
  workspace: LoadedWorkspace,
  state: CronStateStore,
  warn: (error: UserError) => void = warnOnStderr,
): Promise<CronRow[]> {
  const { crons, errors } = loadCrons(workspace);
  for (const error of errors) warn(error);
  return describeCrons(crons, state, systemClock);
}

function warnOnStderr(error: UserError): void {
  process.stderr.write(`picklebot: warning: ${printable(error.message, { multiline: true })}\n`);
}

/** The workspace's crons, each checked against its agents (broken ones count as known). */
export function loadCrons({
  workspace,
  config,
  agents,
  brokenAgents,
}: Pick<LoadedWorkspace, "workspace" | "config" | "agents" | "brokenAgents">): CronDirLoad {
  return loadWorkspaceCrons(workspace, config, definedAgentIds(agents, brokenAgents));
}
