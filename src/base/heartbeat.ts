/**
 * Heartbeats of a chat (docs/guides/reminders.md, "Heartbeats"): the words every layer
 * shares. How often one runs (`/heartbeat every 30m …`, `heartbeats.chats` in
 * picklebot.yaml) is read here, into the cron expression it fires on; the reply that says
 * "nothing worth saying" is named here, so the prompt that asks for it and the reply that
 * swallows it agree.
 *
 * Not to be confused with the cluster's Heartbeat (src/server/cluster), which tells the
 * other processes this one is alive.
 */

/**
 * The whole reply of a heartbeat turn that found nothing worth saying: nothing is sent to
 * the chat (the turn stays in its transcript and the usage ledger).
 */
export const NOTHING_TO_REPORT = "NOTHING_TO_REPORT";

/** True when a heartbeat's reply is {@link NOTHING_TO_REPORT} (spaces, quotes or a final dot around it allowed). */
export function isNothingToReport(reply: string): boolean {
  return reply.trim().replace(/^[`"'*]+|[`"'*.]+$/g, "") === NOTHING_TO_REPORT;
}

/** How often a heartbeat runs, read from `every 30m` or `30m`. */
export interface HeartbeatEvery {
  /** Minutes between two ticks. */
  minutes: number;
  /** The 5-field cron expression of those ticks (on the clock of the workspace's zone). */
  cron: string;
}

/** Minutes an interval may have: whole divisors of an hour, then of a day. */
const MINUTE_STEPS = [5, 10, 15, 20, 30, 60] as const;
const HOUR_STEPS = [1, 2, 3, 4, 6, 8, 12, 24] as const;

const UNIT_MINUTES: Record<string, number> = { s: 1 / 60, m: 1, h: 60 };

/** What an interval is written like, for every refusal. */
export const HEARTBEAT_EVERY_FORMS =
  "write it like 30m or 2h: 5, 10, 15, 20 or 30 minutes, or 1, 2, 3, 4, 6, 8, 12 or 24 hours";

/** Minutes of an interval (`30m`, `every 2h`, `45 minutes`), or null when it is none. */
function minutesOf(text: string): number | null {
  const match =
    /^(?:every\s+)?(\d+)\s*(s|sec|secs|seconds?|m|min|mins|minutes?|h|hr|hrs|hours?)$/i.exec(
      text.trim(),
    );
  if (!match) return null;
  const unit = (match[2] as string).toLowerCase().charAt(0);
  return Number(match[1]) * (UNIT_MINUTES[unit] as number);
}

/** The cron expression of a tick every `minutes`, or null when no cron runs that evenly. */
function cronOfMinutes(minutes: number): string | null {
  if ((MINUTE_STEPS as readonly number[]).includes(minutes)) {
    return minutes === 60 ? "0 * * * *" : `*/${minutes} * * * *`;
  }
  const hours = minutes / 60;
  if (!(HOUR_STEPS as readonly number[]).includes(hours)) return null;
  return hours === 24 ? "0 0 * * *" : `0 */${hours} * * *`;
}

/** True when `text` reads as an interval at all (`30m`, `every 2h`), whatever its length. */
export function isHeartbeatInterval(text: string): boolean {
  return minutesOf(text) !== null;
}

/**
 * Reads an interval (`30m`, `every 2h`, `45 minutes`) and checks it: at least
 * `minMinutes`, and one a cron runs evenly. Returns the interval, or the sentence that
 * says what is wrong and how to fix it.
 */
export function parseHeartbeatEvery(text: string, minMinutes: number): HeartbeatEvery | string {
  const minutes = minutesOf(text);
  if (minutes === null) return `"${text}" is not an interval; ${HEARTBEAT_EVERY_FORMS}`;
  if (minutes < minMinutes) {
    return `"${text}" is shorter than the shortest heartbeat interval, ${minutesAsWords(minMinutes)} (heartbeats.min_interval_m); choose a longer one`;
  }
  const cron = cronOfMinutes(minutes);
  if (cron === null) {
    return `"${text}" does not divide an hour or a day evenly; ${HEARTBEAT_EVERY_FORMS}`;
  }
  return { minutes, cron };
}

/** Minutes as people say them: "90 minutes", "2 hours". */
export function minutesAsWords(minutes: number): string {
  if (minutes % 60 !== 0) return minutes === 1 ? "1 minute" : `${minutes} minutes`;
  return minutes === 60 ? "1 hour" : `${minutes / 60} hours`;
}
