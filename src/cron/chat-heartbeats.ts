/**
 * A chat's heartbeat as its owner sets it (docs/guides/reminders.md, "Heartbeats"): with
 * `/heartbeat every 30m <what to check>` in the chat, kept as a schedule of kind
 * `heartbeat` (one per chat), or with `heartbeats.chats` in picklebot.yaml. The
 * ChatHeartbeatWorker (heartbeat-worker.ts) fires both.
 */
import { chatReplyTarget, formatChatAddress, parseChatAddress } from "../base/chat-address.js";
import { minutesAsWords, NOTHING_TO_REPORT, parseHeartbeatEvery } from "../base/heartbeat.js";
import { formatTime } from "../base/time-zone.js";
import type { Config } from "../config/index.js";
import type {
  ChatHeartbeats,
  ChatReplyTarget,
  Clock,
  HeartbeatSender,
  Schedule,
  ScheduleStore,
} from "../ports/index.js";
import { newScheduleId } from "./chat-schedules.js";
import { nextOccurrence } from "./schedule.js";

/** A heartbeat, wherever it was set. */
export interface Heartbeat {
  /** A schedule's id, or `config-<platform>-<chat id>` for one of picklebot.yaml. */
  id: string;
  agentId: string;
  chat: ChatReplyTarget;
  /** The cron expression of its ticks. */
  cron: string;
  /** What the agent checks at each tick. */
  check: string;
  /** The zone its ticks are read in (the workspace's). */
  timezone: string;
}

/** What `/heartbeat` says to a person who writes it wrong. */
const USAGE =
  "Write /heartbeat every 30m <what to check>, /heartbeat off, or /heartbeat alone to see it.";

/** The heartbeats `heartbeats.chats` of picklebot.yaml sets, each with its chat's agent. */
export function configuredHeartbeats(config: Config): Heartbeat[] {
  const { chats, min_interval_m: minimum } = config.heartbeats;
  return Object.entries(chats).flatMap(([address, { every, check }]) => {
    const chat = parseChatAddress(address);
    const read = parseHeartbeatEvery(every, minimum);
    // The config's schema refused both already; a test config may not have run it.
    if (chat === null || typeof read === "string") return [];
    const bound = config.bindings.find(
      (binding) => binding.chat.platform === chat.platform && binding.chat.chatId === chat.chatId,
    );
    return [
      {
        id: `config-${chat.platform}-${chat.chatId}`,
        agentId: bound?.agent ?? config.default_agent,
        chat: chatReplyTarget(chat),
        cron: read.cron,
        check,
        timezone: config.timezone,
      },
    ];
  });
}

/** The heartbeat a stored schedule of kind `heartbeat` is. */
export function storedHeartbeat(schedule: Schedule & { cron: string }): Heartbeat {
  const { id, agentId, chat, cron, text, timezone } = schedule;
  return { id, agentId, chat, cron, check: text, timezone };
}

/** Milliseconds between two ticks of `heartbeat` (the gap after `at`). */
export function heartbeatIntervalMs(heartbeat: Heartbeat, at: number): number {
  return nextOccurrence(timingOf(heartbeat), at) - at;
}

/** The timing {@link nextOccurrence} reads. */
export function timingOf(heartbeat: Heartbeat) {
  return { id: heartbeat.id, schedule: heartbeat.cron, timezone: heartbeat.timezone };
}

/** The user message of a heartbeat tick: the convention, then what to check. */
export function heartbeatPrompt(heartbeat: Heartbeat, tick: number): string {
  const every = minutesAsWords(Math.round(heartbeatIntervalMs(heartbeat, tick) / 60_000));
  return (
    `[Heartbeat ${heartbeat.id} of this chat, every ${every}, tick of ${formatTime(tick, heartbeat.timezone)}; ` +
    `the chat has been quiet for at least ${every}. Check what is asked below. If there is ` +
    `nothing worth telling the person now, reply with exactly ${NOTHING_TO_REPORT} and nothing ` +
    "else: that reply is not sent. Otherwise reply briefly with what they should know; it is " +
    "sent to the chat.]\n\n" +
    heartbeat.check
  );
}

/** `/heartbeat` on the schedules store; see {@link ChatHeartbeats}. */
export class ChatHeartbeatDesk implements ChatHeartbeats {
  readonly #options: { store: ScheduleStore; clock: Clock; config: Config };

