/**
 * A pids cgroup for one sandboxed command: the process limit where `ulimit -u` does not
 * bind, which is when the server runs as root (the kernel does not apply RLIMIT_NPROC to
 * root). cgroup v1 (`/sys/fs/cgroup/pids/…`) and v2 (`/sys/fs/cgroup/…` with the pids
 * controller) are both tried; where neither can be written, there is no such limit and
 * docs/operations/security.md ("What `bash` can reach") says so.
 */
import { mkdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** A cgroup made for one command: the file its first process writes its pid into. */
export interface ProcessCgroup {
  /** `cgroup.procs` of the group. */
  procs: string;
  /** Removes the group once its processes are gone (quietly, if one lingers). */
  remove(): void;
}

const CGROUP_ROOT = "/sys/fs/cgroup";

/** A new pids cgroup limited to `maxProcesses`, or null where none can be made. */
export function processCgroup(maxProcesses: number, name: string): ProcessCgroup | null {
  for (const parent of pidsControllers()) {
    const folder = join(parent, `picklebot-bash-${name}`);
    try {
      mkdirSync(folder);
    } catch {
      continue;
    }
    try {
      writeFileSync(join(folder, "pids.max"), String(maxProcesses));
      return { procs: join(folder, "cgroup.procs"), remove: () => removeLater(folder) };
    } catch {
      removeLater(folder);
    }
  }
  return null;
}

/** Folders under which this process may make a pids cgroup: its own group's, v1 then v2. */
function pidsControllers(): string[] {
  let lines: string[];
  try {
    lines = readFileSync("/proc/self/cgroup", "utf8").trim().split("\n");
  } catch {
    return [];
  }
  const folders: string[] = [];
  for (const line of lines) {
    const [, controllers = "", path = "/"] = line.split(":");
    if (controllers.split(",").includes("pids")) folders.push(join(CGROUP_ROOT, "pids", path));
    if (controllers === "" && hasV2Pids()) folders.push(join(CGROUP_ROOT, path));
  }
  return folders;
}

function hasV2Pids(): boolean {
  try {
    return readFileSync(join(CGROUP_ROOT, "cgroup.controllers"), "utf8")
      .split(/\s+/)
      .includes("pids");
  } catch {
    return false;
  }
}

/** Removes an empty cgroup; its last processes may need a moment to be reaped. */
function removeLater(folder: string, attempts = 10): void {
  try {
    rmdirSync(folder);
  } catch {
    if (attempts > 1) setTimeout(() => removeLater(folder, attempts - 1), 200).unref();
  }
}
