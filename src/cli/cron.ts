/** `picklebot cron list` and `picklebot cron run <id>`. */
import { join } from "node:path";
import { Command } from "commander";
import { formatReplyTarget } from "../base/chat-address.js";
import { systemClock } from "../base/clock.js";
import { UserError } from "../base/errors.js";
import type { Config } from "../config/index.js";
import type { CronStateStore } from "../ports/index.js";
import { loadCronDir } from "../server/cron/definition.js";
import { describeCronFolder } from "../server/cron/describe.js";
import { type CronRow, runCronNow } from "../server/cron/worker.js";
import { openWorkspace } from "./context.js";
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
        const rows = await describeCronsNow(
          context.workspace,
          context.config,
          context.storage.cronState,
        );
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
            formatTime(row.nextRunAt),
            formatTime(row.lastFiredAt),
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
        const { crons, errors } = loadCronDir(
          cronDir(context.workspace),
          cronDefaults(context.config),
        );
        const cron = crons.find((candidate) => candidate.id === id);
        if (!cron)
          throw unknownCron(
            id,
            crons.map((c) => c.id),
            errors,
          );
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

/** Rows for every cron file, with next run times; bad files are reported on stderr. */
export async function describeCronsNow(
  workspace: string,
  config: Config,
  state: CronStateStore,
): Promise<CronRow[]> {
  const { rows, errors } = await describeCronFolder(workspace, config, state, systemClock);
  for (const error of errors)
    process.stderr.write(`picklebot: warning: ${printable(error.message, { multiline: true })}\n`);
  return rows;
}

function cronDir(workspace: string): string {
  return join(workspace, "crons");
}

function cronDefaults(config: Config) {
  return { agentId: config.default_agent, timezone: config.timezone };
}

function unknownCron(id: string, known: string[], errors: UserError[]): UserError {
  const broken = errors.find((error) => error.context.file?.toString().includes(`${id}.yaml`));
  if (broken) return broken;
  const list = known.length > 0 ? known.join(", ") : "none";
  return new UserError(
    `no cron "${id}" in crons/ (known: ${list}); the id is the file name without .yaml`,
  );
}
