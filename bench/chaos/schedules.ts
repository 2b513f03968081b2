/**
 * Reminders in the chaos run: while the server is killed and restarted, a producer sets up
 * one-shot reminders (due a few seconds later, so many fall due while no server runs) and
 * one recurring every-minute reminder, straight into the workspace's `schedules` table as
 * the `schedule` tool would. At the end each due occurrence must have fired once: one
 * outbox entry under its key, the one-shot schedule done at its instant, the recurring
 * one's occurrences on distinct minutes, and each delivered to its Telegram chat.
 */
import { join } from "node:path";
import type { NewSchedule } from "../../src/ports/index.js";
import { openDatabase } from "../../src/storage/sqlite/database.js";
import { SqliteScheduleStore } from "../../src/storage/sqlite/schedules.js";
import type { FakeTelegram } from "../../test/fakes/telegram.js";
import type { Random } from "./random.js";

/** The Telegram chat the reminders go to (no job of the workload talks there). */
export const REMINDER_CHAT_ID = 9101;
/** The recurring schedule: every minute (the store takes it; the tool's limit is its own). */
const RECURRING_ID = "chaosevery";
/** Longest wait from making a one-shot reminder to its time. */
const MAX_LEAD_MS = 20_000;

interface OutboxRow {
  dedupe_key: string;
  state: string;
}

/** What {@link ScheduleProducer.verify} found. */
export interface ScheduleVerdict {
  /** One-shot reminders checked (every one made). */
  oneShots: number;
  /** Occurrences of the recurring one that fired. */
  recurring: number;
  /** Deliveries shown twice because a kill came between the send and its record. */
  resent: number;
  violations: string[];
}

/** Sets up reminders at a steady rate until stopped; checks them at the end. */
export class ScheduleProducer {
  readonly #db;
  readonly #store: SqliteScheduleStore;
  readonly #random: Random;
  readonly #made: NewSchedule[] = [];
  #timer: NodeJS.Timeout | null = null;
  #stoppedAt = 0;

  constructor(workspace: string, random: Random) {
    this.#db = openDatabase(join(workspace, "history", "picklebot.db"));
    this.#store = new SqliteScheduleStore({ db: this.#db });
    this.#random = random;
  }

  /** Makes the recurring reminder now, then a one-shot one every `everyMs`. */
  async start(everyMs: number): Promise<void> {
    await this.#make(RECURRING_ID, { at: null, cron: "* * * * *" });
    this.#timer = setInterval(() => {
      const id = `chaos${this.#made.length}`;
      const at = Date.now() + this.#random.between(0, MAX_LEAD_MS);
      void this.#make(id, { at: Math.round(at), cron: null });
    }, everyMs);
  }

  /** Stops making reminders; the recurring one is cancelled, so the end is fixed. */
  async stop(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    this.#stoppedAt = Date.now();
    await this.#store.cancel(RECURRING_ID, this.#stoppedAt);
  }

  /** One-shot reminders whose message is not delivered yet (due or not). */
  undelivered(): number {
    const due = this.#made.filter((made) => made.at !== null);
    const delivered = new Set(
      this.#outbox()
        .filter((row) => row.state === "delivered")
        .map((row) => row.dedupe_key),
    );
    return due.filter((made) => !delivered.has(`schedule:${made.id}:${made.at}`)).length;
  }

  /** Checks that each due occurrence fired once and reached the chat. */
  async verify(telegram: FakeTelegram): Promise<ScheduleVerdict> {
    const verdict: ScheduleVerdict = { oneShots: 0, recurring: 0, resent: 0, violations: [] };
    const entries = this.#outbox();
    const shown = telegram.messages(REMINDER_CHAT_ID);
    for (const made of this.#made) {
      const keys = entries.filter((row) => row.dedupe_key.startsWith(`schedule:${made.id}:`));
      const copies = shown.filter((text) => text === made.text).length;
      if (made.at === null) {
        this.#checkRecurring(made, keys, copies, verdict);
        continue;
      }
      const stored = await this.#store.get(made.id);
      verdict.oneShots += 1;
      if (stored?.state !== "done" || stored.lastFiredAt !== made.at) {
        verdict.violations.push(
          `reminder ${made.id} is ${stored?.state} (fired ${stored?.lastFiredAt}), not done at ${made.at}`,
        );
      }
      if (keys.length !== 1 || keys[0]?.dedupe_key !== `schedule:${made.id}:${made.at}`) {
        verdict.violations.push(
          `reminder ${made.id} has outbox entries ${JSON.stringify(keys)}, not one for ${made.at}`,
        );
      }
      if (copies === 0) verdict.violations.push(`reminder ${made.id} never reached its chat`);
      verdict.resent += Math.max(copies - 1, 0);
    }
    return verdict;
  }

  #checkRecurring(made: NewSchedule, keys: OutboxRow[], copies: number, verdict: ScheduleVerdict) {
    const minutes = keys.map((row) => Number(row.dedupe_key.split(":")[2]));
    verdict.recurring = minutes.length;
    if (new Set(minutes).size !== minutes.length || minutes.some((at) => at % 60_000 !== 0)) {
      verdict.violations.push(`the recurring reminder fired at ${JSON.stringify(minutes)}`);
    }
    if (minutes.some((at) => at <= made.createdAt || at > this.#stoppedAt)) {
      verdict.violations.push(
        `the recurring reminder fired outside its life: ${JSON.stringify(minutes)}`,
      );
    }
    if (copies < minutes.length) {
      verdict.violations.push(
        `the recurring reminder reached its chat ${copies} times for ${minutes.length} occurrences`,
      );
    }
    verdict.resent += Math.max(copies - minutes.length, 0);
  }

  async #make(id: string, timing: Pick<NewSchedule, "at" | "cron">): Promise<void> {
    const schedule: NewSchedule = {
      id,
      agentId: "pickle",
      chat: { kind: "telegram", chatId: String(REMINDER_CHAT_ID) },
      createdBy: "chaos",
      kind: "message",
      text: `chaos reminder ${id}`,
      ...timing,
      timezone: "UTC",
      createdAt: Date.now(),
    };
    if (await this.#store.create(schedule, Number.MAX_SAFE_INTEGER)) this.#made.push(schedule);
  }

  #outbox(): OutboxRow[] {
    return this.#db
      .prepare("SELECT dedupe_key, state FROM outbox WHERE dedupe_key LIKE 'schedule:%'")
      .all() as OutboxRow[];
  }

  close(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#db.close();
  }
}
