/**
 * Starting the fake MCP server (`mcp-server.mjs`, the SDK's own server side) for tests:
 * its stdio settings for `mcp_servers`, or a streamable HTTP one on 127.0.0.1.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

/** The fake server's script. */
export const FAKE_MCP_SERVER = fileURLToPath(new URL("./mcp-server.mjs", import.meta.url));

/** An `mcp_servers` entry that starts the fake over stdio (outside the sandbox). */
export function stdioFake(extra: Record<string, unknown> = {}, args: string[] = []) {
  return { command: process.execPath, args: [FAKE_MCP_SERVER, ...args], sandbox: "none", ...extra };
}

/** The fake over streamable HTTP; `url` is its endpoint. */
export interface HttpFake {
  url: string;
  process: ChildProcess;
  stop(): Promise<void>;
}

/** Starts the fake as an HTTP server on a free loopback port. */
export function startHttpFake(name = "http"): Promise<HttpFake> {
  const child = spawn(process.execPath, [FAKE_MCP_SERVER, "--http", "--name", name], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.once("exit", (code) => reject(new Error(`the HTTP fake exited (${code})`)));
    child.stdout?.on("data", (chunk: Buffer) => {
      const port = /listening (\d+)/.exec(String(chunk))?.[1];
      if (!port) return;
      resolve({
        url: `http://127.0.0.1:${port}/mcp`,
        process: child,
        stop: () =>
          new Promise<void>((done) => {
            if (child.exitCode !== null || child.signalCode !== null) return done();
            child.once("exit", () => done());
            child.kill("SIGKILL");
          }),
      });
    });
  });
}
