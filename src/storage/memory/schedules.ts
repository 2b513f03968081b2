import type {
  ChatReplyTarget,
  NewSchedule,
  Schedule,
  ScheduleFilter,
  ScheduleStore,
} from "../../ports/index.js";

function sameChat(a: ChatReplyTarget, b: ChatReplyTarget): boolean {
  return a.kind === b.kind && a.chatId === b.chatId;
}

/** A {@link ScheduleStore} in memory: for tests. */
export class MemoryScheduleStore implements ScheduleStore {
  readonly #schedules = new Map<string, Schedule>();

  async create(schedule: NewSchedule, maxActivePerChat: number): Promise<Schedule | null> {
    // No await before the insert: the count and the insert are one step. The chat's
    // heartbeat is not one of its reminders.
    const active = [...this.#schedules.values()].filter(
      (stored) =>
        stored.state === "active" &&
        stored.kind !== "heartbeat" &&
        sameChat(stored.chat, schedule.chat),
    );
    if (active.length >= maxActivePerChat || this.#schedules.has(schedule.id)) return null;
    const stored: Schedule = { ...schedule, state: "active", lastFiredAt: null, cancelledAt: null };
    this.#schedules.set(schedule.id, stored);
    return { ...stored };
  }

  async get(id: string): Promise<Schedule | null> {
    const schedule = this.#schedules.get(id);
    return schedule === undefined ? null : { ...schedule };
  }

  async list(filter: ScheduleFilter = {}): Promise<Schedule[]> {
    return [...this.#schedules.values()]
      .filter((schedule) => filter.chat === undefined || sameChat(schedule.chat, filter.chat))
      .filter((schedule) => filter.states === undefined || filter.states.includes(schedule.state))
      .sort((a, b) => a.createdAt - b.createdAt || a.id.localeCompare(b.id))
      .map((schedule) => ({ ...schedule }));
  }

  async cancel(id: string, now: number, chat?: ChatReplyTarget): Promise<Schedule | null> {
    const schedule = this.#schedules.get(id);
    if (schedule?.state !== "active") return null;
    if (chat !== undefined && !sameChat(schedule.chat, chat)) return null;
    schedule.state = "cancelled";
    schedule.cancelledAt = now;
    return { ...schedule };
  }

  async recordFired(
    id: string,
    occurrenceMs: number,
    options: { done: boolean },
  ): Promise<boolean> {
    const schedule = this.#schedules.get(id);
    if (schedule?.state !== "active") return false;
    if (schedule.lastFiredAt !== null && schedule.lastFiredAt >= occurrenceMs) return false;
    schedule.lastFiredAt = occurrenceMs;
    if (options.done) schedule.state = "done";
    return true;
  }
}
