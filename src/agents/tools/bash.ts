import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { z } from "zod";
import { ToolError } from "../../base/errors.js";
import type { Tool } from "../../ports/index.js";
import { defineTool } from "./define-tool.js";
import { OutputCollector } from "./output-collector.js";
import { processCgroup } from "./process-cgroup.js";
import {
  type BashSandboxOptions,
  BWRAP_HELP,
  bwrapArguments,
  minimalEnvironment,
  probeBubblewrap,
} from "./sandbox.js";

/** Options of {@link createBashTool}. */
export interface BashToolOptions {
  /** A command running longer is killed (its whole process group). (Default: 60 000 ms) */
  timeoutMs?: number;
  /** Output kept: its head and tail, with a marker between. (Default: 32 KiB) */
  maxOutputBytes?: number;
  /**
   * Environment of an unsandboxed command (`sandbox: none`). (Default: `process.env`
   * without secret-looking names; under bwrap always PATH, HOME and LANG only)
   */
  env?: NodeJS.ProcessEnv;
  /** Where the command runs: bwrap, or nothing when the owner opted out. (Default: bwrap) */
  sandbox?: BashSandboxOptions;
  /** Processes (threads included) the command may run at once, under bwrap. (Default: 256) */
  maxProcesses?: number;
  /** Largest file the command may write. (Default: 1 GiB) */
  maxFileBytes?: number;
}

/** Variable that marks an unsandboxed command's processes, to find the ones that left its group. */
const CALL_TAG = "PICKLEBOT_BASH_CALL";

/** Names of environment variables that hold credentials; `bash` does not see them. */
const SECRET_NAME = /TOKEN|SECRET|PASSWORD|PASSWD|API_KEY|PRIVATE_KEY|DATABASE_URL/i;

/**
 * Outer script: the limits, then stderr joins stdout on one pipe so the output keeps its
 * real order, and `set --` gives the command empty positional parameters like `bash -c`.
 */
function outerScript(limits: string[]): string {
  return `${limits.map((limit) => `ulimit ${limit} || exit 126; `).join("")}exec 2>&1; eval "set --; $1"`;
}

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
  const sandbox = options.sandbox ?? {};
  const fileBlocks = Math.max(1, Math.floor((options.maxFileBytes ?? 2 ** 30) / 1024));
  const maxProcesses = options.maxProcesses ?? 256;
  return defineTool({
    name: "bash",
    description:
      `Run a shell command with bash in the workspace folder (timeout ${Math.round(timeoutMs / 1000)} s). ` +
      "Returns stdout and stderr together, and the exit code when it is not 0.",
    input: bashInput,
    async run({ command }, context) {
      const run = await runCommand({
        ...(sandbox.kind === "none"
          ? unsandboxed(command, options.env, [`-f ${fileBlocks}`])
          : sandboxed(command, context.workspace, sandbox, maxProcesses, [
              `-u ${maxProcesses}`,
              `-f ${fileBlocks}`,
            ])),
        cwd: context.workspace,
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

/** A process to start: bwrap around bash, or bash alone. */
interface Launch {
  file: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  /** Set on an unsandboxed command: the value of {@link CALL_TAG} its processes inherit. */
  tag?: string;
  /** Runs once the command and everything it started are gone. */
  cleanup?: () => void;
}

/**
 * bash under bwrap, started with the minimal environment itself. As root, where
 * `ulimit -u` does not bind, bwrap starts inside a pids cgroup of its own (a shell joins
 * it first, then execs bwrap, so no process escapes the limit).
 *
 * @throws ToolError saying how to install bubblewrap or opt out, when it cannot run here.
 */
function sandboxed(
  command: string,
  workspace: string,
  sandbox: BashSandboxOptions,
  maxProcesses: number,
  limits: string[],
): Launch {
  const probe = probeBubblewrap(sandbox.bwrapPath);
  if (!probe.usable) {
    throw new ToolError(`bash is unavailable: ${probe.problem}. To fix it, ${BWRAP_HELP}.`);
  }
  const bash = ["bash", "-c", outerScript(limits), "bash", command];
  const file = sandbox.bwrapPath ?? "bwrap";
  const args = bwrapArguments(workspace, sandbox, bash);
  const cgroup = process.getuid?.() === 0 ? processCgroup(maxProcesses, randomUUID()) : null;
  if (!cgroup) return { file, args, env: minimalEnvironment() };
  return {
    file: "/bin/sh",
    args: ["-c", 'echo $$ > "$0" && exec "$@"', cgroup.procs, file, ...args],
    env: minimalEnvironment(),
    cleanup: cgroup.remove,
  };
}

/** bash alone (`sandbox: none`), its processes tagged so that stragglers can be found. */
function unsandboxed(
  command: string,
  env: NodeJS.ProcessEnv | undefined,
  limits: string[],
): Launch {
  const tag = randomUUID();
  return {
    file: "bash",
    args: ["-c", outerScript(limits), "bash", command],
    env: { ...(env ?? environmentWithoutSecrets()), [CALL_TAG]: tag },
    tag,
  };
}

interface RunOptions extends Launch {
  cwd: string;
  timeoutMs: number;
  maxOutputBytes: number;
  signal: AbortSignal;
}

function runCommand(options: RunOptions): Promise<CommandRun> {
  if (options.signal.aborted) {
    return Promise.resolve({ output: "", exitCode: null, exitSignal: null, stoppedBy: "abort" });
  }
  return new Promise((resolve, reject) => {
    const child = spawn(options.file, options.args, {
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
      killProcessGroup(child.pid);
      if (options.tag !== undefined) killTagged(options.tag);
      options.cleanup?.();
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

/**
 * Kills the processes whose environment holds `PICKLEBOT_BASH_CALL=<tag>`: an unsandboxed
 * command's children that left its process group (`setsid`). One that also cleared its
 * environment cannot be found this way.
 */
function killTagged(tag: string): void {
  const marker = `${CALL_TAG}=${tag}\0`;
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/environ`, "latin1").includes(marker)) {
        process.kill(Number(entry), "SIGKILL");
      }
    } catch {
      // Gone already, or not ours to read.
    }
  }
}

function formatResult(run: CommandRun): string {
  const output = run.output === "" ? "(no output)" : run.output.replace(/\n$/, "");
  if (run.exitSignal !== null) return `${output}\n[killed by ${run.exitSignal}]`;
  if (run.exitCode !== 0) return `${output}\n[exit code ${run.exitCode}]`;
  return output;
}
