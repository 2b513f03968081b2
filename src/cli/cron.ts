/** `picklebot cron list` and `picklebot cron run <id>`. */
import { Command } from "commander";
import { definedAgentIds } from "../agents/definition.js";
import { formatReplyTarget } from "../base/chat-address.js";
import { systemClock } from "../base/clock.js";
import { UserError } from "../base/errors.js";
import { findCron, loadWorkspaceCrons } from "../cron/admin.js";
import type { CronDirLoad } from "../cron/definition.js";
import { type CronRow, describeCrons, describeSchedules } from "../cron/describe.js";
import { runCronNow } from "../cron/worker.js";
import type { CronStateStore } from "../ports/index.js";
import { type LoadedWorkspace, openWorkspace, type WorkspaceContext } from "./context.js";
import { formatTime, printable, printJson, printLine, printTable } from "./output.js";

/** The `cron` command group. */
export function cronCommand(): Command {
  const cron = new Command("cron").description("list the crons of the workspace, or run one now");
  cron
    .command("list")
    .description(
      "list crons with their schedule and next run, then the reminders agents set up in chats",
    )
    .option("--json", "print JSON for scripts (the crons; with --schedules, the reminders)")
    .option("--schedules", "list only the reminders and recurring tasks set up in chats")
    .action(async (options: { json?: boolean; schedules?: boolean }, command: Command) => {
      const context = await openWorkspace(command);
      try {
        if (options.schedules) return await listSchedules(context, options.json === true);
        const rows = await describeCronsNow(context, context.storage.cronState);
        if (options.json) return printJson(rows);
        listCrons(rows);
        await listSchedules(context, false);
      } finally {
        await context.close();
      }
    });
  cron
    .command("cancel")
    .description("cancel a reminder or recurring task an agent set up in a chat")
    .argument("<id>", "schedule id, as `cron list` shows it")
    .action(async (id: string, _options: unknown, command: Command) => {
      const context = await openWorkspace(command);
      try {
        const cancelled = await context.storage.schedules.cancel(id, systemClock.now());
        if (cancelled === null) {
          throw new UserError(
            `no active schedule "${id}"; \`picklebot cron list --schedules\` shows the active ones`,
          );
        }
        printLine(
          `cancelled ${id} (${cancelled.kind} "${printable(cancelled.text)}" for ${formatReplyTarget(cancelled.chat)})`,
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

/** The cron table, or how to add a cron when there is none. */
function listCrons(rows: CronRow[]): void {
  if (rows.length === 0) {
    printLine("no crons: drop a YAML file into crons/ (see crons/example.yaml)");
    return;
  }
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
}

/** The active schedules agents set up in chats (nothing when there are none, but in JSON). */
async function listSchedules(context: WorkspaceContext, json: boolean): Promise<void> {
  const rows = await describeSchedules(context.storage.schedules, systemClock);
  if (json) return printJson(rows);
  if (rows.length === 0) return;
  printLine("");
  printLine("reminders and recurring tasks set up in chats (cancel: picklebot cron cancel <id>)");
  printTable(
    ["id", "chat", "created by", "what", "repeat", "next run", "last run"],
    rows.map((row) => [
      row.id,
      row.chat,
      row.createdBy,
      `${row.kind}: ${row.text}`,
      row.repeat ?? "once",
      formatTime(row.nextRunAt, row.timezone),
      formatTime(row.lastFiredAt, row.timezone),
    ]),
  );
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
