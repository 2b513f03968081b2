import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createBashTool } from "../../src/agents/tools/bash.js";
import { probeBubblewrap, type SandboxKind } from "../../src/agents/tools/sandbox.js";
import { isAlive } from "../helpers/cli.js";
import { waitFor } from "../helpers/wait.js";
import { createTempWorkspace, type TempWorkspace } from "./workspace.js";

let temp: TempWorkspace;
beforeEach(() => {
  temp = createTempWorkspace();
});
afterEach(() => temp.remove());

/** Both modes where bwrap runs (always under CI), else the unsandboxed one alone. */
const MODES: SandboxKind[] =
  probeBubblewrap().usable || process.env.CI === "true" ? ["bwrap", "none"] : ["none"];

describe.each(MODES)("bash (sandbox: %s)", (kind) => {
  const bash = createBashTool({ sandbox: { kind } });

  it("runs in the workspace and interleaves stdout and stderr in order", async () => {
    const output = await bash.run(
      { command: "pwd; echo one; echo two >&2; echo three" },
      temp.context(),
    );
    expect(output).toBe(`${temp.workspace}\none\ntwo\nthree`);
  });

  it("gives the command no positional parameters, like bash -c", async () => {
    expect(await bash.run({ command: 'echo "args=$#"' }, temp.context())).toBe("args=0");
  });

  it("returns the output and the exit code when it is not 0", async () => {
    const output = await bash.run(
      { command: "echo oops; ls no-such-file; exit 3" },
      temp.context(),
    );
    expect(output).toMatch(/^oops\nls: .*no-such-file.*\n\[exit code 3\]$/);
  });

  it("says when there was no output", async () => {
    expect(await bash.run({ command: "true" }, temp.context())).toBe("(no output)");
  });

  it("keeps the head and tail of a long output with a marker between", async () => {
    const output = await bash.run(
      { command: "echo BEGIN; yes line | head -n 20000; echo END" },
      temp.context(),
    );
    expect(output.startsWith("BEGIN\nline\n")).toBe(true);
    expect(output.endsWith("line\nEND")).toBe(true);
    expect(output).toMatch(/\[… \d+ bytes of output omitted …\]/);
    expect(output.length).toBeLessThan(33 * 1024);
  });

  it("kills the whole command when it times out and returns the output so far", async () => {
    const quick = createBashTool({ timeoutMs: 300, sandbox: { kind } });
    const run = quick.run(
      { command: "echo started; sleep 30 & echo $! > child.pid; wait" },
      temp.context(),
    );
    await expect(run).rejects.toThrow(
      "command timed out after 0.3 s and was killed; output so far:\nstarted",
    );
    // Under bwrap the pid is one of the sandbox's own namespace.
    if (kind === "bwrap") return;
    const childPid = Number(readFileSync(join(temp.workspace, "child.pid"), "utf8"));
    await waitFor(() => !isAlive(childPid), "the child is killed");
  });

  it("kills the command when the job is aborted", async () => {
    const controller = new AbortController();
    const run = bash.run({ command: "touch started; sleep 30" }, temp.context(controller.signal));
    await waitFor(() => existsSync(join(temp.workspace, "started")), "the command started");
    controller.abort();
    await expect(run).rejects.toThrow("command was stopped because the job was aborted");
  });

  it("does not start a command when the job is already aborted", async () => {
    const controller = new AbortController();
    controller.abort();
    await expect(
      bash.run({ command: "touch ran" }, temp.context(controller.signal)),
    ).rejects.toThrow("aborted");
    expect(existsSync(join(temp.workspace, "ran"))).toBe(false);
  });

  it("returns at once and ends the background processes it started", async () => {
    const output = await bash.run(
      { command: "sleep 3 >/dev/null 2>&1 & echo launched" },
      temp.context(),
    );
    expect(output).toBe("launched");
  });

  it("returns even when a background process keeps the output pipe open", async () => {
    // Waiting for the pipe to close would outlast the test's own limit.
    expect(await bash.run({ command: "sleep 600 & echo done" }, temp.context())).toBe("done");
  });

  it("hides environment variables that look like secrets (all of them under bwrap)", async () => {
    process.env.PICKLEBOT_TEST_API_KEY = "sk-secret";
    process.env.PICKLEBOT_TEST_COLOR = "green";
    try {
      const output = await bash.run(
        { command: 'echo "[$PICKLEBOT_TEST_API_KEY] [$PICKLEBOT_TEST_COLOR]"' },
        temp.context(),
      );
      expect(output).toBe(kind === "none" ? "[] [green]" : "[] []");
    } finally {
      delete process.env.PICKLEBOT_TEST_API_KEY;
      delete process.env.PICKLEBOT_TEST_COLOR;
    }
  });

  it("refuses input without a command", async () => {
    await expect(bash.run({ cmd: "ls" }, temp.context())).rejects.toThrow(
      'bash: "command" must be a string (it is missing)',
    );
  });
});
