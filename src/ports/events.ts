/**
 * The event stream: every state change of a running picklebot as one small JSON object,
 * served at `GET /events` (Server-Sent Events), printed by `picklebot events`, and in
 * distributed mode carried between instances so each instance's stream shows the whole
 * cluster. The shapes below are the documented, stable contract: add fields, never rename
 * or remove one.
 *
 * Publishing never waits: a publisher calls {@link EventSink.publish} and goes on; a slow
 * or stalled subscriber loses events (counted) instead of slowing a worker.
 */

/** The fields every event carries. Times are epoch milliseconds. */
export interface EventBase {
  /**
   * Position in this instance's stream, increasing; what an SSE client sends back as
   * `Last-Event-ID` to resume. Set by the feed, not the publisher.
   */
  seq: number;
  /** When the change happened. */
  at: number;
  /** The instance the change happened on (`local` outside distributed mode). */
  instance: string;
}

/** A job's state changed. */
export interface JobEvent extends EventBase {
  type:
    | "job.enqueued"
    | "job.started"
    | "job.checkpointed"
    | "job.parked"
    | "job.done"
    | "job.failed"
    | "job.stopped";
  jobId: string;
  agentId: string;
  sessionKey: string;
  /** Attempts started so far. */
  attempts: number;
  /**
   * The error, on `job.failed` (and on a retry: `job.failed` with `retrying: true`) and
   * `job.stopped`.
   */
  error?: string;
  /** On `job.failed`: the job will run again. */
  retrying?: boolean;
  /** On `job.parked`: what it waits for (`subagents`, `approval`, `time`, `batch`). */
  waitingFor?: string;
}

/** A model call started or ended. */
export interface ModelEvent extends EventBase {
  type: "model.started" | "model.ended";
  jobId: string | null;
  agentId: string;
  sessionId: string;
  model: string;
  /** On `model.ended`: the call's tokens. */
  usage?: { input: number; output: number; cacheRead: number; cacheWrite: number };
}

/** A tool call started or ended. */
export interface ToolEvent extends EventBase {
  type: "tool.started" | "tool.ended";
  jobId: string | null;
  agentId: string;
  sessionId: string;
  tool: string;
  callId: string;
  /** On `tool.ended`: the tool reported an error. */
  isError?: boolean;
}

/** An outbox message reached its chat, or the platform refused it for good. */
export interface MessageEvent extends EventBase {
  type: "message.delivered" | "message.refused";
  platform: string;
  chatId: string;
  jobId: string | null;
  /** On `message.refused`: the platform's reason. */
  error?: string;
}

/** A cron occurrence was enqueued. */
export interface CronEvent extends EventBase {
  type: "cron.fired";
  cronId: string;
  agentId: string;
  jobId: string;
}

/**
 * A memory changed: an entry added, replaced or removed by the agent's `memory` tool, or
 * the memory edited or cleared from the dashboard or by `/forget`. The text is not in the
 * event (`picklebot memory show --history` has it).
 */
export interface MemoryEvent extends EventBase {
  type: "memory.changed";
  agentId: string;
  /** `agent` (the agent's notes) or a person key. */
  scope: string;
  /** `add`, `replace`, `remove`, `edit`, `clear`, `link`. */
  action: string;
  /** `agent`, `cli`, `dashboard`, `chat`. */
  by: string;
  jobId: string | null;
  sessionId: string | null;
  /** The tool call that made it, for the agent's changes. */
  callId: string | null;
}

/** A supervised worker crashed or was restarted. */
export interface WorkerEvent extends EventBase {
  type: "worker.crashed" | "worker.restarted";
  worker: string;
  error?: string;
}

/** Cluster membership and leadership (distributed mode). */
export interface ClusterEvent extends EventBase {
  type: "instance.joined" | "instance.left" | "leader.changed";
  /** The instance that joined, left, or now leads (null: no leader). */
  subject: string | null;
}

/** Every event of the stream. */
export type PicklebotEvent =
  | JobEvent
  | ModelEvent
  | ToolEvent
  | MessageEvent
  | CronEvent
  | MemoryEvent
  | WorkerEvent
  | ClusterEvent;

/** Every event type, for help texts and validation. */
export type PicklebotEventType = PicklebotEvent["type"];

/** Every event type, in the order docs/operations/observability.md documents them. */
export const EVENT_TYPES = [
  "job.enqueued",
  "job.started",
  "job.checkpointed",
  "job.parked",
  "job.done",
  "job.failed",
  "job.stopped",
  "model.started",
  "model.ended",
  "tool.started",
  "tool.ended",
  "message.delivered",
  "message.refused",
  "cron.fired",
  "memory.changed",
  "worker.crashed",
  "worker.restarted",
  "instance.joined",
  "instance.left",
  "leader.changed",
] as const satisfies readonly PicklebotEventType[];

/** An event as a publisher hands it over: the feed sets `seq`, `at` and `instance`. */
export type NewEvent = PicklebotEvent extends infer E
  ? E extends PicklebotEvent
    ? Omit<E, "seq" | "at" | "instance"> & { at?: number }
    : never
  : never;

/** Where a part of the server reports state changes. Never blocks, never throws. */
export interface EventSink {
  publish(event: NewEvent): void;
}

/** Stops a subscription. */
export type Unsubscribe = () => void;

/** Reads the stream: a bounded buffer of recent events and live subscriptions. */
export interface EventFeed {
  /** The `seq` of the latest event (0 before the first). */
  readonly lastSeq: number;
  /** Buffered events with `seq` greater than `after`, oldest first. */
  since(after: number): PicklebotEvent[];
  /**
   * Calls `listener` for every later event, one at a time: a returned promise holds back
   * the next event until it settles. A listener that throws (or rejects) is dropped. Events
   * published while a listener is slow are queued up to a bound, then dropped and counted.
   */
  subscribe(listener: (event: PicklebotEvent) => void | Promise<void>): Unsubscribe;
}

/**
 * Carries events between the instances of a cluster (PostgreSQL NOTIFY), so that each
 * instance's stream shows the whole cluster. An instance hears its own events too: the
 * receiver skips those (it published them already).
 */
export interface EventRelay {
  /** Sends an event of this instance to every instance; never waits, never throws. */
  send(event: PicklebotEvent): void;
  /**
   * Listens for the cluster's events. `onError` hears of a lost connection (it reconnects
   * on its own; events sent meanwhile are lost) and of events it had to drop.
   */
  start(receive: (event: PicklebotEvent) => void, onError: (error: Error) => void): void;
  /** Sends what is still queued, then stops listening. */
  close(): Promise<void>;
}

/** A sink that drops every event: the default of the layers that publish. */
export const noEvents: EventSink = { publish: () => {} };
