/**
 * The bash sandbox (docs/operations/security.md, "What `bash` can reach"): what a command
 * can reach under bubblewrap, and what `tools.bash.sandbox: none` still guarantees. Skipped, with the reason printed,
 * only where bwrap cannot run and CI is not set.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

/**
 * A sleep only this file's fork test runs, so that other tests running `sleep 30` at the
 * same time (in another worker) are not counted.
 */
const SLEEP_SECONDS = "29.5";

/** Processes running `sleep 29.5` on this host, the sandbox's included. */
function sleepers(): number {
  let count = 0;
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, "latin1") === `sleep\u0000${SLEEP_SECONDS}\u0000`)
        count += 1;
    } catch {
      // Gone already.
    }
  }
  return count;
}

import { createBashTool } from "../../src/agents/tools/bash.js";
import { describeBashSandbox, probeBubblewrap } from "../../src/agents/tools/sandbox.js";
import { loadConfig } from "../../src/config/index.js";
import { createTempWorkspace, type TempWorkspace } from "./workspace.js";

const SECRET = "sk-test-secret";
const probe = probeBubblewrap();
const runsHere = probe.usable || process.env.CI === "true";
if (!runsHere) console.warn(`bash sandbox tests skipped: ${probe.problem}`);

let temp: TempWorkspace;
beforeEach(() => {
  temp = createTempWorkspace();
  process.env.ANTHROPIC_API_KEY = SECRET;
});
afterEach(() => {
  delete process.env.ANTHROPIC_API_KEY;
  temp.remove();
});

/** The pids of processes whose command line holds `pattern` (pgrep -f). */
function pgrep(pattern: string): string[] {
  try {
    return execFileSync("pgrep", ["-f", pattern], { encoding: "utf8" }).trim().split("\n");
  } catch {
    return [];
  }
}