  constructor(options: { store: ScheduleStore; clock: Clock; config: Config }) {
    this.#options = options;
  }

  async command(chat: ChatReplyTarget, argument: string, sender: HeartbeatSender): Promise<string> {
    const configured = this.#configured(chat);
    if (argument === "") return this.#show(chat, configured);
    if (configured !== undefined) {
      return `This chat's heartbeat is set in picklebot.yaml (heartbeats.chats."${formatChatAddress({ platform: chat.kind, chatId: chat.chatId })}"); change or remove it there.`;
    }
    if (argument.toLowerCase() === "off") return this.#off(chat);
    const match = /^every\s+(\S+)(?:\s+([\s\S]*))?$/i.exec(argument);
    if (!match) return `"${argument}" is not a heartbeat. ${USAGE}`;
    return this.#set(chat, match[1] as string, match[2]?.trim() ?? "", sender);
  }

  #configured(chat: ChatReplyTarget): Heartbeat | undefined {
    return configuredHeartbeats(this.#options.config).find(
      (heartbeat) => heartbeat.chat.kind === chat.kind && heartbeat.chat.chatId === chat.chatId,
    );
  }

  async #show(chat: ChatReplyTarget, configured: Heartbeat | undefined): Promise<string> {
    const heartbeat = configured ?? (await this.#stored(chat))[0];
    if (heartbeat === undefined) return `This chat has no heartbeat. ${USAGE}`;
    const where = configured ? " (set in picklebot.yaml)" : "";
    return `Heartbeat${where}: ${this.#describe(heartbeat)}`;
  }

  async #off(chat: ChatReplyTarget): Promise<string> {
    const stored = await this.#stored(chat);
    if (stored.length === 0) return "This chat has no heartbeat to turn off.";
    await this.#cancel(chat, stored);
    return "Heartbeat off: no more checks in this chat.";
  }

  async #set(
    chat: ChatReplyTarget,
    every: string,
    check: string,
    sender: HeartbeatSender,
  ): Promise<string> {
    const { store, clock, config } = this.#options;
    const read = parseHeartbeatEvery(every, config.heartbeats.min_interval_m);
    if (typeof read === "string") return `Heartbeat not set: ${read}.`;
    if (check === "") return `Heartbeat not set: say what to check. ${USAGE}`;
    await this.#cancel(chat, await this.#stored(chat));
    const now = clock.now();
    const stored = await store.create(
      {
        id: newScheduleId(),
        agentId: sender.agentId,
        chat,
        createdBy: sender.userId,
        kind: "heartbeat",
        text: check,
        at: null,
        cron: read.cron,
        timezone: config.timezone,
        createdAt: now,
      },
      // One heartbeat per chat (the one before was just cancelled); not a reminder's limit.
      Number.MAX_SAFE_INTEGER,
    );
    if (stored === null) return "Heartbeat not set: try again.";
    return `Heartbeat on: ${this.#describe(storedHeartbeat({ ...stored, cron: read.cron }))}. It says nothing when there is nothing to report; /heartbeat off stops it.`;
  }

  /** The chat's active heartbeats in the store (one, unless two owners raced). */
  async #stored(chat: ChatReplyTarget): Promise<Heartbeat[]> {
    const active = await this.#options.store.list({ chat, states: ["active"] });
    return active
      .filter((schedule) => schedule.kind === "heartbeat" && schedule.cron !== null)
      .map((schedule) => storedHeartbeat({ ...schedule, cron: schedule.cron as string }));
  }

  async #cancel(chat: ChatReplyTarget, heartbeats: Heartbeat[]): Promise<void> {
    const now = this.#options.clock.now();
    for (const heartbeat of heartbeats) await this.#options.store.cancel(heartbeat.id, now, chat);
  }

  #describe(heartbeat: Heartbeat): string {
    const now = this.#options.clock.now();
    const every = minutesAsWords(Math.round(heartbeatIntervalMs(heartbeat, now) / 60_000));
    const next = formatTime(nextOccurrence(timingOf(heartbeat), now), heartbeat.timezone);
    return `every ${every} when the chat has been quiet that long, ${heartbeat.agentId} checks "${heartbeat.check}"; next tick at ${next}`;
  }
}
