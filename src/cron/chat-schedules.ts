/**
 * The schedules of one chat, as the `schedule` tool sees them: creating one checks its
 * times and the limits of `tools.schedule` (docs/guides/reminders.md), then stores it; the
 * ScheduleWorker fires it. Every refusal is a ToolError the model can act on.
 */
import { randomBytes } from "node:crypto";
import { chatAddressOf, chatReplyTarget, formatChatAddress } from "../base/chat-address.js";
import { ToolError } from "../base/errors.js";
import { isChatSessionKey } from "../base/session-key.js";
import { formatTime } from "../base/time-zone.js";
import type { Config } from "../config/index.js";
import type {
  ChatReplyTarget,
  ChatSchedules,
  Clock,
  NewSchedule,
  ReplyTarget,
  Schedule,
  ScheduleRequest,
  ScheduleStore,
} from "../ports/index.js";
import { nextScheduleOccurrence } from "./schedule-times.js";
import { checkZone, minutesInWords, parseRepeat, parseWhen, shortestGapMs } from "./when.js";
import { describeSchedule } from "./words.js";

/** The limits of `tools.schedule`. */
export interface ScheduleLimits {
  /** `max_per_chat`: active schedules one chat may have. */
  maxPerChat: number;
  /** `min_interval_m`, in ms: shortest time between two runs of a recurring schedule. */
  minIntervalMs: number;
}

/** Options of {@link ChatScheduleDesk}. */
export interface ChatScheduleDeskOptions {
  store: ScheduleStore;
  clock: Clock;
  limits: ScheduleLimits;
  /** The chat the turn runs in, or null for a turn of no chat (a cron without one, the web). */
  chat: ChatReplyTarget | null;
  /** The agent of the turn; a task runs with it. */
  agentId: string;
  /** The person's zone: `tools.schedule.time_zones` for the chat, else `timezone`. */
  timezone: string;
  /**
   * Why this turn may not create schedules (a scheduled run, a cron, a subagent: no
   * loops), or null when it may. Listing and cancelling are always allowed.
   */
  createRefusal: string | null;
}

/** Characters of a schedule id: no look-alikes, easy to read out and type. */
const ID_ALPHABET = "abcdefghjkmnpqrstuvwxyz23456789";

/** A new schedule's id: six characters of {@link ID_ALPHABET}. */
export function newScheduleId(): string {
  return [...randomBytes(6)].map((byte) => ID_ALPHABET[byte % ID_ALPHABET.length]).join("");
}

/** The `schedule` tool's view of one chat's schedules. */
export class ChatScheduleDesk implements ChatSchedules {
  readonly #options: ChatScheduleDeskOptions;

  constructor(options: ChatScheduleDeskOptions) {
    this.#options = options;
  }

