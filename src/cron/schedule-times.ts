/**
 * When a schedule of a chat is due: a one-shot one at its instant, a recurring one at the
 * occurrences of its cron expression in its zone (the crons' rules, schedule.ts).
 */
import type { Schedule } from "../ports/index.js";
import { latestOccurrenceBetween, nextOccurrence } from "./schedule.js";

/** The schedule timing {@link nextOccurrence} reads: a recurring schedule's. */
function timingOf(schedule: Schedule & { cron: string }) {
  return { id: schedule.id, schedule: schedule.cron, timezone: schedule.timezone };
}

/** The occurrence of `schedule` due at `now` and not fired yet, or null. */
export function dueOccurrence(schedule: Schedule, now: number): number | null {
  if (schedule.cron === null) {
    const at = schedule.at as number;
    return at <= now && schedule.lastFiredAt === null ? at : null;
  }
  const since = schedule.lastFiredAt ?? schedule.createdAt;
  return latestOccurrenceBetween(timingOf({ ...schedule, cron: schedule.cron }), since, now);
}

/** The next occurrence of `schedule` after `now`, or null when it has none. */
export function nextScheduleOccurrence(schedule: Schedule, now: number): number | null {
  if (schedule.cron === null) return schedule.lastFiredAt === null ? schedule.at : null;
  return nextOccurrence(timingOf({ ...schedule, cron: schedule.cron }), now);
}
