/**
 * The live `/events` clients are served by a process of their own, the fan-out process
 * (fanout-process.ts), so that a crowd of them costs the server's event loop, where the
 * workers run, one message per batch of events instead of a write per client: the server
 * answers the request, checks access, then hands the client's socket over. The fan-out
 * process keeps a copy of the event stream (the server's buffer when it starts, then every
 * event, sent in batches every {@link BATCH_MS}) and runs the {@link SseBroadcaster} on it,
 * so resuming with `Last-Event-ID`, `?type=` filters and gzip work there as they would here.
 *
 * It starts with the first live client and stops `idleMs` after the last one left. If it
 * dies, its clients' connections close and they resume with `Last-Event-ID` (a browser's
 * EventSource and `picklebot events --follow` do); the next client starts a new one. It
 * exits when the server does, even on SIGKILL (its IPC channel closes). When it falls
 * behind by `maxBatchesInFlight` batches, further batches are dropped and counted like any
 * slow consumer's events: it never holds the server's memory or its workers.
 */
import { type ChildProcess, fork } from "node:child_process";
import type { Socket } from "node:net";
import { fileURLToPath } from "node:url";
import type { EventFeed, PicklebotEvent, Unsubscribe } from "../ports/index.js";
import type { SseBroadcasterOptions, StreamRequest } from "./broadcast.js";

/** How often the events published since the last batch go to the fan-out process. */
const BATCH_MS = 25;
/** How long `close` waits for the fan-out process to exit before killing it. */
const EXIT_GRACE_MS = 2_000;
/** The fan-out process beside this module (the built one: `dist/events/`). */
const FANOUT_PROCESS = fileURLToPath(new URL("./fanout-process.js", import.meta.url));

/** What the server sends the fan-out process. */
export type ToFanout =
  | {
      kind: "start";
      options: Pick<SseBroadcasterOptions, "gatherMs" | "maxGatherMs" | "heartbeatMs">;
      /** The server's buffered events, for the first clients' resume. */
      events: PicklebotEvent[];
    }
  | { kind: "events"; events: PicklebotEvent[] }
  /** Sent with the client's socket. */
  | { kind: "client"; request: StreamRequest };

/** What the fan-out process tells the server. */
export type FromFanout = { kind: "clients"; count: number } | { kind: "dropped"; count: number };

/** Options of {@link EventFanout}. */
export interface EventFanoutOptions
  extends Pick<SseBroadcasterOptions, "gatherMs" | "maxGatherMs" | "heartbeatMs"> {
  /** How long the fan-out process stays after its last client left, in ms. */
  idleMs: number;
  /** Batches sent to the fan-out process and not yet taken by it, before dropping. */
  maxBatchesInFlight: number;
  /** Told how many events clients lost (a client that does not read, or the process behind). */
  onDropped?: (count: number) => void;
  /** Told how many live clients there are, whenever one comes or goes. */
  onClients?: (count: number) => void;
  /** Hears of the fan-out process ending when it was not told to (its clients reconnect). */
  onExit?: (reason: string) => void;
  /**
   * The fan-out process's script. (Default: fanout-process.js beside this module; tests
   * that run the TypeScript sources pass the built one.)
   */
  script?: string;
}

/** Hands live `/events` clients to the fan-out process (see the file header). */
export class EventFanout {
  readonly #feed: EventFeed;
  readonly #options: EventFanoutOptions;
  /** The fan-out process, and the messages written to it and not yet taken. */
  #link: { child: ChildProcess; inFlight: number } | null = null;
  #unsubscribe: Unsubscribe | null = null;
  #pending: PicklebotEvent[] = [];
  #batchTimer: NodeJS.Timeout | null = null;
  #idleTimer: NodeJS.Timeout | null = null;
  /** Processes ended on purpose, or whose end was reported. */
  readonly #settled = new WeakSet<ChildProcess>();

  constructor(feed: EventFeed, options: EventFanoutOptions) {
    this.#feed = feed;
    this.#options = options;
  }

