/**
 * The stdio transport of an MCP server picklebot starts: the SDK's framing, but the child
 * is spawned in its own process group (so `close` kills the server and everything it
 * started, as `npx` does), with only the environment it is given, optionally inside
 * bubblewrap. The last lines of its stderr are kept for the error a failed start shows.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { ReadBuffer, serializeMessage } from "@modelcontextprotocol/sdk/shared/stdio.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";

/** How to start the server's process. */
export interface StdioLaunch {
  command: string;
  args: string[];
  /** The child's whole environment. */
  env: Record<string, string>;
  cwd: string;
}

/** How long a server may take to exit after SIGTERM before its group is SIGKILLed. */
const CLOSE_GRACE_MS = 2000;

/** Characters of stderr kept for error messages. */
const STDERR_TAIL_CHARS = 2000;

/** A {@link Transport} over the stdin and stdout of a child in its own process group. */
export class ProcessGroupStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  readonly #launch: StdioLaunch;
  readonly #buffer = new ReadBuffer();
  #child: ChildProcess | undefined;
  #stderrTail = "";

  constructor(launch: StdioLaunch) {
    this.#launch = launch;
  }

  /** The end of what the server wrote to stderr, for error messages. */
  get stderrTail(): string {
    return this.#stderrTail.trim();
  }

  start(): Promise<void> {
    const { command, args, env, cwd } = this.#launch;
    return new Promise((resolve, reject) => {
      const child = spawn(command, args, {
        env,
        cwd,
        detached: true,
        stdio: ["pipe", "pipe", "pipe"],
      });
      this.#child = child;
      child.on("error", (error) => {
        reject(error);
        this.onerror?.(error);
      });
      child.on("spawn", () => resolve());
      child.on("close", () => {
        this.#child = undefined;
        this.onclose?.();
      });
      child.stdout?.on("data", (chunk: Buffer) => this.#receive(chunk));
      child.stderr?.on("data", (chunk: Buffer) => {
        this.#stderrTail = (this.#stderrTail + chunk.toString("utf8")).slice(-STDERR_TAIL_CHARS);
      });
      child.stdin?.on("error", (error) => this.onerror?.(error));
    });
  }

  #receive(chunk: Buffer): void {
    this.#buffer.append(chunk);
    for (;;) {
      try {
        const message = this.#buffer.readMessage();
        if (message === null) return;
        this.onmessage?.(message);
      } catch (thrown) {
        this.onerror?.(thrown as Error);
      }
    }
  }

  send(message: JSONRPCMessage): Promise<void> {
    return new Promise((resolve, reject) => {
      const stdin = this.#child?.stdin;
      if (!stdin) {
        reject(new Error("the server's process is not running"));
        return;
      }
      stdin.write(serializeMessage(message), (error) => (error ? reject(error) : resolve()));
    });
  }

  /**
   * Ends the server: its stdin is closed and its process group gets SIGTERM, then SIGKILL
   * after {@link CLOSE_GRACE_MS} if it is still there; resolves once the child has exited.
   */
  async close(): Promise<void> {
    const child = this.#child;
    if (!child || child.pid === undefined) return;
    const pid = child.pid;
    const exited = new Promise<void>((resolve) => child.once("close", () => resolve()));
    child.stdin?.end();
    signalGroup(pid, "SIGTERM");
    const grace = setTimeout(() => signalGroup(pid, "SIGKILL"), CLOSE_GRACE_MS);
    await exited;
    clearTimeout(grace);
    // Whatever the server started and left behind in its group goes too.
    signalGroup(pid, "SIGKILL");
    this.#buffer.clear();
  }
}

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // The group is gone already.
  }
}
