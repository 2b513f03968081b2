/**
 * Where a `bash` command runs: inside bubblewrap (`bwrap`), or, when the owner opted out
 * with `tools.bash.sandbox: none`, directly as a child of the server.
 *
 * Under bwrap the command gets new PID, IPC, UTS (and, unless the agent may use the
 * network, network) namespaces, its own `/proc`, a private `/tmp`, the system folders
 * read-only, the workspace read-write except the protected paths (the history folder, with
 * the dashboard's access token, hidden wherever it is), and an environment of
 * PATH, HOME and LANG only. bwrap itself is started with that same environment, so even
 * `/proc/1/environ` inside shows nothing of the server's. An MCP server's `env` values are
 * never bwrap arguments (any local user can read a command line): bwrap is started with
 * them in its environment and passes that on. When the command's shell exits,
 * bwrap (PID 1 of the namespace) exits and the kernel kills everything left in it.
 */

import { spawnSync } from "node:child_process";
import { existsSync, lstatSync, mkdirSync, readlinkSync } from "node:fs";
import path from "node:path";
import { UserError } from "../../base/errors.js";
import { CONTROL_PLANE_FOLDERS, isAtOrBelow, SECRET_FILES } from "./protected-paths.js";

/** `tools.bash.sandbox`: what runs a command. */
export type SandboxKind = "bwrap" | "none";

/** How `bash` is confined, from `tools.bash` of picklebot.yaml and the agent's AGENT.md. */
export interface BashSandboxOptions {
  /** (Default: "bwrap"; "none" only when the owner set it) */
  kind?: SandboxKind;
  /** The command may open network connections (bwrap only). (Default: false) */
  network?: boolean;
  /** Absolute history folder, hidden from the command. (Default: `<workspace>/history`) */
  historyPath?: string;
  /** The bwrap executable. (Default: "bwrap" on the PATH) */
  bwrapPath?: string;
  /**
   * The command inherits bwrap's own environment, which the caller spawns bwrap with;
   * how an MCP server's `env` values (tokens) reach it without being in any command line.
   * (Default: false: bwrap clears its environment and sets PATH, HOME and LANG)
   */
  inheritEnvironment?: boolean;
}

/** PATH inside the sandbox (and of an unsandboxed command). */
const SAFE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/** System folders bound read-only (or recreated as the same symlink) when they exist. */
const SYSTEM_FOLDERS = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc"];

/** How to make `bash` work again when bubblewrap cannot be used. */
export const BWRAP_HELP =
  "install bubblewrap (Debian/Ubuntu: sudo apt-get install bubblewrap; Fedora: sudo dnf install bubblewrap), " +
  "or run bash without a sandbox by setting tools.bash.sandbox: none in picklebot.yaml " +
  "(docs/operations/security.md says what that gives up)";

/** Whether bwrap can run here, and why not. */
export interface BubblewrapProbe {
  usable: boolean;
  /** `bubblewrap 0.8.0`, when it ran. */
  version?: string;
  /** Why it cannot be used (missing, or namespaces refused). */
  problem?: string;
}

const probes = new Map<string, BubblewrapProbe>();

/**
 * Runs bwrap once with the namespaces a command gets; the answer is kept for the life of
 * the process (installing bubblewrap takes a restart).
 */
export function probeBubblewrap(bwrapPath = "bwrap"): BubblewrapProbe {
  const known = probes.get(bwrapPath);
  if (known) return known;
  const flags = ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-net"];
  const run = spawnSync(
    bwrapPath,
    ["--ro-bind", "/", "/", ...flags, "--proc", "/proc", "--dev", "/dev", "true"],
    { encoding: "utf8", timeout: 5000, env: minimalEnvironment() },
  );
  let probe: BubblewrapProbe;
  if (run.error) {
    const missing = (run.error as NodeJS.ErrnoException).code === "ENOENT";
    probe = {
      usable: false,
      problem: missing ? `${bwrapPath} is not installed` : run.error.message,
    };
  } else if (run.status !== 0) {
    const said = run.stderr.trim().split("\n")[0] || `exit code ${run.status}`;
    probe = { usable: false, problem: `${bwrapPath} cannot create namespaces here (${said})` };
  } else {
    // Found through the same PATH as the probe (the minimal one), or it may not be found.
    const version = spawnSync(bwrapPath, ["--version"], {
      encoding: "utf8",
      env: minimalEnvironment(),
    }).stdout?.trim();
    probe = { usable: true, version: version || "bubblewrap" };
  }
  probes.set(bwrapPath, probe);
  return probe;
}

