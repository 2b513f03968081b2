/**
 * The ChatHeartbeatWorker: runs each chat's heartbeat (docs/guides/reminders.md,
 * "Heartbeats"; docs/decisions/heartbeats.md). Only the leader runs it. Not the cluster's
 * Heartbeat (src/server/cluster), which says a process is alive.
 *
 *   fireDue ─► each heartbeat's latest tick not yet fired (missed ones coalesce into it)
 *               │
 *               ├─ the chat was not idle since the tick before ─────────┐
 *               ├─ a budget of its turns is reached ─► tell the chat once per period
 *               ├─ a budget applies and its model has no price ─► tell the chat once
 *               └─ otherwise: a job `heartbeat:<id>:<tick ISO>` ─────────┤
 *                                                                        ▼
 *                                          record the tick as fired (compare-and-set)
 *
 * **Idle.** A chat is idle at a tick when its own conversation (session key
 * `telegram:<id>`…) has no job queued, running or waiting, and none created or finished
 * within one interval before the tick: the person has not written and the agent has not
 * answered. The heartbeat's own runs are in their own sessions and do not count.
 *
 * **Exactly once.** As the ScheduleWorker's: the job is stored under its tick's key (a
 * second enqueue stores nothing) and only then the tick is recorded, by the schedules
 * store (set with /heartbeat) or the cron state store (`heartbeat:<id>`, set in
 * picklebot.yaml); a skipped tick is recorded as well, so it is not tried again.
 *
 * **Silence.** The job's reply, when it is NOTHING_TO_REPORT, is kept in its transcript
 * and sent nowhere (src/frontends/heartbeat-reply.ts).
 */

import { createHash } from "node:crypto";
import { formatChatAddress } from "../base/chat-address.js";
import type { Logger } from "../base/log.js";
import { checkNumberOptions } from "../base/options.js";
import { formatOutboxKey } from "../base/outbox-key.js";
import { chatSessionKey, heartbeatTickKey } from "../base/session-key.js";
import { formatTime } from "../base/time-zone.js";
import type {
  ChatReplyTarget,
  Clock,
  CronStateStore,
  JobAdmin,
  JobQueue,
  OutboxStore,
  ReachedBudget,
  ScheduleStore,
  Worker,
} from "../ports/index.js";
import {
  type Heartbeat,
  heartbeatIntervalMs,
  heartbeatPrompt,
  storedHeartbeat,
  timingOf,
} from "./chat-heartbeats.js";
import { latestOccurrenceBetween, nextOccurrence } from "./schedule.js";
import { fireUntilAborted, type Timers } from "./worker.js";

/** Options of {@link ChatHeartbeatWorker}. */
export interface ChatHeartbeatWorkerOptions {
  /** Heartbeats set with /heartbeat, and the ticks they fired. */
  store: ScheduleStore;
  /** Ticks fired by the heartbeats of picklebot.yaml. */
  cronState: CronStateStore;
  /** The heartbeats of picklebot.yaml (`heartbeats.chats`); they win over a chat's own. */
  configured: readonly Heartbeat[];
  queue: JobQueue & Pick<JobAdmin, "list">;
  outbox: OutboxStore;
  /** The first reached budget of a turn of this agent, or null. */
  reachedBudget: (agentId: string) => Promise<ReachedBudget | null>;
  /**
   * The model of this agent's turns when a budget applies and it has no price (every call
   * of the tick would be refused), or null.
   */
  unpricedModel: (agentId: string) => string | null;
  clock: Clock;
  logger: Logger;
  /** `workers.max_attempts`, given to every tick's job. */
  maxAttempts: number;
  /** Timers of the sleeps. (Default: the global setTimeout/clearTimeout) */
  timers?: Timers;
  /** Longest sleep: a heartbeat another process set is seen within it. (Default: 10 000 ms) */
  pollMs?: number;
}

/** A heartbeat, where its ticks are recorded, and the last one recorded. */
interface Tracked extends Heartbeat {
  source: "chat" | "config";
  /** Ticks after this are due: the last fired, or when it was set. */
  since: number;
}

/** What a tick did. */
type TickOutcome = "ran" | "not idle" | "budget reached" | "model has no price";

/** Fires the heartbeats of chats; see the file header for the rules. */
export class ChatHeartbeatWorker implements Worker {
  readonly name = "chat-heartbeats";
  readonly #options: ChatHeartbeatWorkerOptions;
  readonly #pollMs: number;

  constructor(options: ChatHeartbeatWorkerOptions) {
    checkNumberOptions("ChatHeartbeatWorker", options, { pollMs: "positive" });
    this.#options = options;
    this.#pollMs = options.pollMs ?? 10_000;
  }

