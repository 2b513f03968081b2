/**
 * The ScheduleWorker: fires the schedules agents set up in chats (the `schedule` tool),
 * by the rules of the CronWorker (docs/decisions/cron-firing.md). Only the leader runs it.
 *
 *   run(signal) ──► fire every due schedule ──► sleep until the next occurrence, at most
 *                      ▲                         `pollMs` (another process may add one) ──┐
 *                      └──────────────────────────────────────────────────────────────────┘
 *                   signal aborted ──► finish the fire in flight, resolve
 *
 * **Exactly once.** An occurrence is sent first, under its own key (`schedule:<id>:…`: an
 * outbox entry for a message, a queue job for a task, each stored once per key), and only
 * then recorded by the store's compare-and-set. A crash between the two sends it again at
 * the next start, which stores nothing new, then records it; two leaders for a moment meet
 * at the same key and the same compare-and-set.
 *
 * **Missed occurrences.** A schedule catches up like a `catch_up: true` cron: after
 * downtime the latest missed occurrence fires once (a one-shot reminder arrives late rather
 * than never); older missed ones of a recurring schedule are skipped, never replayed.
 *
 * **What fires.** A schedule of kind `heartbeat` is left to the ChatHeartbeatWorker. A `message` goes verbatim into the outbox for the chat (no model call);
 * a `task` is a job in a fresh session (`schedule:<id>:<occurrence ISO>`), its reply going
 * to the chat: docs/decisions/scheduled-tasks.md. When each is due: schedule-times.ts.
 */

import type { Logger } from "../base/log.js";
import { checkNumberOptions } from "../base/options.js";
import { formatOutboxKey } from "../base/outbox-key.js";
import { scheduleOccurrenceKey } from "../base/session-key.js";
import { formatTime } from "../base/time-zone.js";
import type {
  Clock,
  JobQueue,
  OutboxStore,
  Schedule,
  ScheduleStore,
  Worker,
} from "../ports/index.js";
import { dueOccurrence, nextScheduleOccurrence } from "./schedule-times.js";
import { fireUntilAborted, type Timers } from "./worker.js";

/** Options of {@link ScheduleWorker}. */
export interface ScheduleWorkerOptions {
  store: ScheduleStore;
  queue: JobQueue;
  outbox: OutboxStore;
  clock: Clock;
  logger: Logger;
  /** `workers.max_attempts`, given to every task's job. */
  maxAttempts: number;
  /** Timers of the sleeps. (Default: the global setTimeout/clearTimeout) */
  timers?: Timers;
  /** Longest sleep: a schedule another process added is seen within it. (Default: 10 000 ms) */
  pollMs?: number;
}

/** Fires the schedules of the store on time; see the file header for the rules. */
export class ScheduleWorker implements Worker {
  readonly name = "schedules";
  readonly #options: ScheduleWorkerOptions;
  readonly #pollMs: number;

  constructor(options: ScheduleWorkerOptions) {
    checkNumberOptions("ScheduleWorker", options, { pollMs: "positive" });
    this.#options = options;
    this.#pollMs = options.pollMs ?? 10_000;
  }

  /** Runs until `signal` aborts; rejects (a crash) when the store or the queue fails. */
  async run(signal: AbortSignal): Promise<void> {
    const { clock, timers } = this.#options;
    await fireUntilAborted(() => this.fireDue(), signal, { clock, pollMs: this.#pollMs, timers });
  }

  /** Fires every due schedule once; returns when the next one is due (or a poll away). */
  async fireDue(): Promise<number> {
    const now = this.#options.clock.now();
    let nextAt = now + this.#pollMs;
    for (const schedule of await this.#options.store.list({ states: ["active"] })) {
      // A heartbeat is the ChatHeartbeatWorker's (heartbeat-worker.ts).
      if (schedule.kind === "heartbeat") continue;
      const due = dueOccurrence(schedule, now);
      if (due !== null) await this.#fire(schedule, due);
      const finished = due !== null && schedule.cron === null;
      const next = finished ? null : nextScheduleOccurrence(schedule, now);
      if (next !== null) nextAt = Math.min(nextAt, next);
    }
    return nextAt;
  }

  /** Send first, record second: see "Exactly once" in the file header. */
  async #fire(schedule: Schedule, occurrence: number): Promise<void> {
    const { store, logger, clock } = this.#options;
    // Read again just before sending: a cancel since the listing wins.
    const current = await store.get(schedule.id);
    if (current?.state !== "active") return;
    const sent = await this.#send(schedule, occurrence);
    const recorded = await store.recordFired(schedule.id, occurrence, {
      done: schedule.cron === null,
    });
    const late = clock.now() - occurrence;
    logger.info(
      {
        schedule: schedule.id,
        chat: `${schedule.chat.kind}:${schedule.chat.chatId}`,
        occurrence: new Date(occurrence).toISOString(),
        sent,
        lateMs: late,
      },
      recorded ? "schedule fired" : "schedule occurrence was already recorded by another process",
    );
  }

  /** Puts the occurrence in the outbox (a message) or the queue (a task); returns its key. */
  async #send(schedule: Schedule, occurrence: number): Promise<string> {
    const { outbox, queue, clock, maxAttempts } = this.#options;
    if (schedule.kind === "message") {
      const dedupeKey = formatOutboxKey({
        kind: "schedule",
        scheduleId: schedule.id,
        occurrenceMs: occurrence,
      });
      const { kind: platform, chatId } = schedule.chat;
      await outbox.submit({ dedupeKey, platform, chatId }, schedule.text, clock.now());
      return dedupeKey;
    }
    const key = scheduleOccurrenceKey(schedule.id, occurrence);
    const job = await queue.enqueue({
      agentId: schedule.agentId,
      sessionKey: key,
      sessionId: null,
      message: taskPrompt(schedule, occurrence),
      mode: "job",
      replyTo: schedule.chat,
      dedupeKey: key,
      maxAttempts,
    });
    return job.id;
  }
}

/** The user message of a task's run: what it is, then the person's task. */
function taskPrompt(schedule: Schedule, occurrence: number): string {
  const due = formatTime(occurrence, schedule.timezone);
  return `[Scheduled task ${schedule.id}, due ${due}, set up in this chat. Your answer is sent to the chat.]\n\n${schedule.text}`;
}
