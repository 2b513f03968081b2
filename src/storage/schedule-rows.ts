/** The `schedules` table's rows, alike for the SQLite and PostgreSQL stores (migrations 015/017). */

import { chatReplyTarget, isChatPlatform } from "../base/chat-address.js";
import type {
  NewSchedule,
  Schedule,
  ScheduleFilter,
  ScheduleKind,
  ScheduleState,
} from "../ports/index.js";

/** A row of `schedules`, as SQLite and PostgreSQL return it. */
export interface ScheduleRow {
  id: string;
  agent_id: string;
  platform: string;
  chat_id: string;
  created_by: string;
  kind: ScheduleKind;
  text: string;
  at: number | null;
  cron: string | null;
  timezone: string;
  state: ScheduleState;
  last_fired_at: number | null;
  created_at: number;
  cancelled_at: number | null;
}

const COLUMNS =
  "id, agent_id, platform, chat_id, created_by, kind, text, at, cron, timezone, state, last_fired_at, created_at, cancelled_at";

/**
 * The statements, with `?` placeholders (the PostgreSQL store numbers them). Each write is
 * one statement, so its condition and its change are atomic across processes.
 */
export const SCHEDULE_SQL = {
  countActive:
    "SELECT count(*) AS n FROM schedules WHERE platform = ? AND chat_id = ? AND state = 'active' AND kind <> 'heartbeat'",
  insert: `INSERT INTO schedules (id, agent_id, platform, chat_id, created_by, kind, text, at, cron, timezone, created_at)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  get: `SELECT ${COLUMNS} FROM schedules WHERE id = ?`,
  cancel: `UPDATE schedules SET state = 'cancelled', cancelled_at = ?
    WHERE id = ? AND state = 'active' RETURNING ${COLUMNS}`,
  cancelInChat: `UPDATE schedules SET state = 'cancelled', cancelled_at = ?
    WHERE id = ? AND state = 'active' AND platform = ? AND chat_id = ? RETURNING ${COLUMNS}`,
  // The compare-and-set: an older or equal occurrence, or a schedule no longer active,
  // updates no row, in the same statement that would write it.
  recordFired: `UPDATE schedules
    SET last_fired_at = ?, state = CASE WHEN ? = 1 THEN 'done' ELSE state END
    WHERE id = ? AND state = 'active' AND (last_fired_at IS NULL OR last_fired_at < ?)`,
} as const;

/** `SELECT` of the schedules `filter` names, oldest first, and its parameters. */
export function listQuery(filter: ScheduleFilter): { text: string; params: (string | number)[] } {
  const where: string[] = [];
  const params: (string | number)[] = [];
  if (filter.chat !== undefined) {
    where.push("platform = ? AND chat_id = ?");
    params.push(filter.chat.kind, filter.chat.chatId);
  }
  if (filter.states !== undefined) {
    where.push(`state IN (${filter.states.map(() => "?").join(", ")})`);
    params.push(...filter.states);
  }
  const clause = where.length === 0 ? "" : ` WHERE ${where.join(" AND ")}`;
  return {
    text: `SELECT ${COLUMNS} FROM schedules${clause} ORDER BY created_at, id`,
    params,
  };
}

/** The values of {@link SCHEDULE_SQL.insert}, in its order. */
export function insertParams(schedule: NewSchedule): (string | number | null)[] {
  return [
    schedule.id,
    schedule.agentId,
    schedule.chat.kind,
    schedule.chat.chatId,
    schedule.createdBy,
    schedule.kind,
    schedule.text,
    schedule.at,
    schedule.cron,
    schedule.timezone,
    schedule.createdAt,
  ];
}

/** The values of {@link SCHEDULE_SQL.recordFired}, in its order. */
export function recordFiredParams(id: string, occurrenceMs: number, done: boolean): unknown[] {
  return [occurrenceMs, done ? 1 : 0, id, occurrenceMs];
}

/** Maps a stored row; a row whose platform is unknown (edited by hand) reads as null. */
export function toSchedule(row: ScheduleRow): Schedule | null {
  if (!isChatPlatform(row.platform)) return null;
  return {
    id: row.id,
    agentId: row.agent_id,
    chat: chatReplyTarget({ platform: row.platform, chatId: row.chat_id }),
    createdBy: row.created_by,
    kind: row.kind,
    text: row.text,
    at: row.at === null ? null : Number(row.at),
    cron: row.cron,
    timezone: row.timezone,
    createdAt: Number(row.created_at),
    state: row.state,
    lastFiredAt: row.last_fired_at === null ? null : Number(row.last_fired_at),
    cancelledAt: row.cancelled_at === null ? null : Number(row.cancelled_at),
  };
}

/** The schedules of `rows` a reader can use. */
export function toSchedules(rows: ScheduleRow[]): Schedule[] {
  return rows.map(toSchedule).filter((schedule) => schedule !== null);
}
