/**
 * How the owner gets in to the dashboard, whose every page needs the access token on the
 * default loopback bind too: `picklebot server` started at a terminal prints a login link,
 * and `picklebot dashboard` prints it later; both print it to a terminal only (a pseudo-
 * terminal from `script` here), never to a pipe or the log. The link's use in a browser
 * is in dashboard-browser.test.ts.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { runningServer } from "../../src/storage/workspace-lock.js";
import { runCli, startCli } from "../helpers/cli.js";
import { killAllServers, startServer } from "../helpers/server.js";
import { waitFor } from "../helpers/wait.js";
import { makeWorkspace, type TempWorkspace } from "../helpers/workspace.js";

let ws: TempWorkspace;

beforeEach(() => {
  ws = makeWorkspace({ "picklebot.yaml": "http:\n  port: 0\n" });
});

afterEach(async () => {
  await killAllServers();
  ws.remove();
});

const tokenFile = () => join(ws.dir, "history", "http-token");

describe("picklebot dashboard", () => {
  it("prints the running server's login link to a terminal, and to nothing else", async () => {
    const server = await startServer(ws.dir);
    const link = `${server.httpUrl}/login#token=${server.token}`;

    const shown = await runCli(["dashboard", "--workspace", ws.dir], { terminal: true });
    expect(shown.code).toBe(0);
    expect(shown.stdout.trim()).toBe(link);

    const piped = await runCli(["dashboard", "--workspace", ws.dir]);
    expect(piped.code).toBe(1);
    expect(`${piped.stdout}${piped.stderr}`).not.toContain(server.token);
    expect(piped.stderr).toContain("it is printed only to a terminal, and this output is not one");
    expect(piped.stderr).toContain(`open ${server.httpUrl}/login and enter the token`);
    expect(piped.stderr).toContain(`cat ${tokenFile()}`);
  });

  it("says how to get a token before any server has made one", async () => {
    const result = await runCli(["dashboard", "--workspace", ws.dir], { terminal: true });
    expect(result.code).toBe(1);
    expect(result.stdout).toContain(`no access token yet: picklebot server generates one into`);
    expect(result.stdout).toContain("http-token");
  });
});

describe("picklebot server on a terminal", () => {
  it("prints the login link there once it listens", async () => {
    const child = startCli(["server", "--workspace", ws.dir], { terminal: true });
    let output = "";
    child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
      output += chunk;
    });
    const exited = new Promise((resolve) => child.on("exit", resolve));
    try {
      const line = await waitFor(
        () => output.match(/^Dashboard \(.*\): (http:\S+)\r?$/m)?.[1],
        "the login link on the terminal",
        30_000,
      );
      const server = await waitFor(() => runningServer(join(ws.dir, "history")), "the lock");
      const address = String(server.http);
      const token = readFileSync(tokenFile(), "utf8").trim();
      expect(line).toBe(`http://${address}/login#token=${token}`);
      process.kill(server.pid, "SIGTERM");
    } finally {
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 15_000))]);
      child.kill("SIGKILL");
    }
  });
});
