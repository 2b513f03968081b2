import { spawn } from "node:child_process";
import { z } from "zod";
import { ToolError } from "../../base/errors.js";
import type { Tool } from "../../ports/index.js";
import { defineTool } from "./define-tool.js";
import { OutputCollector } from "./output-collector.js";

/** Options of {@link createBashTool}. */
export interface BashToolOptions {
  /** A command running longer is killed (its whole process group). (Default: 60 000 ms) */
  timeoutMs?: number;
  /** Output kept: its head and tail, with a marker between. (Default: 32 KiB) */
  maxOutputBytes?: number;
  /** Environment of the command. (Default: `process.env` without secret-looking names) */
  env?: NodeJS.ProcessEnv;
}

/** Names of environment variables that hold credentials; `bash` does not see them. */
const SECRET_NAME = /TOKEN|SECRET|PASSWORD|PASSWD|API_KEY|PRIVATE_KEY|DATABASE_URL/i;

/**
 * Outer script: stderr joins stdout on one pipe so the output keeps its real order,
 * and `set --` gives the command empty positional parameters like `bash -c` would.
 */
const MERGED_OUTPUT_SCRIPT = 'exec 2>&1; eval "set --; $1"';

/** How long to wait for the pipes to close after bash exited (background children may hold them). */
const PIPE_GRACE_MS = 200;

const bashInput = z.object({
  command: z.string().min(1).describe("Shell command, run with bash -c in the workspace."),
});

/** `process.env` without variables whose names look like credentials. */
export function environmentWithoutSecrets(): NodeJS.ProcessEnv {
  return Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !SECRET_NAME.test(name)),
  );
}

/**
 * `bash {command}`: runs `bash -c command` in the workspace and returns stdout and
 * stderr in the order they were written, plus `[exit code N]` when it is not 0. The
 * timeout and the context's signal kill the command's whole process group.
 */
export function createBashTool(options: BashToolOptions = {}): Tool {
  const timeoutMs = options.timeoutMs ?? 60_000;
  const maxOutputBytes = options.maxOutputBytes ?? 32 * 1024;
  return defineTool({
    name: "bash",
    description:
      `Run a shell command with bash in the workspace folder (timeout ${Math.round(timeoutMs / 1000)} s). ` +
      "Returns stdout and stderr together, and the exit code when it is not 0.",
    input: bashInput,
    async run({ command }, context) {
      const run = await runCommand(command, {
        cwd: context.workspace,
        env: options.env ?? environmentWithoutSecrets(),
        timeoutMs,
        maxOutputBytes,
        signal: context.signal,
      });
      if (run.stoppedBy === "timeout") {
        throw new ToolError(
          `command timed out after ${timeoutMs / 1000} s and was killed; output so far:\n${run.output}`,
        );
      }
      if (run.stoppedBy === "abort") {
        throw new ToolError("command was stopped because the job was aborted", {
          cause: context.signal.reason,
        });
      }
      return formatResult(run);
    },
  });
}

interface CommandRun {
  output: string;
  exitCode: number | null;
  exitSignal: NodeJS.Signals | null;
  stoppedBy: "timeout" | "abort" | null;
}

interface RunOptions {
  cwd: string;
  env: NodeJS.ProcessEnv;
  timeoutMs: number;
  maxOutputBytes: number;
  signal: AbortSignal;
}

function runCommand(command: string, options: RunOptions): Promise<CommandRun> {
  if (options.signal.aborted) {
    return Promise.resolve({ output: "", exitCode: null, exitSignal: null, stoppedBy: "abort" });
  }
  return new Promise((resolve, reject) => {
    const child = spawn("bash", ["-c", MERGED_OUTPUT_SCRIPT, "bash", command], {
      cwd: options.cwd,
      env: options.env,
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    });
    const output = new OutputCollector(options.maxOutputBytes);
    child.stdout.on("data", (chunk: Buffer) => output.add(chunk));
    child.stderr.on("data", (chunk: Buffer) => output.add(chunk));
    let stoppedBy: CommandRun["stoppedBy"] = null;
    const stop = (reason: "timeout" | "abort") => {
      stoppedBy ??= reason;
      killProcessGroup(child.pid);
    };
    const timer = setTimeout(() => stop("timeout"), options.timeoutMs);
    const onAbort = () => stop("abort");
    options.signal.addEventListener("abort", onAbort, { once: true });
    let graceTimer: NodeJS.Timeout | undefined;
    let finished = false;
    const finish = (exitCode: number | null, exitSignal: NodeJS.Signals | null) => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      clearTimeout(graceTimer);
      options.signal.removeEventListener("abort", onAbort);
      child.stdout.destroy();
      child.stderr.destroy();
      resolve({ output: output.text(), exitCode, exitSignal, stoppedBy });
    };
    child.once("error", (error) => {
      clearTimeout(timer);
      options.signal.removeEventListener("abort", onAbort);
      reject(new ToolError(`could not start bash: ${error.message}`, { cause: error }));
    });
    child.once("close", finish);
    child.once("exit", (code, signal) => {
      graceTimer = setTimeout(() => finish(code, signal), PIPE_GRACE_MS);
    });
  });
}

function killProcessGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, "SIGKILL");
  } catch {
    // The group is already gone.
  }
}

function formatResult(run: CommandRun): string {
  const output = run.output === "" ? "(no output)" : run.output.replace(/\n$/, "");
  if (run.exitSignal !== null) return `${output}\n[killed by ${run.exitSignal}]`;
  if (run.exitCode !== 0) return `${output}\n[exit code ${run.exitCode}]`;
  return output;
}
