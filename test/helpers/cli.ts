import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { hangGuard } from "./wait.js";

/** The built CLI entry point (dist/ is built by the global setup). */
export const CLI = fileURLToPath(new URL("../../bin/picklebot.js", import.meta.url));

/**
 * The built `/events` fan-out process, for tests that run the server's TypeScript sources
 * (which cannot fork a `.ts` file).
 */
export const FANOUT_PROCESS = fileURLToPath(
  new URL("../../dist/events/fanout-process.js", import.meta.url),
);

/** Whether process `pid` runs (a zombie, exited but not yet reaped, does not). */
export function isRunning(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return false;
  }
}

/**
 * Whether `pid` is still an `/events` fan-out process: running, and still running
 * fanout-process.js (a long run's pids wrap around and come back as other processes).
 */
export function isFanoutRunning(pid: number): boolean {
  try {
    return (
      isRunning(pid) && readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("fanout-process.js")
    );
  } catch {
    return false;
  }
}

/** The pids of the `/events` fan-out processes `parent` (default: this process) has forked. */
export function fanoutProcesses(parent = process.pid): number[] {
  const found = spawnSync("pgrep", ["-P", String(parent), "-f", "fanout-process.js"], {
    encoding: "utf8",
  });
  return found.stdout.split("\n").filter(Boolean).map(Number);
}

/** What a finished CLI run printed. */
export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Options of {@link runCli}. */
export interface RunOptions {
  cwd?: string;
  env?: Record<string, string | undefined>;
  /** Written to stdin, which is then closed. */
  input?: string;
  timeoutMs?: number;
  /** Run as this user and group (the test process must be root to switch). */
  user?: { uid: number; gid: number };
  /**
   * Run on a terminal of its own (a pseudo-terminal from util-linux's `script`), as an
   * owner at a shell: stdout and stderr both arrive on stdout, lines ending in `\r\n`.
   */
  terminal?: boolean;
}

/** Environment for child processes: no real API keys or tokens leak into tests. */
export function childEnv(extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...extra };
  for (const name of [
    "ANTHROPIC_API_KEY",
    "TELEGRAM_BOT_TOKEN",
    "DISCORD_BOT_TOKEN",
    "PICKLEBOT_WORKSPACE",
  ]) {
    if (!(name in extra)) delete env[name];
  }
  return env;
}

/** Starts `picklebot <args>` as a child process. */
export function startCli(args: string[], options: RunOptions = {}): ChildProcess {
  const argv = [process.execPath, CLI, ...args];
  const [file = "", ...rest] = options.terminal ? onTerminal(argv) : argv;
  return spawn(file, rest, {
    cwd: options.cwd,
    env: childEnv(options.env),
    stdio: ["pipe", "pipe", "pipe"],
    ...options.user,
  });
}

/** `script` running `argv` on a pseudo-terminal, returning its exit code. */
function onTerminal(argv: string[]): string[] {
  const quoted = argv.map((arg) => `'${arg.replaceAll("'", "'\\''")}'`).join(" ");
  return ["script", "--quiet", "--return", "--command", `exec ${quoted}`, "/dev/null"];
}

/** Runs `picklebot <args>` to completion and collects its output. */
export function runCli(args: string[], options: RunOptions = {}): Promise<CliResult> {
  const child = startCli(args, options);
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (chunk: Buffer) => (stdout += chunk));
  child.stderr?.on("data", (chunk: Buffer) => (stderr += chunk));
  child.stdin?.end(options.input ?? "");
  const timer = setTimeout(() => child.kill("SIGKILL"), hangGuard(options.timeoutMs ?? 20_000));
  return new Promise((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Whether a process with this id exists (signal 0 checks without sending anything). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
