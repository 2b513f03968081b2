/**
 * The Storage port: everything a workspace keeps, opened by one backend driver
 * (`src/storage/<backend>/`), and the checkpoint that spans its history and its queue.
 */
import type { ApprovalStore } from "./approval.js";
import type { OutboxStore, PairingStore } from "./chat.js";
import type { ClusterStore, StopRelay } from "./cluster.js";
import type { CronStateStore } from "./cron.js";
import type { EventRelay } from "./events.js";
import type { AppendOptions, HistoryStore } from "./history.js";
import type { MemoryStore, RecallStore } from "./memory.js";
import type { ChatMessage } from "./messages.js";
import type { ClaimedJob, JobAdmin, JobQueue } from "./queue.js";
import type { ScheduleStore } from "./schedule.js";
import type { UsageLedger } from "./usage.js";

/**
 * Writes a job's user message into its session and marks the job checkpointed, in one
 * transaction where the backend allows it; `charge` (what a speech service charged for
 * the message: the transcription of its voice notes) becomes the message's row of the
 * usage ledger, written with it, so it is counted once. Resolves false when the job's
 * lock was lost (another process owns it now): the caller stops.
 */
export type Checkpoint = (
  job: ClaimedJob,
  sessionId: string,
  message: ChatMessage,
  charge?: MessageCharge,
) => Promise<boolean>;

/** A message's row of the usage ledger, as {@link AppendOptions} carries it. */
export type MessageCharge = Required<Pick<AppendOptions, "usage" | "call">>;

/** The messages that close a job's unfinished turn, and the session they go to. */
export interface TurnClosing {
  sessionId: string;
  messages: ChatMessage[];
}

/**
 * Ends a job for good, `failed` (its last attempt failed) or `stopped` (with `stopped`:
 * the person stopped it), and appends `closing` to its session, in one transaction where
 * the backend allows it, so a stopped or failed turn never leaves a tool call without its
 * result. Resolves false when the job's lock was lost (another process owns it now;
 * nothing is written).
 */
export type FailJob = (
  job: ClaimedJob,
  error: string,
  closing: TurnClosing | null,
  options?: { stopped?: boolean },
) => Promise<boolean>;

/** What several processes sharing one storage need beyond the stores (distributed mode). */
export interface Cluster {
  store: ClusterStore;
  stops: StopRelay;
  /** Carries the event stream between the instances. */
  events: EventRelay;
}

/** Connections in a process's PostgreSQL pool (the default of `queue.pool_size`). */
export const DEFAULT_POOL_SIZE = 10;

/** The storage of one workspace, opened and ready. */
export interface Storage {
  history: HistoryStore;
  /** The model calls recorded with the history's messages. */
  usage: UsageLedger;
  queue: JobQueue & JobAdmin;
  cronState: CronStateStore;
  checkpoint: Checkpoint;
  failJob: FailJob;
  /** Chat replies waiting for (or done with) delivery. */
  outbox: OutboxStore;
  /** Chat users admitted by `picklebot pairing approve`. */
  pairing: PairingStore;
  /** Tool calls waiting for the owner's consent, and the "always allow" grants. */
  approvals: ApprovalStore;
  /** The agents' notes and what they know about each person. */
  memory: MemoryStore;
  /** Who each session is with, its memory snapshot, and the search over past sessions. */
  recall: RecallStore;
  /** Reminders and recurring tasks the agents set up in chats (the `schedule` tool). */
  schedules: ScheduleStore;
  /** The processes sharing this storage, or null when it belongs to one process. */
  cluster: Cluster | null;
  /** Closes the queue, the history store and the database. */
  close(): Promise<void>;
}