  /** Runs until `signal` aborts; rejects (a crash) when a store or the queue fails. */
  async run(signal: AbortSignal): Promise<void> {
    const { clock, timers } = this.#options;
    await fireUntilAborted(() => this.fireDue(), signal, { clock, pollMs: this.#pollMs, timers });
  }

  /** Fires every due tick once; returns when the next one is due (or a poll away). */
  async fireDue(): Promise<number> {
    const now = this.#options.clock.now();
    let nextAt = now + this.#pollMs;
    for (const heartbeat of await this.#heartbeats(now)) {
      const due = latestOccurrenceBetween(timingOf(heartbeat), heartbeat.since, now);
      if (due !== null) await this.#tick(heartbeat, due);
      nextAt = Math.min(nextAt, nextOccurrence(timingOf(heartbeat), now));
    }
    return nextAt;
  }

  /** Every heartbeat: picklebot.yaml's, then the chats' own for chats it leaves alone. */
  async #heartbeats(now: number): Promise<Tracked[]> {
    const { configured, cronState, store } = this.#options;
    const tracked: Tracked[] = [];
    for (const heartbeat of configured) {
      const key = stateKey(heartbeat);
      let state = await cronState.get(key);
      if (state === null) {
        // First seen now: no tick before it is due (a new entry does not fire at once).
        await cronState.markSeen(key, now);
        state = await cronState.get(key);
      }
      const since = state?.lastFiredAt ?? state?.firstSeenAt ?? now;
      tracked.push({ ...heartbeat, source: "config", since });
    }
    const taken = new Set(configured.map((heartbeat) => chatText(heartbeat.chat)));
    for (const schedule of await store.list({ states: ["active"] })) {
      if (schedule.kind !== "heartbeat" || schedule.cron === null) continue;
      if (taken.has(chatText(schedule.chat))) continue;
      const since = schedule.lastFiredAt ?? schedule.createdAt;
      tracked.push({
        ...storedHeartbeat({ ...schedule, cron: schedule.cron }),
        source: "chat",
        since,
      });
    }
    return tracked;
  }

  /** Runs or skips the tick, then records it. */
  async #tick(heartbeat: Tracked, tick: number): Promise<void> {
    const { store, logger, clock } = this.#options;
    // Read again just before running: /heartbeat off since the listing wins.
    if (heartbeat.source === "chat" && (await store.get(heartbeat.id))?.state !== "active") return;
    const outcome = await this.#run(heartbeat, tick);
    const recorded = await this.#record(heartbeat, tick);
    logger.info(
      {
        heartbeat: heartbeat.id,
        chat: chatText(heartbeat.chat),
        tick: new Date(tick).toISOString(),
        outcome,
        lateMs: clock.now() - tick,
      },
      recorded
        ? `heartbeat tick: ${outcome}`
        : "heartbeat tick was already recorded by another process",
    );
  }

  async #run(heartbeat: Tracked, tick: number): Promise<TickOutcome> {
    const { queue, maxAttempts } = this.#options;
    if (!(await this.#idle(heartbeat, tick))) return "not idle";
    const unpriced = this.#options.unpricedModel(heartbeat.agentId);
    if (unpriced !== null) {
      await this.#tellUnpriced(heartbeat, unpriced);
      return "model has no price";
    }
    const reached = await this.#options.reachedBudget(heartbeat.agentId);
    if (reached !== null) {
      await this.#tellPaused(heartbeat, reached);
      return "budget reached";
    }
    const key = heartbeatTickKey(heartbeat.id, tick);
    await queue.enqueue({
      agentId: heartbeat.agentId,
      sessionKey: key,
      sessionId: null,
      message: heartbeatPrompt(heartbeat, tick),
      mode: "job",
      replyTo: heartbeat.chat,
      dedupeKey: key,
      maxAttempts,
    });
    return "ran";
  }

  /** See "Idle" in the file header. */
  async #idle(heartbeat: Tracked, tick: number): Promise<boolean> {
    const quietSince = tick - heartbeatIntervalMs(heartbeat, tick);
    const { kind: platform, chatId } = heartbeat.chat;
    const [latest] = await this.#options.queue.list({
      sessionKey: chatSessionKey({ platform, chatId }),
      limit: 1,
    });
    if (latest === undefined) return true;
    const pending =
      latest.state === "queued" || latest.state === "running" || latest.state === "waiting";
    return !pending && Math.max(latest.createdAt, latest.updatedAt) <= quietSince;
  }

  /** Tells the chat the heartbeat stopped at a budget: once per heartbeat and period. */
  async #tellPaused(heartbeat: Tracked, reached: ReachedBudget): Promise<void> {
    const { outbox, clock } = this.#options;
    const dedupeKey = formatOutboxKey({
      kind: "heartbeat-paused",
      heartbeatId: heartbeat.id,
      periodStart: reached.periodStart,
    });
    const text =
      `Heartbeat paused: ${reached.summary}. No checks run until ${formatTime(reached.resetsAt, heartbeat.timezone)}; ` +
      "raise the budget in picklebot.yaml or the agent's AGENT.md, or send /heartbeat off.";
    const { kind: platform, chatId } = heartbeat.chat;
    await outbox.submit({ dedupeKey, platform, chatId }, text, clock.now());
  }

  /**
   * Tells the chat the heartbeat stopped because its agent's model has no price under a
   * budget: once per heartbeat and model (the tick's job would fail at each tick).
   */
  async #tellUnpriced(heartbeat: Tracked, model: string): Promise<void> {
    const { outbox, clock } = this.#options;
    const dedupeKey = formatOutboxKey({
      kind: "heartbeat-unpriced",
      heartbeatId: heartbeat.id,
      digest: createHash("sha256").update(model).digest("hex").slice(0, 16),
    });
    const text =
      `Heartbeat paused: agent "${heartbeat.agentId}" uses model "${model}", which has no price, ` +
      "so its budget cannot be kept. No checks run until it has one (the owner can see how " +
      "with `picklebot doctor`), or send /heartbeat off.";
    const { kind: platform, chatId } = heartbeat.chat;
    await outbox.submit({ dedupeKey, platform, chatId }, text, clock.now());
  }

  #record(heartbeat: Tracked, tick: number): Promise<boolean> {
    if (heartbeat.source === "chat") {
      return this.#options.store.recordFired(heartbeat.id, tick, { done: false });
    }
    return this.#options.cronState.recordFired(stateKey(heartbeat), tick, { disable: false });
  }
}

/** The key of a picklebot.yaml heartbeat in the cron state store. */
function stateKey(heartbeat: Heartbeat): string {
  return `heartbeat:${heartbeat.id}`;
}

function chatText(chat: ChatReplyTarget): string {
  return formatChatAddress({ platform: chat.kind, chatId: chat.chatId });
}
