/**
 * One configured MCP server and its connection, opened on first use.
 *
 * States: `idle` (never used) → `connecting` → `ready`; a failed start or a dropped
 * connection makes it `failed`, and the next use tries again once the backoff since the
 * last failure has passed (1 s doubling to 60 s, {@link RECONNECT_BACKOFF}); until then a
 * use fails at once with the last error. A failure is logged when it differs from the
 * one before, so a server that never starts is reported once, not on every use.
 * `stop()` closes the session (killing a stdio server's process group) and makes it
 * `stopped` for good.
 *
 * Tools are listed on first use, within the limits of `listing.ts`; a listing that breaks
 * them fails like a start, closing the session. `notifications/tools/list_changed` marks
 * the list stale: the next use lists again, but at most once per {@link RELIST_INTERVAL_MS}
 * (a server that says so in a loop is not listed in a loop), and the notifications are
 * logged as one line when the first comes and one with their count at the next listing.
 * What a listing found wrong (a duplicate name, a policy naming no tool) is logged once.
 */
import { RECONNECT_BACKOFF, retryDelayMs } from "../../base/backoff.js";
import type { Logger } from "../../base/log.js";
import { redactSecrets } from "../../base/redact.js";
import { type McpServerConfig, mcpServerSecrets } from "../../config/index.js";
import { LISTING_LIMITS, type ListingLimits, listServerTools } from "./listing.js";
import type { McpCallResult, McpEndpoint, McpListedTool, McpSession } from "./sdk-session.js";

/** What a server is doing, as `picklebot mcp list` shows it. */
export type McpServerState = "idle" | "connecting" | "ready" | "failed" | "stopped";

/** How long starting a server and MCP's handshake may take. */
const CONNECT_TIMEOUT_MS = 30_000;

/** Least time between two listings of a server that keeps saying its tools changed. */
export const RELIST_INTERVAL_MS = 10_000;

/** What a connection needs besides its settings. */
export interface McpConnectionOptions {
  name: string;
  config: McpServerConfig;
  /** Built on each connect, so a bad sandbox is an error of the attempt, not of the server. */
  endpoint: () => McpEndpoint;
  log: Logger;
  /** Milliseconds since an epoch. (Default: Date.now) */
  now?: () => number;
  /** Bounds of one listing of the tools. (Default: {@link LISTING_LIMITS}) */
  listingLimits?: ListingLimits;
  /**
   * What is wrong with names the owner wrote for this server's tools, given the names it
   * lists (approvals, include, exclude naming no tool). (Default: nothing is checked)
   */
  checkToolNames?: (listed: readonly string[]) => string[];
}

/** The SDK-facing module, imported on the first connect of any server. */
const loadSdk = () => import("./sdk-session.js");

/** One server: its state, its tools, and calls to them. */
export class McpConnection {
  readonly name: string;
  readonly config: McpServerConfig;
  readonly #options: McpConnectionOptions;
  #state: McpServerState = "idle";
  #session: Promise<McpSession> | undefined;
  /** The session {@link #session} resolved to, while it is the current one. */
  #openSession: McpSession | undefined;
  #tools: McpListedTool[] | undefined;
  /** The listing in progress, shared by every use that needs it. */
  #listing: { session: McpSession; tools: Promise<McpListedTool[]> } | undefined;
  /** When the last listing started, for {@link RELIST_INTERVAL_MS}. */
  #listedAt = 0;
  /** `list_changed` notifications since the last listing started. */
  #changes = 0;
  /** What the last listing found wrong, for `doctor`. */
  #warnings: string[] = [];
  /** Warnings already logged, so each is logged once. */
  readonly #loggedWarnings = new Set<string>();
  #lastError: string | undefined;
  #failures = 0;
  #retryAt = 0;
  /** When the current session became ready: a session that lasted resets the backoff. */
  #readyAt = 0;
  /** Counts sessions, so that a late close of an old one is not taken for the current. */
  #generation = 0;

