/**
 * The ScheduleStore port: reminders and recurring tasks the agent sets up in a chat with
 * its `schedule` tool, kept in the database (never in `crons/`, which stays the owner's).
 *
 * Glossary
 * - **Schedule**: one reminder or recurring task of one chat. It either delivers a
 *   **message** verbatim (no model call) or runs a **task** (a prompt) as an agent turn;
 *   a **heartbeat** is a recurring check the owner set with `/heartbeat`, run only when
 *   the chat is idle and silent when it finds nothing (the HeartbeatWorker fires it, the
 *   ScheduleWorker leaves it alone).
 * - **One-shot**: a schedule with an `at` instant; it is done once that occurrence fired.
 * - **Recurring**: a schedule with a 5-field cron expression, read on the wall clock of its
 *   `timezone` (the person's zone when it was made).
 * - **Occurrence**: one due time, as epoch ms; it names what it sends
 *   (`schedule:<id>:<occurrence ISO>`), so sending it twice stores it once.
 * - **Fired**: the occurrence was sent (outbox entry or job) and then recorded here; the
 *   last fired occurrence only moves forward, so it fires at most once across restarts and
 *   across the processes of a cluster.
 */
import type { ChatReplyTarget } from "./queue.js";

/** What a schedule does when due. */
export type ScheduleKind = "message" | "task" | "heartbeat";

/** Where a schedule is in its life. */
export type ScheduleState = "active" | "done" | "cancelled";

/** Everything needed to create a schedule. Times are epoch milliseconds. */
export interface NewSchedule {
  /** Short id the person and the owner name it by (`cancel <id>`). */
  id: string;
  /** The agent of the chat; a task runs with it. */
  agentId: string;
  /** The chat that asked, where every occurrence goes. */
  chat: ChatReplyTarget;
  /** Who asked: the chat user's id (or the owner's name for the CLI). */
  createdBy: string;
  kind: ScheduleKind;
  /** The message to deliver, or the task's prompt. */
  text: string;
  /** The one instant of a one-shot schedule; null for a recurring one. */
  at: number | null;
  /** The cron expression of a recurring schedule; null for a one-shot one. */
  cron: string | null;
  /** IANA zone the schedule was read in, and in which a recurring one is evaluated. */
  timezone: string;
  createdAt: number;
}

/** A stored schedule. */
export interface Schedule extends NewSchedule {
  state: ScheduleState;
  /** The last occurrence that fired, or null. */
  lastFiredAt: number | null;
  /** When it was cancelled (by the chat or the owner), or null. */
  cancelledAt: number | null;
}

/** Which schedules {@link ScheduleStore.list} returns. */
export interface ScheduleFilter {
  /** Only this chat's. (Default: every chat) */
  chat?: ChatReplyTarget;
  /** Only these states. (Default: every state) */
  states?: ScheduleState[];
}

/** Durable schedules, shared by every process of one workspace. */
export interface ScheduleStore {
  /**
   * Stores a new active schedule unless its chat already has `maxActivePerChat` active
   * ones, its heartbeat not counted (the owner's, not a reminder); returns null (storing
   * nothing) then. Check and insert are one transaction.
   */
  create(schedule: NewSchedule, maxActivePerChat: number): Promise<Schedule | null>;
  /** The schedule with this id, or null. */
  get(id: string): Promise<Schedule | null>;
  /** Schedules matching `filter`, oldest first. */
  list(filter?: ScheduleFilter): Promise<Schedule[]>;
  /**
   * Cancels an active schedule (of `chat` only, when given); returns it as stored now, or
   * null when there is no such active schedule.
   */
  cancel(id: string, now: number, chat?: ChatReplyTarget): Promise<Schedule | null>;
  /**
   * Records `occurrenceMs` as the schedule's last fired occurrence, atomically, and marks
   * it done when `options.done`. Returns false, changing nothing, when the schedule is not
   * active or that occurrence or a later one was already recorded (by any process).
   */
  recordFired(id: string, occurrenceMs: number, options: { done: boolean }): Promise<boolean>;
}

/** What the `schedule` tool asks to create, in the person's words. */
export interface ScheduleRequest {
  /** One-shot: "in 20 minutes", "next Tuesday at 9:00", ISO 8601. */
  when?: string;
  /** Recurring: a cron expression or words ("every weekday at 8"). */
  repeat?: string;
  /** Delivered verbatim when due. */
  message?: string;
  /** Run as a prompt when due. */
  task?: string;
  /** IANA zone the person named for this one. (Default: the person's zone) */
  timezone?: string;
}

/**
 * The schedules of the chat a turn runs in, as the `schedule` tool uses them. Every
 * answer is text for the model; a refusal throws a ToolError that says what to do.
 */
export interface ChatSchedules {
  /** Creates a schedule; answers with its id and its time as an absolute date and zone. */
  create(request: ScheduleRequest): Promise<string>;
  /** The chat's active schedules, one per line. */
  list(): Promise<string>;
  /** Cancels one of the chat's active schedules. */
  cancel(id: string): Promise<string>;
}

/** Who sends `/heartbeat` in a chat, as {@link ChatHeartbeats.command} needs them. */
export interface HeartbeatSender {
  /** The chat's current agent: a heartbeat set now runs with it. */
  agentId: string;
  /** The sender's chat user id. */
  userId: string;
}

/**
 * `/heartbeat` in a chat, for its owner (the inbox refuses anyone else): `every 30m <what
 * to check>` sets the chat's heartbeat, `off` stops it, nothing shows it. Every answer,
 * refusals too, is the text to send back to the chat.
 */
export interface ChatHeartbeats {
  command(chat: ChatReplyTarget, argument: string, sender: HeartbeatSender): Promise<string>;
}