  /**
   * Hands `socket`, whose request has been read and answered by nothing yet, to the fan-out
   * process, which answers it; the socket is closed here.
   */
  attach(socket: Socket, request: StreamRequest): void {
    // A process whose channel closed is dying: its exit is reported when it comes.
    if (this.#link && !this.#link.child.connected) this.#forget();
    const child = this.#link?.child ?? this.#start();
    this.#keep();
    // The events waiting for the next batch go first, so that the client's replay has them.
    this.#sendBatch();
    // Sent or not, the socket is done with here and closed the usual way, so that the HTTP
    // server forgets it; the fan-out process's copy keeps the connection open. Node (20)
    // offers two other ways, both wrong for an HTTP server's socket: sent without
    // `keepOpen`, its parser stays in the server's list of connections; sent with its
    // `server` set, the server asks the fan-out process for its sockets when it closes, and
    // never finishes closing once that process has exited.
    (socket as Socket & { server: unknown }).server = null;
    const message: ToFanout = { kind: "client", request };
    child.send(message, socket, { keepOpen: true }, () => socket.destroy());
  }

  /**
   * Stops the fan-out process (its clients' connections close) and waits for it to end,
   * killing it if it has not within {@link EXIT_GRACE_MS}.
   */
  async close(): Promise<void> {
    const child = this.#link?.child;
    this.#stop();
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const kill = setTimeout(() => child.kill("SIGKILL"), EXIT_GRACE_MS);
    await new Promise((resolve) => child.once("exit", resolve));
    clearTimeout(kill);
  }

  #start(): ChildProcess {
    const { gatherMs, maxGatherMs, heartbeatMs } = this.#options;
    // No environment: the process holds sockets and events, never a key or a token.
    const child = fork(this.#options.script ?? FANOUT_PROCESS, [], {
      execArgv: [],
      env: {},
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    });
    this.#link = { child, inFlight: 0 };
    this.#send({
      kind: "start",
      options: { gatherMs, maxGatherMs, heartbeatMs },
      events: this.#feed.since(0),
    });
    this.#unsubscribe = this.#feed.subscribe((event) => this.#collect(event));
    child.on("message", (message: FromFanout) => this.#heard(message));
    child.on("error", (error) => this.#ended(child, `it failed: ${error.message}`));
    child.on("exit", (code, signal) => this.#ended(child, `it exited (${signal ?? code})`));
    return child;
  }

  #heard(message: FromFanout): void {
    if (message.kind === "dropped") {
      this.#options.onDropped?.(message.count);
      return;
    }
    this.#options.onClients?.(message.count);
    if (message.count > 0) this.#keep();
    else this.#idleTimer ??= setTimeout(() => this.#stop(), this.#options.idleMs).unref();
  }

  /** Cancels stopping the process for want of clients. */
  #keep(): void {
    if (this.#idleTimer) clearTimeout(this.#idleTimer);
    this.#idleTimer = null;
  }

  /** A process ended: if it was not told to, say so (once); its clients reconnect to a new one. */
  #ended(child: ChildProcess, how: string): void {
    if (this.#link?.child === child) {
      this.#forget();
      this.#options.onClients?.(0);
    }
    if (this.#settled.has(child)) return;
    this.#settled.add(child);
    this.#options.onExit?.(`the /events fan-out process ended: ${how}; its clients reconnect`);
  }

  /** Ends the process on purpose: its IPC channel closing ends it (see fanout-process.ts). */
  #stop(): void {
    const child = this.#link?.child;
    if (child) this.#settled.add(child);
    if (child?.connected) child.disconnect();
    this.#forget();
  }

  /** Lets go of the process: no more events for it, no timers. */
  #forget(): void {
    this.#unsubscribe?.();
    this.#unsubscribe = null;
    for (const timer of [this.#batchTimer, this.#idleTimer]) if (timer) clearTimeout(timer);
    this.#batchTimer = null;
    this.#idleTimer = null;
    this.#pending = [];
    this.#link = null;
  }

  #collect(event: PicklebotEvent): void {
    this.#pending.push(event);
    this.#batchTimer ??= setTimeout(() => this.#sendBatch(), BATCH_MS);
  }

  #sendBatch(): void {
    if (this.#batchTimer) clearTimeout(this.#batchTimer);
    this.#batchTimer = null;
    const events = this.#pending;
    if (events.length === 0) return;
    this.#pending = [];
    if ((this.#link?.inFlight ?? 0) >= this.#options.maxBatchesInFlight) {
      this.#options.onDropped?.(events.length);
      return;
    }
    this.#send({ kind: "events", events });
  }

  #send(message: ToFanout): void {
    const link = this.#link;
    if (!link) return;
    link.inFlight += 1;
    link.child.send(message, () => {
      link.inFlight -= 1;
    });
  }
}