  async create(request: ScheduleRequest): Promise<string> {
    const { store, clock, limits, agentId, createRefusal } = this.#options;
    if (createRefusal !== null) throw new ToolError(`schedule: ${createRefusal}`);
    const chat = this.#chat();
    const text = whatToDo(request);
    const timezone = checkZone(request.timezone ?? this.#options.timezone);
    const now = clock.now();
    const timing = this.#timing(request, now, timezone);
    const schedule: NewSchedule = {
      id: newScheduleId(),
      agentId,
      chat,
      createdBy: `agent ${agentId}`,
      ...text,
      ...timing,
      timezone,
      createdAt: now,
    };
    const stored = await store.create(schedule, limits.maxPerChat);
    if (stored === null) {
      throw new ToolError(
        `schedule: this chat already has ${limits.maxPerChat} active schedules, the most allowed (tools.schedule.max_per_chat); cancel one first (action "list" shows their ids)`,
      );
    }
    return `Scheduled ${stored.id}: ${describe(stored, now)}. Tell the person this date and time.`;
  }

  async list(): Promise<string> {
    return chatScheduleListing(this.#options.store, this.#options.clock, this.#chat());
  }

  async cancel(id: string): Promise<string> {
    const { store, clock } = this.#options;
    const chat = this.#chat();
    // A schedule's kind never changes, so this check holds for the cancel below.
    const heartbeat = await store.get(id);
    if (heartbeat?.kind === "heartbeat") {
      throw new ToolError(
        sameChat(heartbeat.chat, chat)
          ? `schedule: "${id}" is this chat's heartbeat, which only the owner turns off (/heartbeat off)`
          : noScheduleText(id),
      );
    }
    const cancelled = await store.cancel(id, clock.now(), chat);
    if (cancelled === null) throw new ToolError(noScheduleText(id));
    return `Cancelled ${id} (${cancelled.kind} "${cancelled.text}").`;
  }

  #chat(): ChatReplyTarget {
    if (this.#options.chat !== null) return this.#options.chat;
    throw new ToolError(
      "schedule: this conversation is not a chat; reminders go to the Telegram or Discord chat that asks for them",
    );
  }

  /** `at` for a one-shot schedule or `cron` for a recurring one, checked. */
  #timing(request: ScheduleRequest, now: number, timezone: string) {
    const { when, repeat } = request;
    if ((when === undefined) === (repeat === undefined)) {
      throw new ToolError(
        'schedule: give "when" for a one-shot reminder or "repeat" for a recurring one (exactly one of them)',
      );
    }
    if (when !== undefined) return { at: parseWhen(when, now, timezone), cron: null };
    const cron = parseRepeat(repeat as string);
    const gap = shortestGapMs(cron, timezone, now);
    const { minIntervalMs } = this.#options.limits;
    if (gap < minIntervalMs) {
      throw new ToolError(
        `schedule: "${repeat}" runs every ${minutesInWords(gap)}; recurring schedules run at most every ${minutesInWords(minIntervalMs)} (tools.schedule.min_interval_m); choose a longer interval`,
      );
    }
    return { at: null, cron };
  }
}

/** The refusal of a cancel of an id this chat has no active schedule by. */
function noScheduleText(id: string): string {
  return `schedule: this chat has no active schedule "${id}"; action "list" shows the ids of its schedules`;
}

function sameChat(a: ChatReplyTarget, b: ChatReplyTarget): boolean {
  return a.kind === b.kind && a.chatId === b.chatId;
}

/** The kind and text of a request: exactly one of `message` and `task`. */
function whatToDo(request: ScheduleRequest): Pick<NewSchedule, "kind" | "text"> {
  const message = request.message?.trim();
  const task = request.task?.trim();
  if (Boolean(message) === Boolean(task)) {
    throw new ToolError(
      'schedule: give "message" (sent verbatim when due) or "task" (a prompt you run when due), exactly one of them',
    );
  }
  return message ? { kind: "message", text: message } : { kind: "task", text: task as string };
}

/** A chat's active schedules, one line each (the tool's `list`, `/reminders`). */
export async function chatScheduleListing(
  store: ScheduleStore,
  clock: Clock,
  chat: ChatReplyTarget,
): Promise<string> {
  const listed = await store.list({ chat, states: ["active"] });
  // The chat's heartbeat is the owner's (/heartbeat shows it), not a reminder.
  const active = listed.filter((schedule) => schedule.kind !== "heartbeat");
  if (active.length === 0) return "This chat has no active schedules.";
  return active.map((schedule) => `${schedule.id}: ${describe(schedule, clock.now())}`).join("\n");
}

/** One line about a schedule: when (absolute, with the zone), what. */
export function describe(schedule: Schedule, now: number): string {
  const what = `${schedule.kind} "${schedule.text}"`;
  const next = nextScheduleOccurrence(schedule, now);
  const nextText = next === null ? "no next run" : formatTime(next, schedule.timezone);
  if (schedule.cron === null) return `${what} at ${nextText}`;
  const words = describeSchedule({ id: schedule.id, schedule: schedule.cron });
  const repeat = words ?? schedule.cron;
  return `${what}, ${repeat} (${schedule.cron}, ${schedule.timezone}), next at ${nextText}`;
}

/** What {@link chatSchedulesOfTurn} reads of a turn. */
export interface ScheduleTurn {
  agentId: string;
  sessionKey: string;
  replyTo?: ReplyTarget | undefined;
}

/**
 * The `schedule` tool's desk for one turn: the chat its reply goes to, the person's zone,
 * and whether it may create (only a chat's own conversation may: a scheduled task, a cron
 * run, a subagent cannot, so no run ever schedules itself again).
 */
export function chatSchedulesOfTurn(
  turn: ScheduleTurn,
  services: { store: ScheduleStore; clock: Clock; config: Config },
): ChatScheduleDesk {
  const { config } = services;
  const address = turn.replyTo === undefined ? null : chatAddressOf(turn.replyTo);
  const settings = config.tools.schedule;
  return new ChatScheduleDesk({
    ...services,
    limits: { maxPerChat: settings.max_per_chat, minIntervalMs: settings.min_interval_m * 60_000 },
    chat: address === null ? null : chatReplyTarget(address),
    agentId: turn.agentId,
    timezone:
      (address === null ? undefined : settings.time_zones[formatChatAddress(address)]) ??
      config.timezone,
    createRefusal: isChatSessionKey(turn.sessionKey)
      ? null
      : "only a chat's own conversation creates schedules; this run (a scheduled task, a cron run or a subagent) may list and cancel them but not create one (no loops)",
  });
}
