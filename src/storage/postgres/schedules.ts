/**
 * The {@link ScheduleStore} in PostgreSQL (migration 017), shared by every process of a
 * cluster: the tool creates schedules on any instance, the leader fires them. Rows map,
 * and statements read, as in SQLite.
 */
import type pg from "pg";
import type {
  ChatReplyTarget,
  NewSchedule,
  Schedule,
  ScheduleFilter,
  ScheduleStore,
} from "../../ports/index.js";
import {
  insertParams,
  listQuery,
  recordFiredParams,
  SCHEDULE_SQL,
  type ScheduleRow,
  toSchedule,
  toSchedules,
} from "../schedule-rows.js";
import { inTransaction, queryRetrying } from "./database.js";

/** `?` placeholders become PostgreSQL's `$1`, `$2`… */
function numbered(text: string): string {
  let n = 0;
  return text.replace(/\?/g, () => `$${++n}`);
}

const SQL = Object.fromEntries(
  Object.entries(SCHEDULE_SQL).map(([name, text]) => [name, numbered(text)]),
) as Record<keyof typeof SCHEDULE_SQL, string>;

/** Schedules in PostgreSQL. */
export class PostgresScheduleStore implements ScheduleStore {
  readonly #pool: pg.Pool;

  /** `pool`: from `openPostgres` (migrated); never closed here. */
  constructor({ pool }: { pool: pg.Pool }) {
    this.#pool = pool;
  }

  async create(schedule: NewSchedule, maxActivePerChat: number): Promise<Schedule | null> {
    const { kind, chatId } = schedule.chat;
    const created = await inTransaction(this.#pool, async (client) => {
      // One creator per chat at a time, so two instances cannot both pass the count.
      await client.query("SELECT pg_advisory_xact_lock(hashtext($1))", [
        `schedules:${kind}:${chatId}`,
      ]);
      const count = await client.query<{ n: string }>(SQL.countActive, [kind, chatId]);
      if (Number(count.rows[0]?.n ?? 0) >= maxActivePerChat) return false;
      await client.query(SQL.insert, insertParams(schedule));
      return true;
    });
    return created ? this.get(schedule.id) : null;
  }

  async get(id: string): Promise<Schedule | null> {
    const { rows } = await queryRetrying<ScheduleRow>(this.#pool, SQL.get, [id]);
    return rows[0] ? toSchedule(rows[0]) : null;
  }

  async list(filter: ScheduleFilter = {}): Promise<Schedule[]> {
    const { text, params } = listQuery(filter);
    return toSchedules((await queryRetrying<ScheduleRow>(this.#pool, numbered(text), params)).rows);
  }

  // Safe to repeat after a lost connection: a second run finds the schedule not active.
  async cancel(id: string, now: number, chat?: ChatReplyTarget): Promise<Schedule | null> {
    const { rows } =
      chat === undefined
        ? await queryRetrying<ScheduleRow>(this.#pool, SQL.cancel, [now, id])
        : await queryRetrying<ScheduleRow>(this.#pool, SQL.cancelInChat, [
            now,
            id,
            chat.kind,
            chat.chatId,
          ]);
    return rows[0] ? toSchedule(rows[0]) : null;
  }

  async recordFired(
    id: string,
    occurrenceMs: number,
    options: { done: boolean },
  ): Promise<boolean> {
    const params = recordFiredParams(id, occurrenceMs, options.done);
    const result = await queryRetrying(this.#pool, SQL.recordFired, params);
    return result.rowCount === 1;
  }
}
