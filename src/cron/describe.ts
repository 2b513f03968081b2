import { formatReplyTarget } from "../base/chat-address.js";
import type { Clock, CronStateStore, ScheduleKind, ScheduleStore } from "../ports/index.js";
import type { CronDefinition } from "./definition.js";
import { nextOccurrence } from "./schedule.js";
import { nextScheduleOccurrence } from "./schedule-times.js";

/**
 * - `scheduled`: enabled, will fire at `nextRunAt`.
 * - `disabled`: `enabled: false` in its file.
 * - `done (one_off)`: a one-off cron that has fired; it stays done even if its file changes.
 */
export type CronStatus = "scheduled" | "disabled" | "done (one_off)";

/** One line of `picklebot cron list` and `picklebot status`. Times are epoch ms. */
export interface CronRow {
  id: string;
  schedule: string;
  timezone: string;
  agent: string;
  /** `enabled` as written in the file. */
  enabled: boolean;
  /** Null unless the status is `scheduled`. */
  nextRunAt: number | null;
  /** The last occurrence that fired, or null. */
  lastFiredAt: number | null;
  /** `telegram:<chat_id>`, `discord:<channel_id>` or `silent`. */
  deliverTo: string;
  status: CronStatus;
}

/** Describes crons for listings: their status, next run and last fired occurrence. */
export async function describeCrons(
  crons: readonly CronDefinition[],
  state: CronStateStore,
  clock: Clock,
): Promise<CronRow[]> {
  const now = clock.now();
  const rows: CronRow[] = [];
  for (const cron of crons) {
    const known = await state.get(cron.id);
    const status: CronStatus = known?.disabled
      ? "done (one_off)"
      : cron.enabled
        ? "scheduled"
        : "disabled";
    rows.push({
      id: cron.id,
      schedule: cron.schedule,
      timezone: cron.timezone,
      agent: cron.agentId,
      enabled: cron.enabled,
      nextRunAt: status === "scheduled" ? nextOccurrence(cron, now) : null,
      lastFiredAt: known?.lastFiredAt ?? null,
      deliverTo: formatReplyTarget(cron.deliverTo),
      status,
    });
  }
  return rows;
}

/** One line of the schedules agents set up in chats (`cron list`, the dashboard). */
export interface ScheduleRow {
  id: string;
  /** `telegram:<chat_id>`, `discord:<channel_id>`. */
  chat: string;
  /** Who made it (`agent <id>` for the `schedule` tool). */
  createdBy: string;
  agent: string;
  kind: ScheduleKind;
  text: string;
  /** The cron expression of a recurring schedule, or null for a one-shot one. */
  repeat: string | null;
  timezone: string;
  /** The next run, or null when none is left. */
  nextRunAt: number | null;
  lastFiredAt: number | null;
}

/** The active schedules of every chat, oldest first, for the owner's listings. */
export async function describeSchedules(
  store: ScheduleStore,
  clock: Clock,
): Promise<ScheduleRow[]> {
  const now = clock.now();
  const active = await store.list({ states: ["active"] });
  return active.map((schedule) => ({
    id: schedule.id,
    chat: formatReplyTarget(schedule.chat),
    createdBy: schedule.createdBy,
    agent: schedule.agentId,
    kind: schedule.kind,
    text: schedule.text,
    repeat: schedule.cron,
    timezone: schedule.timezone,
    nextRunAt: nextScheduleOccurrence(schedule, now),
    lastFiredAt: schedule.lastFiredAt,
  }));
}
