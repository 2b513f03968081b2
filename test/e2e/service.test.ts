/**
 * Running picklebot under a service manager (docs/operations/deploy.md): `npm start` and the
 * server as a direct child stop on SIGTERM and exit 0 letting go of the port and the lock;
 * the Docker healthcheck command; the systemd unit and the Dockerfile's promises.
 */
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { acquireWorkspaceLock } from "../../src/storage/workspace-lock.js";
import { childEnv, isAlive } from "../helpers/cli.js";
import { killAllServers, ServerProcess, startServer } from "../helpers/server.js";
import { makeWorkspace, type TempWorkspace } from "../helpers/workspace.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const HEALTHCHECK = join(ROOT, "deploy/healthcheck.js");
/** Where Debian's tini package (installed in the image) puts it. */
const TINI = "/usr/bin/tini";

let ws: TempWorkspace;

beforeEach(() => {
  ws = makeWorkspace({ "picklebot.yaml": "http:\n  port: 0\n" });
});

afterEach(async () => {
  await killAllServers();
  ws.remove();
});

/** Whether a TCP port on 127.0.0.1 can be listened on again. */
function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer()
      .once("error", () => resolve(false))
      .listen(port, "127.0.0.1", () => probe.close(() => resolve(true)));
  });
}

/** The workspace lock can be taken: no server holds it any more. */
function lockIsFree(): boolean {
  try {
    acquireWorkspaceLock(join(ws.dir, "history")).release();
    return true;
  } catch {
    return false;
  }
}

describe("stopping the server with SIGTERM", () => {
  it("npm start: SIGTERM to npm stops the server, frees the port and the lock, exits 0", async () => {
    const npm = spawn("npm", ["start", "--silent"], {
      cwd: ROOT,
      env: childEnv({ PICKLEBOT_WORKSPACE: ws.dir }),
      stdio: ["ignore", "pipe", "pipe"],
    });
    const server = new ServerProcess(npm, ws.dir);
    const started = await server.waitForLog("picklebot server started", 60_000);
    const serverPid = Number(started.pid);
    expect(serverPid).toBeGreaterThan(0);
    const port = Number(new URL(server.httpUrl).port);
    expect(lockIsFree()).toBe(false);

    npm.kill("SIGTERM");
    const exit = await server.exited;

    expect(exit, server.transcript()).toEqual({ code: 0, signal: null });
    expect(isAlive(serverPid)).toBe(false);
    expect(await portIsFree(port)).toBe(true);
    expect(lockIsFree()).toBe(true);
    expect(server.linesMatching("picklebot server stopped")).toHaveLength(1);
  }, 90_000);

  it("node bin/picklebot.js server as the direct child (systemd, Docker): SIGTERM exits 0", async () => {
    const server = await startServer(ws.dir);
    const port = Number(new URL(server.httpUrl).port);
    server.signal("SIGTERM");
    expect(await server.exited).toEqual({ code: 0, signal: null });
    expect(await portIsFree(port)).toBe(true);
    expect(lockIsFree()).toBe(true);
  });
});

describe("the Docker healthcheck command", () => {
  const healthcheck = (env: Record<string, string>) =>
    new Promise<{ code: number | null; out: string }>((resolve) => {
      const child = spawn(process.execPath, [HEALTHCHECK], { env: childEnv(env) });
      let out = "";
      child.stdout.on("data", (chunk: Buffer) => (out += chunk));
      child.on("close", (code) => resolve({ code, out }));
    });

  it("exits 0 against a healthy server, found through the workspace's announcement", async () => {
    await startServer(ws.dir);
    const result = await healthcheck({ PICKLEBOT_WORKSPACE: ws.dir });
    expect(result.out).toMatch(/^healthy: http:\/\/127\.0\.0\.1:\d+\/healthz/);
    expect(result.code).toBe(0);
  });

  it("exits 1 naming the announcement file when no server runs", async () => {
    const result = await healthcheck({ PICKLEBOT_WORKSPACE: ws.dir });
    expect(result.code).toBe(1);
    expect(result.out).toContain(join(ws.dir, "history", "server.json"));
  });
});

/** `Key=value` lines of a unit file (the last value of a key wins, as in systemd). */
function unitKeys(text: string): Map<string, string> {
  const keys = new Map<string, string>();
  for (const line of text.split("\n")) {
    const match = /^([A-Za-z]+)=(.*)$/.exec(line.trim());
    if (match?.[1] && match[2] !== undefined) keys.set(match[1], match[2]);
  }
  return keys;
}

