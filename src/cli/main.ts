import { Command, CommanderError } from "commander";
import { StorageUnavailableError, toError, UsageError, UserError } from "../base/errors.js";
import { packageInfo } from "../base/package-info.js";
import { printable } from "../base/printable.js";
import { approvalsCommand } from "./approvals.js";
import { backupCommand, restoreCommand } from "./backup.js";
import { chatCommand } from "./chat.js";
import { clusterCommand } from "./cluster.js";
import { cronCommand } from "./cron.js";
import { doctorCommand } from "./doctor.js";
import { eventsCommand } from "./events.js";
import { initCommand } from "./init.js";
import { jobsCommand } from "./jobs.js";
import { mcpCommand } from "./mcp.js";
import { pairingCommand } from "./pairing.js";
import { serverCommand } from "./server.js";
import { sessionsCommand } from "./sessions.js";
import { statusCommand } from "./status.js";
import { usageCommand } from "./usage.js";

/** Builds the `picklebot` program with every sub-command. */
export function buildProgram(): Command {
  const program = new Command("picklebot")
    .description("Self-hosted personal AI agent server")
    .option(
      "-w, --workspace <dir>",
      "workspace folder (default: $PICKLEBOT_WORKSPACE or the current directory)",
    )
    .version(packageInfo().version, "-V, --version", "print the installed version")
    .showHelpAfterError("(run with --help for usage)")
    .exitOverride();
  for (const command of [
    serverCommand(),
    chatCommand(),
    cronCommand(),
    jobsCommand(),
    statusCommand(),
    usageCommand(),
    sessionsCommand(),
    eventsCommand(),
    pairingCommand(),
    approvalsCommand(),
    clusterCommand(),
    doctorCommand(),
    backupCommand(),
    restoreCommand(),
    mcpCommand(),
    initCommand(),
  ]) {
    program.addCommand(withUsageErrors(command));
  }
  return program;
}

/** Usage errors exit 2 with a hint, on a command and every sub-command below it. */
function withUsageErrors(command: Command): Command {
  command.exitOverride().showHelpAfterError("(run with --help for usage)");
  for (const sub of command.commands) withUsageErrors(sub);
  return command;
}

/** Runs the CLI; user errors print one sentence and exit 1, usage errors exit 2. */
export async function main(argv: string[]): Promise<void> {
  try {
    await buildProgram().parseAsync(argv);
  } catch (thrown) {
    process.exitCode = reportError(thrown);
  }
}

function reportError(thrown: unknown): number {
  if (thrown instanceof CommanderError) {
    // commander already printed the message (or the help / version text).
    return thrown.exitCode === 0 ? 0 : 2;
  }
  const error = toError(thrown);
  if (error instanceof UserError) {
    process.stderr.write(`picklebot: ${printable(error.message, { multiline: true })}\n`);
    return error instanceof UsageError ? 2 : 1;
  }
  // A busy, full or failing database comes wrapped (StorageUnavailableError), others bare.
  const failed = error instanceof StorageUnavailableError ? toError(error.cause) : error;
  if (failed.name === "SqliteError") {
    // Past the checks of opening: the file changed under us, or the disk is full.
    const code = String((failed as { code?: unknown }).code ?? "");
    process.stderr.write(
      `picklebot: the database failed (${printable(failed.message)}, ${code}); run picklebot doctor to check the workspace's history/ and its database.\n`,
    );
    return 1;
  }
  const details = printable(failed.stack ?? failed.message, { multiline: true });
  process.stderr.write(`picklebot: unexpected error: ${details}\n`);
  return 1;
}

await main(process.argv);
