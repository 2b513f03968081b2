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
import type { Database } from "./database.js";

/** The {@link ScheduleStore} in picklebot's SQLite database (migration 015). */
export class SqliteScheduleStore implements ScheduleStore {
  readonly #db: Database;
  readonly #sql;

  constructor({ db }: { db: Database }) {
    this.#db = db;
    this.#sql = {
      countActive: db.prepare<[string, string], { n: number }>(SCHEDULE_SQL.countActive),
      insert: db.prepare(SCHEDULE_SQL.insert),
      get: db.prepare<[string], ScheduleRow>(SCHEDULE_SQL.get),
      cancel: db.prepare<[number, string], ScheduleRow>(SCHEDULE_SQL.cancel),
      cancelInChat: db.prepare<[number, string, string, string], ScheduleRow>(
        SCHEDULE_SQL.cancelInChat,
      ),
      recordFired: db.prepare(SCHEDULE_SQL.recordFired),
    };
  }

  async create(schedule: NewSchedule, maxActivePerChat: number): Promise<Schedule | null> {
    // IMMEDIATE: the count and the insert see no other writer in between.
    return this.#db
      .transaction(() => {
        const { kind, chatId } = schedule.chat;
        const active = this.#sql.countActive.get(kind, chatId)?.n ?? 0;
        if (active >= maxActivePerChat) return null;
        this.#sql.insert.run(insertParams(schedule));
        return this.#getSync(schedule.id);
      })
      .immediate();
  }

  async get(id: string): Promise<Schedule | null> {
    return this.#getSync(id);
  }

  async list(filter: ScheduleFilter = {}): Promise<Schedule[]> {
    const { text, params } = listQuery(filter);
    return toSchedules(this.#db.prepare<unknown[], ScheduleRow>(text).all(...params));
  }

  async cancel(id: string, now: number, chat?: ChatReplyTarget): Promise<Schedule | null> {
    const row =
      chat === undefined
        ? this.#sql.cancel.get(now, id)
        : this.#sql.cancelInChat.get(now, id, chat.kind, chat.chatId);
    return row === undefined ? null : toSchedule(row);
  }

  async recordFired(
    id: string,
    occurrenceMs: number,
    options: { done: boolean },
  ): Promise<boolean> {
    const params = recordFiredParams(id, occurrenceMs, options.done);
    return this.#sql.recordFired.run(...params).changes === 1;
  }

  #getSync(id: string): Schedule | null {
    const row = this.#sql.get.get(id);
    return row === undefined ? null : toSchedule(row);
  }
}
