/**
 * Runs `picklebot server` as a child process on a test workspace and reads what it logs.
 *
 * The server logs JSON lines (pino) because its stdout is a pipe, not a TTY; the
 * "picklebot server started" line carries the HTTP address (`http` field), so tests use
 * `http: port: 0` and read the port from there. Every request to the HTTP endpoint needs
 * the owner's access token, which the server keeps in `history/http-token`:
 * {@link ServerProcess.fetch} sends it, and {@link ServerProcess.loginLink} is the link
 * that logs a browser in. Every server started here is remembered until
 * {@link killAllServers} SIGKILLs it, which tests call in `afterEach`.
 */
import type { ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import Database from "better-sqlite3";
import type { Job, NewJob } from "../../src/ports/index.js";
import { openDatabase } from "../../src/storage/sqlite/database.js";
import { SqliteJobQueue } from "../../src/storage/sqlite/queue.js";
import { startCli } from "./cli.js";
import { hangGuard } from "./wait.js";

/** One JSON log line of the server. */
export interface LogLine {
  level: number;
  msg: string;
  [field: string]: unknown;
}

/** How a child process ended. */
export interface ExitStatus {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** Picks log lines: by message text, or by any test on the whole line. */
export type LogMatch = string | ((line: LogLine) => boolean);

/** Options of {@link startServer}. */
export interface StartServerOptions {
  /** Extra arguments after `server --workspace <dir>`. */
  args?: string[];
  env?: Record<string, string | undefined>;
  /** How long to wait for the "started" line. (Default: 15 000 ms) */
  timeoutMs?: number;
}

const running = new Set<ServerProcess>();

/** A running (or finished) `picklebot server` child process. */
export class ServerProcess {
  readonly child: ChildProcess;
  /** The workspace the server runs on. */
  readonly workspace: string;
  /** Every JSON line logged on stdout so far, oldest first. */
  readonly logs: LogLine[] = [];
  /** Everything written to stderr. */
  stderr = "";
  /** Lines on stdout that were not JSON. */
  readonly otherOutput: string[] = [];
  /** Settles when the process has exited. */
  readonly exited: Promise<ExitStatus>;
  #exit: ExitStatus | null = null;
  readonly #listeners = new Set<() => void>();

  constructor(child: ChildProcess, workspace: string) {
    this.child = child;
    this.workspace = workspace;
    let partial = "";
    child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
      const lines = (partial + chunk).split("\n");
      partial = lines.pop() ?? "";
      for (const line of lines) this.#addLine(line);
    });
    child.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
      this.stderr += chunk;
    });
    this.exited = new Promise((resolve) => {
      child.on("exit", (code, signal) => {
        this.#exit = { code, signal };
        running.delete(this);
        this.#changed();
        resolve(this.#exit);
      });
    });
  }

  /** The process id. */
  get pid(): number {
    return this.child.pid ?? -1;
  }

  /** `http://host:port` of `/healthz` and `/metrics`, from the "started" line. */
  get httpUrl(): string {
    const started = this.logs.find((line) => line.msg === "picklebot server started");
    const address = String(started?.http ?? "").split(" ")[0];
    if (!address?.startsWith("http://")) throw new Error("the server reported no HTTP address");
    return address;
  }

  /**
   * The owner's access token: the one the server generated into `history/http-token`
   * (a test whose picklebot.yaml sets `http.token` sends that itself).
   */
  get token(): string {
    return readFileSync(join(this.workspace, "history", "http-token"), "utf8").trim();
  }

  /** `fetch` of `path` (`/healthz`, `/jobs`…) on the HTTP endpoint, as the owner. */
  fetch(path: string, init: RequestInit = {}): Promise<Response> {
    const headers = new Headers(init.headers);
    headers.set("authorization", `Bearer ${this.token}`);
    return fetch(`${this.httpUrl}${path}`, { ...init, headers });
  }

  /** The link that logs a browser in as the owner, then opens `path`. */
  loginLink(path = "/"): string {
    return `${this.httpUrl}/login?next=${encodeURIComponent(path)}#token=${this.token}`;
  }

  /** Log lines that match, oldest first. */
  linesMatching(match: LogMatch): LogLine[] {
    return this.logs.filter(toPredicate(match));
  }

  /** Resolves with the first matching line, waiting for it if needed; rejects on exit. */
  waitForLog(match: LogMatch, timeoutMs = 10_000): Promise<LogLine> {
    const predicate = toPredicate(match);
    return this.#waitFor(
      () => this.logs.find(predicate),
      `a log line ${describeMatch(match)}`,
      timeoutMs,
    );
  }

  /**
   * The first `count` outcome lines of a job ("job done", "job retry", "job failed"…: one
   * per finished attempt), waiting for them if needed.
   */
  async jobOutcomes(jobId: string, count = 1, timeoutMs = 10_000): Promise<LogLine[]> {
    const isOutcome = (line: LogLine) => line.job === jobId && typeof line.outcome === "string";
    await this.#waitFor(
      () => (this.logs.filter(isOutcome).length >= count ? true : undefined),
      `${count} outcome line(s) of job ${jobId}`,
      timeoutMs,
    );
    return this.logs.filter(isOutcome).slice(0, count);
  }

  /** Sends a signal (SIGTERM, SIGINT, SIGKILL). */
  signal(signal: NodeJS.Signals): void {
    this.child.kill(signal);
  }

  /** SIGKILLs the process, as a power cut would, and waits until it is gone. */
  async kill(): Promise<ExitStatus> {
    if (!this.#exit) this.child.kill("SIGKILL");
    return this.exited;
  }

  /** Everything the process printed, for failure messages. */
  transcript(): string {
    const lines = this.logs.map((line) => JSON.stringify(line));
    return [...lines, ...this.otherOutput, `stderr: ${this.stderr}`].join("\n");
  }

  #addLine(line: string): void {
    if (line.trim() === "") return;
    try {
      this.logs.push(JSON.parse(line) as LogLine);
    } catch {
      this.otherOutput.push(line);
    }
    this.#changed();
  }

  #changed(): void {
    for (const listener of [...this.#listeners]) listener();
  }

  #waitFor<T>(find: () => T | undefined, what: string, timeoutMs: number): Promise<T> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const found = find();
        if (found !== undefined) return finish(() => resolve(found));
        if (this.#exit) {
          const status = JSON.stringify(this.#exit);
          finish(() =>
            reject(new Error(`server exited ${status} before ${what}\n${this.transcript()}`)),
          );
        }
      };
      const timer = setTimeout(
        () =>
          finish(() => reject(new Error(`timed out waiting for ${what}\n${this.transcript()}`))),
        hangGuard(timeoutMs),
      );
      const finish = (settle: () => void) => {
        clearTimeout(timer);
        this.#listeners.delete(check);
        settle();
      };
      this.#listeners.add(check);
      check();
    });
  }
}

