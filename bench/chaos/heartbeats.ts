/**
 * A heartbeat in the chaos run: while the server is killed and restarted, one chat has a
 * heartbeat every minute (set straight in the `schedules` table, as /heartbeat would; the
 * store takes an interval under the configured minimum), in a chat nobody writes to, so
 * every tick finds it idle. The chaos model answers each tick NOTHING_TO_REPORT
 * ({@link isHeartbeatRequest}). At the end each tick must have run at most once (one job
 * per tick, on whole minutes within the heartbeat's life), each of those jobs finished,
 * and nothing may have reached the chat: a silent tick sends nothing, across kills too.
 */
import { join } from "node:path";
import { NOTHING_TO_REPORT } from "../../src/base/heartbeat.js";
import { openDatabase } from "../../src/storage/sqlite/database.js";
import { SqliteScheduleStore } from "../../src/storage/sqlite/schedules.js";
import { lastUserText, type RecordedRequest } from "../../test/fakes/anthropic.js";
import type { FakeTelegram } from "../../test/fakes/telegram.js";

/** The Telegram chat of the heartbeat (no job of the workload talks there). */
export const HEARTBEAT_CHAT_ID = 9102;
const HEARTBEAT_ID = "chaoshb";
/** What the heartbeat checks: the chaos model knows its ticks by it. */
const CHECK = "chaos heartbeat: anything new?";

interface TickRow {
  session_key: string;
  state: string;
}

/** What {@link HeartbeatProducer.verify} found. */
export interface HeartbeatVerdict {
  /** Ticks that ran (one job each). */
  ticks: number;
  violations: string[];
}

/** True when `request` is a heartbeat tick of the chaos run (answered NOTHING_TO_REPORT). */
export function isHeartbeatRequest(request: RecordedRequest): boolean {
  return request.body.messages.length > 0 && lastUserText(request).endsWith(CHECK);
}

/** The chaos model's answer to a heartbeat tick. */
export const HEARTBEAT_ANSWER = { text: NOTHING_TO_REPORT };

/** Sets the heartbeat at the start, turns it off at the end, and checks its ticks. */
export class HeartbeatProducer {
  readonly #db;
  readonly #store: SqliteScheduleStore;
  #startedAt = 0;
  #stoppedAt = 0;

  constructor(workspace: string) {
    this.#db = openDatabase(join(workspace, "history", "picklebot.db"));
    this.#store = new SqliteScheduleStore({ db: this.#db });
  }

  async start(): Promise<void> {
    this.#startedAt = Date.now();
    await this.#store.create(
      {
        id: HEARTBEAT_ID,
        agentId: "pickle",
        chat: { kind: "telegram", chatId: String(HEARTBEAT_CHAT_ID) },
        createdBy: "chaos",
        kind: "heartbeat",
        text: CHECK,
        at: null,
        cron: "* * * * *",
        timezone: "UTC",
        createdAt: this.#startedAt,
      },
      Number.MAX_SAFE_INTEGER,
    );
  }

  /** `/heartbeat off`: the end of its life is fixed. */
  async stop(): Promise<void> {
    this.#stoppedAt = Date.now();
    await this.#store.cancel(HEARTBEAT_ID, this.#stoppedAt);
  }

  /** Checks that each tick ran at most once, finished, and sent nothing. */
  verify(telegram: FakeTelegram): HeartbeatVerdict {
    const violations: string[] = [];
    const rows = this.#db
      .prepare("SELECT session_key, state FROM jobs WHERE session_key LIKE ?")
      .all(`heartbeat:${HEARTBEAT_ID}:%`) as TickRow[];
    const ticks = rows.map((row) =>
      Date.parse(row.session_key.slice(`heartbeat:${HEARTBEAT_ID}:`.length)),
    );
    if (new Set(ticks).size !== ticks.length) {
      violations.push(`a heartbeat tick ran twice: ${JSON.stringify(ticks)}`);
    }
    for (const tick of ticks) {
      if (tick % 60_000 !== 0 || tick <= this.#startedAt || tick > this.#stoppedAt) {
        violations.push(
          `the heartbeat ticked at ${new Date(tick).toISOString()}, outside its life or its minutes`,
        );
      }
    }
    for (const row of rows.filter((candidate) => candidate.state !== "done")) {
      violations.push(`heartbeat tick ${row.session_key} is ${row.state}, not done`);
    }
    const shown = telegram.messages(HEARTBEAT_CHAT_ID);
    if (shown.length > 0) {
      violations.push(
        `the silent heartbeat sent ${shown.length} messages: ${JSON.stringify(shown.slice(0, 3))}`,
      );
    }
    return { ticks: ticks.length, violations };
  }

  close(): void {
    this.#db.close();
  }
}