/** A TCP listener on 127.0.0.1 that counts connections. */
async function listen(): Promise<{ port: number; connections: () => number; server: Server }> {
  let count = 0;
  const server = createServer((socket) => {
    count += 1;
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("no port");
  return { port: address.port, connections: () => count, server };
}

describe.skipIf(!runsHere)("bash under bubblewrap", () => {
  const bash = createBashTool({ timeoutMs: 5000 });

  it("sees none of the server's environment, not even through /proc", async () => {
    const output = await bash.run(
      {
        command:
          "env; tr '\\0' '\\n' < /proc/1/environ; tr '\\0' '\\n' < /proc/$PPID/environ; echo end",
      },
      temp.context(),
    );
    expect(output).toContain("end");
    expect(output).not.toContain(SECRET);
    expect(output).not.toContain("ANTHROPIC");
    // What the server process was started with (what /proc/<server>/environ shows).
    const started = readFileSync("/proc/self/environ", "utf8").split("\0");
    const own = started.filter((entry) => !/^(PATH|HOME|LANG|PWD|SHLVL|_|OLDPWD)=|^$/.test(entry));
    expect(own.length).toBeGreaterThan(0);
    for (const entry of own) expect(output.split("\n")).not.toContain(entry);
  });

  it("cannot see the server's processes", async () => {
    const output = await bash.run({ command: "ls /proc | grep -c '^[0-9]'" }, temp.context());
    expect(Number(output)).toBeLessThan(10);
    expect(output).not.toContain(String(process.pid));
  });

  it("cannot read .env, picklebot.yaml or the history folder", async () => {
    writeFileSync(join(temp.workspace, ".env"), `ANTHROPIC_API_KEY=${SECRET}\n`);
    writeFileSync(join(temp.workspace, "picklebot.yaml"), `llm:\n  api_key: ${SECRET}\n`);
    mkdirSync(join(temp.workspace, "history"));
    writeFileSync(join(temp.workspace, "history", "picklebot.db"), SECRET);
    const output = await bash.run(
      {
        command:
          "cat .env; cat picklebot.yaml; ls -a history; cat history/picklebot.db; grep -r sk- . ; echo end",
      },
      temp.context(),
    );
    expect(output).toContain("end");
    expect(output).not.toContain(SECRET);
    expect(output.split("\n")).not.toContain("picklebot.db");
  });

  it("cannot read the dashboard's access token, wherever history.path puts the history folder", async () => {
    const inside = join(temp.workspace, "history");
    const outside = join(temp.outside, "history");
    for (const historyPath of [inside, outside]) {
      mkdirSync(historyPath, { recursive: true });
      writeFileSync(join(historyPath, "http-token"), `${SECRET}-token\n`);
      const hidden = createBashTool({ timeoutMs: 5000, sandbox: { historyPath } });
      const output = await hidden.run(
        { command: `ls -a ${historyPath}; cat ${historyPath}/http-token; echo end` },
        temp.context(),
      );
      expect(output, historyPath).toContain("end");
      expect(output, historyPath).not.toContain(SECRET);
    }
  });

  it("refuses to run when history.path holds the workspace, which it could not hide", async () => {
    const holding = createBashTool({ timeoutMs: 5000, sandbox: { historyPath: temp.workspace } });
    await expect(holding.run({ command: "echo ran" }, temp.context())).rejects.toThrow(
      /history\.path .* holds the workspace, so the sandbox cannot hide it .* set history\.path to a folder of its own/,
    );
  });

  it("cannot change .env, picklebot.yaml, history, agents, crons or skills", async () => {
    writeFileSync(join(temp.workspace, ".env"), "KEEP=1\n");
    const output = await bash.run(
      {
        command: [
          "echo x > .env",
          "echo x > picklebot.yaml",
          "echo x > history/picklebot.db",
          "echo x > agents/x",
          "mkdir -p agents/evil",
          "echo x > crons/every-minute.yaml",
          "echo x > skills/x",
          "echo done",
        ].join("; "),
      },
      temp.context(),
    );
    expect(output).toContain("done");
    expect(readFileSync(join(temp.workspace, ".env"), "utf8")).toBe("KEEP=1\n");
    expect(readFileSync(join(temp.workspace, "picklebot.yaml"), "utf8")).toBe("");
    for (const path of [
      "history/picklebot.db",
      "agents/x",
      "agents/evil",
      "crons/every-minute.yaml",
      "skills/x",
    ]) {
      expect(() => readFileSync(join(temp.workspace, path)), path).toThrow();
    }
  });

  it("in a picklebot.yml workspace, cannot read or change it, nor create picklebot.yaml", async () => {
    const config = `timezone: Asia/Tokyo\nllm:\n  api_key: ${SECRET}\n`;
    writeFileSync(join(temp.workspace, "picklebot.yml"), config);
    const output = await bash.run(
      {
        command: [
          "cat picklebot.yml",
          "echo 'llm: {base_url: http://evil}' > picklebot.yml",
          "echo 'llm: {base_url: http://evil}' >> picklebot.yml",
          "rm -f picklebot.yml",
          "echo 'llm: {base_url: http://evil}' > picklebot.yaml",
          "mv picklebot.yml moved.yml",
          "echo done",
        ].join("; "),
      },
      temp.context(),
    );
    expect(output).toContain("done");
    expect(output).not.toContain(SECRET);
    expect(readFileSync(join(temp.workspace, "picklebot.yml"), "utf8")).toBe(config);
    // The sandbox's placeholder for the other name, if any, stayed empty.
    expect(
      readFileSync(join(temp.workspace, "picklebot.yaml"), { encoding: "utf8", flag: "a+" }),
    ).toBe("");
    const loaded = loadConfig(temp.workspace, {});
    expect(loaded.timezone).toBe("Asia/Tokyo");
    expect(loaded.llm.base_url).toBeUndefined();
  });

  it("writes the rest of the workspace and a private /tmp", async () => {
    const output = await bash.run(
      {
        command:
          "echo hi > notes.txt; echo t > /tmp/picklebot-sandbox-t; cat /tmp/picklebot-sandbox-t",
      },
      temp.context(),
    );
    expect(output).toBe("t");
    expect(() => readFileSync("/tmp/picklebot-sandbox-t")).toThrow();
    expect(readFileSync(join(temp.workspace, "notes.txt"), "utf8")).toBe("hi\n");
  });

  it("sees neither the owner's home nor the server's folders outside the workspace", async () => {
    writeFileSync(join(temp.outside, "private.txt"), SECRET);
    const output = await bash.run(
      { command: `cat ${temp.outside}/private.txt; ls /root /home /work 2>&1; echo end` },
      temp.context(),
    );
    expect(output).toContain("end");
    expect(output).not.toContain(SECRET);
  });

  it("has no network by default, and has it when the agent may", async () => {
    const listener = await listen();
    try {
      const connect = `echo > /dev/tcp/127.0.0.1/${listener.port} && echo connected`;
      const offline = await bash.run({ command: connect }, temp.context());
      expect(offline).not.toContain("connected");
      expect(listener.connections()).toBe(0);
      const online = createBashTool({ sandbox: { network: true } });
      expect(await online.run({ command: connect }, temp.context())).toBe("connected");
      expect(listener.connections()).toBe(1);
    } finally {
      listener.server.close();
    }
  });

  it("leaves no process behind, not even one that started its own session", async () => {
    const output = await bash.run(
      { command: "setsid sleep 1000 >/dev/null 2>&1 & sleep 1001 & echo started" },
      temp.context(),
    );
    expect(output).toBe("started");
    expect(pgrep("sleep 100[01]")).toEqual([]);
  });

  it("kills everything the command started when it times out", async () => {
    const quick = createBashTool({ timeoutMs: 500 });
    await expect(
      quick.run({ command: "setsid sleep 1002 & sleep 1003 & wait" }, temp.context()),
    ).rejects.toThrow("timed out");
    expect(pgrep("sleep 100[23]")).toEqual([]);
  });

  it("limits the size of a file the command writes", async () => {
    const small = createBashTool({ maxFileBytes: 64 * 1024 });
    const output = await small.run(
      { command: "head -c 1000000 /dev/zero > big; stat -c %s big" },
      temp.context(),
    );
    expect(output).toMatch(/File size limit exceeded.*\n65536$/);
  });

  // The kernel does not apply RLIMIT_NPROC to root; as root, a pids cgroup limits it.
  it("limits how many processes the command runs at once", async () => {
    const limited = createBashTool({ maxProcesses: 50, timeoutMs: 4000 });
    const before = sleepers();
    let most = 0;
    const sampler = setInterval(() => {
      most = Math.max(most, sleepers() - before);
    }, 20);
    try {
      await limited
        .run(
          { command: `for i in $(seq 300); do sleep ${SLEEP_SECONDS} & done 2>/dev/null; wait` },
          temp.context(),
        )
        .catch(() => "timed out, as expected");
    } finally {
      clearInterval(sampler);
    }
    expect(most).toBeGreaterThan(10);
    expect(most).toBeLessThanOrEqual(50);
    expect(sleepers()).toBe(before);
  });

  it("status says bwrap applies and whether the network is on", () => {
    expect(describeBashSandbox()).toMatch(/^bwrap \(bubblewrap [\d.]+\), network off/);
  });
});

describe("bash without bubblewrap", () => {
  const missing = { bwrapPath: "/nonexistent/bwrap" };

  it("refuses to run and says how to install bubblewrap or opt out", async () => {
    const bash = createBashTool({ sandbox: missing });
    await expect(bash.run({ command: "touch ran" }, temp.context())).rejects.toThrow(
      /bash is unavailable: \/nonexistent\/bwrap is not installed\. To fix it, install bubblewrap \(Debian\/Ubuntu: sudo apt-get install bubblewrap.*tools\.bash\.sandbox: none/,
    );
    expect(() => readFileSync(join(temp.workspace, "ran"))).toThrow();
    expect(describeBashSandbox(missing)).toMatch(/^unavailable: bash calls fail/);
  });

  it("runs with sandbox: none, and kills a setsid child when the call ends", async () => {
    const bash = createBashTool({ sandbox: { ...missing, kind: "none" } });
    const output = await bash.run(
      { command: "setsid sleep 1004 >/dev/null 2>&1 & sleep 1005 & echo started" },
      temp.context(),
    );
    expect(output).toBe("started");
    expect(pgrep("sleep 100[45]")).toEqual([]);
    const small = createBashTool({ sandbox: { kind: "none" }, maxFileBytes: 64 * 1024 });
    expect(
      await small.run(
        { command: "head -c 1000000 /dev/zero > big; stat -c %s big" },
        temp.context(),
      ),
    ).toMatch(/\n65536$/);
    expect(describeBashSandbox({ kind: "none" })).toMatch(/^none \(tools\.bash\.sandbox: none\)/);
  });
});