/** What `picklebot status` says about bash: the sandbox that applies, in one line. */
export function describeBashSandbox(options: BashSandboxOptions = {}): string {
  if (options.kind === "none") {
    return "none (tools.bash.sandbox: none): bash runs unconfined as the server's user";
  }
  const probe = probeBubblewrap(options.bwrapPath);
  if (!probe.usable) return `unavailable: bash calls fail (${probe.problem}); ${BWRAP_HELP}`;
  return `bwrap (${probe.version}), network ${options.network ? "on" : "off"} by default`;
}

/** The environment of a command: PATH, HOME and LANG, nothing from the server. */
export function minimalEnvironment(home = "/tmp"): Record<string, string> {
  return { PATH: SAFE_PATH, HOME: home, LANG: process.env.LANG || "C.UTF-8" };
}

/**
 * The bwrap arguments that run `command...` in `workspace`. Protected paths that do not
 * exist yet are created empty first (so a command cannot create them either).
 */
export function bwrapArguments(
  workspace: string,
  options: BashSandboxOptions,
  command: string[],
): string[] {
  const args = [
    "--unshare-pid",
    "--unshare-ipc",
    "--unshare-uts",
    ...(options.network ? [] : ["--unshare-net"]),
    "--die-with-parent",
    "--new-session",
    "--cap-drop",
    "ALL",
    "--hostname",
    "picklebot-sandbox",
    ...systemMounts(),
    "--proc",
    "/proc",
    "--dev",
    "/dev",
    "--tmpfs",
    "/tmp",
    "--bind",
    workspace,
    workspace,
    ...protectedMounts(workspace, options.historyPath ?? path.join(workspace, "history")),
    "--chdir",
    workspace,
    ...(options.inheritEnvironment ? [] : clearedEnvironment()),
  ];
  return [...args, "--", ...command];
}

/** bwrap's flags for the minimal environment; names and values here are not secret. */
function clearedEnvironment(): string[] {
  const variables = Object.entries(minimalEnvironment());
  return ["--clearenv", ...variables.flatMap(([name, value]) => ["--setenv", name, value])];
}

function systemMounts(): string[] {
  return SYSTEM_FOLDERS.flatMap((folder) => {
    if (!existsSync(folder)) return [];
    if (lstatSync(folder).isSymbolicLink()) return ["--symlink", readlinkSync(folder), folder];
    return ["--ro-bind", folder, folder];
  });
}

/** Hidden files become an unreadable device node, hidden folders an empty tmpfs. */
function protectedMounts(workspace: string, historyPath: string): string[] {
  const mounts: string[] = [];
  for (const name of SECRET_FILES) {
    const file = path.join(workspace, name);
    if (existsSync(file) && lstatSync(file).isDirectory()) mounts.push("--tmpfs", file);
    else mounts.push("--ro-bind", "/dev/null", file);
  }
  mounts.push(...historyMounts(workspace, historyPath));
  for (const name of CONTROL_PLANE_FOLDERS) {
    const folder = path.join(workspace, name);
    mkdirSync(folder, { recursive: true });
    mounts.push("--ro-bind", folder, folder);
  }
  return mounts;
}

/**
 * The history folder (database, the dashboard's access token) as an empty read-only
 * tmpfs, wherever it is: in the workspace, or outside it (where a system folder could
 * show it). One outside that does not exist yet has nothing to hide.
 *
 * @throws UserError when the history folder holds the workspace: hiding it would hide
 * the workspace too.
 */
function historyMounts(workspace: string, historyPath: string): string[] {
  if (isAtOrBelow(historyPath, workspace)) {
    throw new UserError(
      `history.path ${historyPath} holds the workspace, so the sandbox cannot hide it (the database, the dashboard's access token) from commands and MCP servers; set history.path to a folder of its own in picklebot.yaml, e.g. history`,
    );
  }
  if (isAtOrBelow(workspace, historyPath)) mkdirSync(historyPath, { recursive: true });
  else if (!existsSync(historyPath)) return [];
  return ["--tmpfs", historyPath, "--remount-ro", historyPath];
}
