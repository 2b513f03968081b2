/**
 * What the chat bus benchmarks share: the fakes of `test/fakes/` compiled for plain node,
 * `picklebot server` as a child process, and its resident memory.
 */
import { execFileSync, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

/**
 * Compiles the named fakes (TypeScript, `test/fakes/<name>.ts`) and imports them:
 * `{ telegram: module, anthropic: module, ... }`. They are compiled below `parent`
 * (Default: `node_modules/.cache`, so that their imports such as ws and discord.js
 * resolve; fakes that import only node's modules may go elsewhere), and removed once
 * loaded.
 */
export async function loadFakes(names, parent = join(ROOT, "node_modules/.cache")) {
  mkdirSync(parent, { recursive: true });
  const out = mkdtempSync(join(parent, "picklebot-bench-fakes-"));
  try {
    writeFileSync(join(out, "package.json"), '{ "type": "module" }\n');
    execFileSync(
      process.execPath,
      [
        join(ROOT, "node_modules/typescript/bin/tsc"),
        // The fakes import test/helpers/ (wait.ts), so the root is test/.
        ...["--ignoreConfig", "--outDir", out, "--rootDir", join(ROOT, "test")],
        ...["--module", "nodenext", "--moduleResolution", "nodenext", "--target", "es2023"],
        ...["--skipLibCheck", "--types", "node"],
        ...names.map((name) => join(ROOT, `test/fakes/${name}.ts`)),
      ],
      { cwd: ROOT, stdio: "inherit" },
    );
    const modules = await Promise.all(
      names.map((name) => import(pathToFileURL(join(out, "fakes", `${name}.js`)).href)),
    );
    return Object.fromEntries(names.map((name, i) => [name, modules[i]]));
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}

/**
 * Starts `picklebot server` on `workspace` and resolves with the child process once
 * `platforms` chat buses reported "chat platform connected". Tokens come from the
 * workspace's picklebot.yaml only. `root` is the checkout whose build runs (another
 * build, to compare two commits).
 */
export function startServer(workspace, platforms = 1, root = ROOT) {
  const child = spawn(
    process.execPath,
    [join(root, "bin/picklebot.js"), "server", "--workspace", workspace],
    {
      env: {
        ...process.env,
        TELEGRAM_BOT_TOKEN: "",
        DISCORD_BOT_TOKEN: "",
        ANTHROPIC_API_KEY: "",
      },
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  return new Promise((resolve, reject) => {
    let partial = "";
    let connected = 0;
    child.stdout.setEncoding("utf8").on("data", (chunk) => {
      const lines = (partial + chunk).split("\n");
      partial = lines.pop() ?? "";
      connected += lines.filter((line) => line.includes('"msg":"chat platform connected"')).length;
      if (connected >= platforms) resolve(child);
    });
    child.on("exit", (code) => reject(new Error(`server exited with ${code} before connecting`)));
  });
}

/** The resident set (VmRSS) of a process, in MiB. */
export function rssMiB(pid) {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kib = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? Number.NaN);
  return kib / 1024;
}

/** The peak resident set (VmHWM) of a process since it started, in MiB. */
export function peakRssMiB(pid) {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kib = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? Number.NaN);
  return kib / 1024;
}

/** Sets a process's VmHWM back to its current RSS (`clear_refs` 5, Linux 4.0 and later). */
export function resetPeakRss(pid) {
  writeFileSync(`/proc/${pid}/clear_refs`, "5");
}

/** CPU seconds (user + system) a process has used so far, from /proc (Linux). */
export function cpuSeconds(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  // Fields after the command name (which may hold spaces) start at index 2 (state).
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const ticks = Number(fields[11]) + Number(fields[12]);
  return ticks / CLOCK_TICKS_PER_SECOND;
}

/** `getconf CLK_TCK`: 100 on Linux on every common architecture. */
const CLOCK_TICKS_PER_SECOND = 100;

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
