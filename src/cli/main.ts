/**
 * The `picklebot` command line: the program, its global options, and the sub-commands,
 * each imported only when it is needed; user errors print one sentence.
 */
import { Command, CommanderError } from "commander";
import { StorageUnavailableError, toError, UsageError, UserError } from "../base/errors.js";
import { packageInfo } from "../base/package-info.js";
import { printable } from "../base/printable.js";
import { holdYoungGeneration } from "../base/young-generation.js";

/**
 * The sub-commands, in the order `--help` lists them. Each module is imported only when
 * its command runs (or `--help` lists them all): `--version` loads none of them, and a
 * command loads only the libraries it uses (test/structure/lazy-imports.test.ts).
 */
const COMMANDS = {
  server: async () => {
    // Before the server's modules load: see src/base/young-generation.ts.
    holdYoungGeneration();
    return (await import("./server.js")).serverCommand();
  },
  chat: async () => (await import("./chat.js")).chatCommand(),
  cron: async () => (await import("./cron.js")).cronCommand(),
  jobs: async () => (await import("./jobs.js")).jobsCommand(),
  status: async () => (await import("./status.js")).statusCommand(),
  usage: async () => (await import("./usage.js")).usageCommand(),
  sessions: async () => (await import("./sessions.js")).sessionsCommand(),
  events: async () => (await import("./events.js")).eventsCommand(),
  dashboard: async () => (await import("./dashboard.js")).dashboardCommand(),
  pairing: async () => (await import("./pairing.js")).pairingCommand(),
  approvals: async () => (await import("./approvals.js")).approvalsCommand(),
  memory: async () => (await import("./memory.js")).memoryCommand(),
  cluster: async () => (await import("./cluster.js")).clusterCommand(),
  doctor: async () => (await import("./doctor.js")).doctorCommand(),
  backup: async () => (await import("./backup.js")).backupCommand(),
  restore: async () => (await import("./backup.js")).restoreCommand(),
  mcp: async () => (await import("./mcp.js")).mcpCommand(),
  init: async () => (await import("./init.js")).initCommand(),
} satisfies Record<string, () => Promise<Command>>;

type CommandName = keyof typeof COMMANDS;

/**
 * Builds the `picklebot` program with the sub-commands `args` (the arguments after the
 * script) can reach: the one it names, none for a bare `--version`, and every one
 * otherwise (help, no command, an unknown one: its error suggests the nearest names).
 */
export async function buildProgram(args: string[]): Promise<Command> {
  const program = new Command("picklebot")
    .description("Self-hosted personal AI agent server")
    .option(
      "-w, --workspace <dir>",
      "workspace folder (default: $PICKLEBOT_WORKSPACE or the current directory)",
    )
    .version(packageInfo().version, "-V, --version", "print the installed version")
    .showHelpAfterError("(run with --help for usage)")
    .exitOverride();
  const commands = await Promise.all(commandsFor(args).map((name) => COMMANDS[name]()));
  for (const command of commands) program.addCommand(withUsageErrors(command));
  return program;
}

/** The sub-commands to load for `args` (see {@link buildProgram}). */
function commandsFor(args: string[]): CommandName[] {
  const all = Object.keys(COMMANDS) as CommandName[];
  const named = firstOperand(args);
  if (named === undefined) {
    const versionOnly =
      args.some((arg) => arg === "-V" || arg === "--version") &&
      !args.some((arg) => arg === "-h" || arg === "--help");
    return versionOnly ? [] : all;
  }
  return Object.hasOwn(COMMANDS, named) ? [named as CommandName] : all;
}

/** The first argument that is not a global option (nor `--workspace`'s value). */
function firstOperand(args: string[]): string | undefined {
  for (let index = 0; index < args.length; index += 1) {
    const arg = args[index] as string;
    if (arg === "--") return args[index + 1];
    if (arg === "-w" || arg === "--workspace") index += 1;
    else if (!arg.startsWith("-")) return arg;
  }
  return undefined;
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
    await (await buildProgram(argv.slice(2))).parseAsync(argv);
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