  constructor(options: McpConnectionOptions) {
    this.name = options.name;
    this.config = options.config;
    this.#options = options;
  }

  get state(): McpServerState {
    return this.#state;
  }

  /** The last failure's message, while the server is `failed`. */
  get lastError(): string | undefined {
    return this.#state === "failed" ? this.#lastError : undefined;
  }

  /** The tools of the last listing, without connecting (undefined: not listed yet). */
  get listedTools(): readonly McpListedTool[] | undefined {
    return this.#tools;
  }

  /** What the last listing found wrong: duplicate names, names of the owner's that match none. */
  get warnings(): readonly string[] {
    return this.#warnings;
  }

  /**
   * The server's tools after its `include` and `exclude` lists, listed again after the
   * server said they changed (at most once per {@link RELIST_INTERVAL_MS}).
   *
   * @throws Error saying why the server cannot be used now.
   */
  async listTools(): Promise<McpListedTool[]> {
    const session = await this.#connect();
    if (this.#listing?.session === session) return this.#listing.tools;
    if (this.#tools !== undefined && !this.#relistDue()) return this.#tools;
    const tools = this.#list(session);
    this.#listing = { session, tools };
    return tools.finally(() => {
      if (this.#listing?.tools === tools) this.#listing = undefined;
    });
  }

  /** Calls `tool`; a call that outlives `call_timeout_ms` or `signal` fails. */
  async callTool(
    tool: string,
    input: Record<string, unknown>,
    signal: AbortSignal,
  ): Promise<McpCallResult> {
    const session = await this.#connect();
    const timeoutMs = this.config.call_timeout_ms;
    try {
      return await session.callTool(tool, input, { timeoutMs, signal });
    } catch (thrown) {
      throw new Error(this.#callFailure(thrown, timeoutMs), { cause: thrown });
    }
  }

  /** Closes the session for good; a stdio server's process group is killed. */
  async stop(): Promise<void> {
    this.#state = "stopped";
    const session = this.#session;
    this.#session = undefined;
    this.#openSession = undefined;
    await session?.then((open) => open.close()).catch(() => {});
  }

  #now(): number {
    return (this.#options.now ?? Date.now)();
  }

  #relistDue(): boolean {
    return this.#changes > 0 && this.#now() - this.#listedAt >= RELIST_INTERVAL_MS;
  }

  async #list(session: McpSession): Promise<McpListedTool[]> {
    const changes = this.#changes;
    this.#changes = 0;
    this.#listedAt = this.#now();
    const limits = this.#options.listingLimits ?? LISTING_LIMITS;
    let listing: Awaited<ReturnType<typeof listServerTools>>;
    try {
      listing = await listServerTools(session, this.name, limits);
    } catch (thrown) {
      return this.#abandon(session, thrown);
    }
    if (changes > 0) {
      this.#options.log.info(
        { mcpServer: this.name, notifications: changes, tools: listing.tools.length },
        "MCP server's tools listed again after it said they changed",
      );
    }
    const names = listing.tools.map((tool) => tool.name);
    this.#warnings = [...listing.warnings, ...(this.#options.checkToolNames?.(names) ?? [])];
    this.#logNew(this.#warnings);
    const offered = listing.tools.filter((tool) => this.#offers(tool.name));
    if (session === this.#openSession) this.#tools = offered;
    return offered;
  }

  /** A server that cannot list its tools is of no use: it is closed and fails like a start. */
  async #abandon(session: McpSession, thrown: unknown): Promise<never> {
    if (session === this.#openSession) {
      this.#session = undefined;
      this.#openSession = undefined;
    }
    await session.close().catch(() => {});
    return this.#fail(thrown, "cannot be used");
  }

  #logNew(warnings: readonly string[]): void {
    for (const warning of warnings) {
      if (this.#loggedWarnings.has(warning)) continue;
      this.#loggedWarnings.add(warning);
      this.#options.log.warn({ mcpServer: this.name }, warning);
    }
  }

  #offers(tool: string): boolean {
    const { include, exclude } = this.config;
    return (include === undefined || include.includes(tool)) && !exclude?.includes(tool);
  }

  #connect(): Promise<McpSession> {
    if (this.#state === "stopped") {
      return Promise.reject(new Error(`MCP server "${this.name}" was stopped`));
    }
    if (this.#session) return this.#session;
    const now = this.#now();
    if (this.#state === "failed" && now < this.#retryAt) {
      const seconds = Math.ceil((this.#retryAt - now) / 1000);
      return Promise.reject(
        new Error(`${this.#lastError}; picklebot tries it again in ${seconds} s`),
      );
    }
    this.#state = "connecting";
    this.#tools = undefined;
    this.#changes = 0;
    const session = this.#open();
    this.#session = session;
    return session;
  }

  async #open(): Promise<McpSession> {
    const generation = ++this.#generation;
    try {
      const { openMcpSession } = await loadSdk();
      const session = await openMcpSession(
        this.#options.endpoint(),
        {
          onClosed: () => this.#dropped(generation),
          onToolsChanged: () => this.#toolsChanged(generation),
        },
        CONNECT_TIMEOUT_MS,
      );
      if (this.#state === "stopped") {
        await session.close();
        throw new Error(`MCP server "${this.name}" was stopped`);
      }
      this.#state = "ready";
      this.#openSession = session;
      this.#readyAt = this.#now();
      this.#lastError = undefined;
      return session;
    } catch (thrown) {
      this.#session = undefined;
      return this.#fail(thrown, "cannot start");
    }
  }

  /** The connection closed under us: calls in flight fail, the next use reconnects. */
  #dropped(generation: number): void {
    if (this.#state === "stopped" || generation !== this.#generation) return;
    this.#session = undefined;
    this.#openSession = undefined;
    this.#record("lost its connection (the server crashed or went away)");
  }

  /** Marks the list stale; only the first notification since the last listing is logged. */
  #toolsChanged(generation: number): void {
    if (generation !== this.#generation) return;
    this.#changes += 1;
    if (this.#changes > 1) return;
    this.#options.log.info({ mcpServer: this.name }, "MCP server's tool list changed");
  }

  #fail(thrown: unknown, what = "failed"): never {
    const reason = thrown instanceof Error ? thrown.message : String(thrown);
    this.#record(`${what}: ${reason}`);
    throw new Error(this.#lastError, { cause: thrown });
  }

  /**
   * Becomes `failed`, schedules the next try, and logs the failure if it is new. The first
   * failure after a healthy minute may be retried at once; a server that keeps failing
   * (at start, or by crashing soon after) waits 1 s, 2 s, … up to 60 s between tries.
   */
  #record(problem: string): void {
    const message = redactSecrets(
      `MCP server "${this.name}" ${problem}`,
      mcpServerSecrets(this.config),
    );
    const now = this.#now();
    const lasted = now - this.#readyAt >= RECONNECT_BACKOFF.healthyAfterMs;
    if (this.#state === "ready" && lasted) this.#failures = 0;
    this.#failures += 1;
    this.#retryAt =
      now + (this.#failures === 1 ? 0 : retryDelayMs(this.#failures - 1, RECONNECT_BACKOFF));
    if (message !== this.#lastError) this.#options.log.warn({ mcpServer: this.name }, message);
    this.#lastError = message;
    if (this.#state !== "stopped") this.#state = "failed";
  }

  #callFailure(thrown: unknown, timeoutMs: number): string {
    const reason = thrown instanceof Error ? thrown.message : String(thrown);
    if (/timed out|timeout/i.test(reason)) {
      return `MCP server "${this.name}" did not answer within ${timeoutMs} ms (call_timeout_ms)`;
    }
    if (this.#state === "failed" || /closed/i.test(reason)) {
      return `MCP server "${this.name}" went away during the call; it is restarted on the next call`;
    }
    return redactSecrets(`MCP server "${this.name}": ${reason}`, mcpServerSecrets(this.config));
  }
}