/** Starts `picklebot server` on `workspace` and waits for its "started" line. */
export async function startServer(
  workspace: string,
  options: StartServerOptions = {},
): Promise<ServerProcess> {
  const child = startCli(["server", "--workspace", workspace, ...(options.args ?? [])], {
    env: options.env,
  });
  child.stdin?.end();
  const server = new ServerProcess(child, workspace);
  running.add(server);
  await server.waitForLog("picklebot server started", options.timeoutMs ?? 15_000);
  return server;
}

/** SIGKILLs every server still running; for `afterEach`, so a failed test leaves none. */
export async function killAllServers(): Promise<void> {
  await Promise.all([...running].map((server) => server.kill()));
}

/** A stored message, as the `messages` table holds it. */
export interface StoredMessage {
  role: "user" | "assistant";
  /** The text blocks joined; other blocks appear as `[type]`. */
  text: string;
  jobId: string | null;
}

/**
 * Opens the workspace database (`history/picklebot.db`), next to a running server or
 * after it stopped, to read what it stored. Close it before the workspace is removed.
 */
export function openWorkspaceDb(workspace: string): Database.Database {
  return new Database(join(workspace, "history", "picklebot.db"), { fileMustExist: true });
}

/** The messages of the session a job ran in, oldest first. */
export function sessionMessages(db: Database.Database, sessionId: string): StoredMessage[] {
  const rows = db
    .prepare("SELECT role, content, job_id FROM messages WHERE session_id = ? ORDER BY seq")
    .all(sessionId) as { role: "user" | "assistant"; content: string; job_id: string | null }[];
  return rows.map((row) => ({
    role: row.role,
    text: (JSON.parse(row.content) as { type: string; text?: string }[])
      .map((block) => (block.type === "text" ? (block.text ?? "") : `[${block.type}]`))
      .join(""),
    jobId: row.job_id,
  }));
}

/**
 * Enqueues a job into the workspace's queue from this process, as another producer (the
 * CLI, a bus) would; unlike `cron run`, it can name any reply target, e.g. `console`.
 */
export async function enqueueJob(workspace: string, job: NewJob): Promise<Job> {
  const db = openDatabase(join(workspace, "history", "picklebot.db"));
  const queue = new SqliteJobQueue({ db });
  try {
    return await queue.enqueue(job);
  } finally {
    await queue.close();
    db.close();
  }
}

/** A TCP port that was free a moment ago, for configs that need a fixed `http.port`. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (typeof address !== "object" || address === null) throw new Error("no port");
  return address.port;
}

function toPredicate(match: LogMatch): (line: LogLine) => boolean {
  return typeof match === "string" ? (line) => line.msg === match : match;
}

function describeMatch(match: LogMatch): string {
  return typeof match === "string" ? `"${match}"` : "that matches";
}