describe("deploy/picklebot.service", () => {
  const unitFile = join(ROOT, "deploy/picklebot.service");
  const keys = unitKeys(readFileSync(unitFile, "utf8"));

  it("runs node on bin/picklebot.js directly, as its own user, restarting on failure", () => {
    const execStart = keys.get("ExecStart") ?? "";
    expect(execStart).toMatch(/^\/usr\/bin\/node \S+\/bin\/picklebot\.js server /);
    expect(execStart).not.toContain("npm");
    expect(keys.get("Restart")).toBe("on-failure");
    expect(keys.get("User")).toBe("picklebot");
    expect(keys.get("KillSignal")).toBe("SIGTERM");
  });

  it("is hardened, with only the workspace writable", () => {
    const workspace = /--workspace (\S+)/.exec(keys.get("ExecStart") ?? "")?.[1];
    expect(workspace).toBeDefined();
    expect(keys.get("ReadWritePaths")).toBe(workspace);
    expect(keys.get("WorkingDirectory")).toBe(workspace);
    for (const key of ["NoNewPrivileges", "PrivateTmp", "ProtectHome", "PrivateDevices"]) {
      expect(keys.get(key), key).toBe("true");
    }
    expect(keys.get("ProtectSystem")).toBe("strict");
  });

  it("starts node with glibc's allocator set to two arenas that give freed memory back", () => {
    // docs/decisions/media-memory.md: without them, a burst of photos leaves ~90 MiB more.
    expect(readFileSync(unitFile, "utf8")).toMatch(
      /^Environment=MALLOC_ARENA_MAX=2 MALLOC_TRIM_THRESHOLD_=131072$/m,
    );
  });

  it("passes systemd-analyze verify where systemd is installed", async () => {
    const analyze = spawn("systemd-analyze", ["verify", unitFile]);
    let output = "";
    analyze.stderr.on("data", (chunk: Buffer) => (output += chunk));
    const code = await new Promise<number | null | "absent">((resolve) => {
      analyze.once("error", () => resolve("absent"));
      analyze.once("close", resolve);
    });
    if (code === "absent") {
      // .ci/run installs systemd; elsewhere the check needs it too, or it says why not.
      if (process.env.CI === "true") throw new Error("systemd-analyze is not installed");
      process.stderr.write("skipped: systemd-analyze is not installed (apt install systemd)\n");
      return;
    }
    // Only the paths of this machine may be missing (no /opt/picklebot, no picklebot user).
    const problems = output
      .split("\n")
      .filter((line) => line && !/not found|No such file/i.test(line));
    expect(problems).toEqual([]);
  });
});

describe("Dockerfile", () => {
  const dockerfile = readFileSync(join(ROOT, "Dockerfile"), "utf8");
  const instructions = (name: string) =>
    dockerfile
      .split("\n")
      .filter((line) => line.startsWith(`${name} `))
      .map((line) => line.slice(name.length + 1));

  it("builds in one stage and runs from node:20-slim as a non-root user", () => {
    expect(instructions("FROM")).toEqual(["node:20-slim AS build", "node:20-slim"]);
    expect(dockerfile).toMatch(/python3 make g\+\+/);
    expect(instructions("USER")).toEqual(["node"]);
  });

  it("sets glibc's allocator to two arenas that give freed memory back, as the unit does", () => {
    expect(dockerfile).toMatch(/MALLOC_ARENA_MAX=2\b/);
    expect(dockerfile).toMatch(/MALLOC_TRIM_THRESHOLD_=131072\b/);
  });

  it("keeps the workspace in a volume and a stable instance id", () => {
    expect(instructions("VOLUME")).toEqual(["/workspace"]);
    expect(dockerfile).toMatch(/PICKLEBOT_WORKSPACE=\/workspace/);
    expect(dockerfile).toMatch(/PICKLEBOT_INSTANCE_ID=picklebot/);
  });

  it("runs its entrypoint and command: SIGTERM to tini reaches node, which exits 0", async (context) => {
    if (!existsSync(TINI)) {
      if (process.env.CI === "true")
        throw new Error(`${TINI} is not installed (.ci/run installs it)`);
      process.stderr.write(`skipped: ${TINI} is not installed (apt install tini)\n`);
      context.skip();
    }
    const [entrypoint, command] = ["ENTRYPOINT", "CMD"].map(
      (name) => JSON.parse(instructions(name)[0] ?? "[]") as string[],
    );
    // The image's paths, mapped onto this checkout; `-s`: tini is not PID 1 here, so it
    // registers as the subreaper a container's PID 1 is.
    const argv = [...(entrypoint ?? []), ...(command ?? [])].map((arg) =>
      arg.replace(/^\/app\//, `${ROOT}/`),
    );
    expect(argv[0]).toBe(TINI);
    const child = spawn(TINI, ["-s", ...argv.slice(1)], {
      env: childEnv({ PICKLEBOT_WORKSPACE: ws.dir, PICKLEBOT_INSTANCE_ID: "picklebot" }),
      stdio: ["ignore", "pipe", "pipe"],
    });
    const server = new ServerProcess(child, ws.dir);
    const started = await server.waitForLog("picklebot server started", 20_000);

    child.kill("SIGTERM");

    expect(await server.exited, server.transcript()).toEqual({ code: 0, signal: null });
    expect(isAlive(Number(started.pid))).toBe(false);
    expect(server.linesMatching("picklebot server stopped")).toHaveLength(1);
  });

  it("checks health with the tested command and lets SIGTERM reach node", () => {
    expect(dockerfile).toContain('CMD ["node", "/app/deploy/healthcheck.js"]');
    expect(instructions("STOPSIGNAL")).toEqual(["SIGTERM"]);
    expect(instructions("ENTRYPOINT")).toEqual([
      '["/usr/bin/tini", "--", "node", "/app/bin/picklebot.js"]',
    ]);
  });
});
