/**
 * The times of the `schedule` tool, read in the person's zone: `when` (natural language by
 * chrono-node, or ISO 8601) and `repeat` (a cron expression, or words such as "every
 * weekday at 8"). Every failure is a {@link ToolError} that says what was not understood
 * and what to write instead, so the model can ask again or ask the person.
 */
import { createRequire } from "node:module";
import { CronExpressionParser } from "cron-parser";
import { ToolError } from "../base/errors.js";
import { minutesAsWords } from "../base/heartbeat.js";
import { wallClockMs } from "../base/time-zone.js";
import { isValidTimeZone } from "../config/index.js";
import { instantOfWallTime, nextOccurrence } from "./schedule.js";

/** chrono-node's English parser, loaded on the first time read in words (about 1 MiB). */
let chrono: typeof import("chrono-node/en") | undefined;
function englishParser(): typeof import("chrono-node/en") {
  chrono ??= createRequire(import.meta.url)("chrono-node/en") as typeof import("chrono-node/en");
  return chrono;
}

const MINUTE_MS = 60_000;
/** ISO 8601 with its own offset: an instant, whatever the person's zone. */
const ISO_WITH_OFFSET = /^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:?\d\d)$/i;

/** `zone`, checked: a ToolError when no such zone exists. */
export function checkZone(zone: string): string {
  if (isValidTimeZone(zone)) return zone;
  throw new ToolError(
    `schedule: "${zone}" is not a time zone; use an IANA name such as "Europe/Berlin", "America/New_York" or "UTC"`,
  );
}

/**
 * The instant `when` names, read at `now` in `zone`: "in 20 minutes", "next Tuesday at
 * 9:00", "tomorrow 8am", "2026-12-01 10:00" (wall clock in `zone`) or an ISO 8601 time with
 * an offset. Refuses text it cannot read whole, and a time not after `now`.
 */
export function parseWhen(when: string, now: number, zone: string): number {
  const text = when.trim();
  const instant = ISO_WITH_OFFSET.test(text) ? Date.parse(text) : readWords(text, now, zone);
  if (instant <= now) {
    throw new ToolError(
      `schedule: "${when}" is in the past (${new Date(instant).toISOString()}; it is now ${new Date(now).toISOString()}); give a time in the future`,
    );
  }
  return instant;
}

function readWords(text: string, now: number, zone: string): number {
  // chrono reads on a clock with no zone: hand it the person's wall clock as if it were
  // UTC, then map the wall-clock answer back to an instant with the zone's DST rules.
  const wallNow = wallClockMs(now, zone);
  const [result] = englishParser().parse(
    text,
    { instant: new Date(wallNow), timezone: 0 },
    {
      forwardDate: true,
    },
  );
  if (result === undefined || !coversWhole(result.text, text)) {
    const understood = result === undefined ? "nothing" : `only "${result.text}"`;
    throw new ToolError(
      `schedule: could not read "${text}" as a time (understood ${understood}); write it like "in 20 minutes", "tomorrow at 9:00", "next Tuesday at 18:30" or "2026-12-01T09:00"`,
    );
  }
  const wall = result.date().getTime();
  // "In 20 minutes" counts real minutes, even across a clock change; "now" is now (chrono
  // marks it as of the zone it was handed, which is not the person's).
  const tags = result.tags();
  if (tags.has("result/relativeDateAndTime") || tags.has("casualReference/now")) {
    return now + (wall - wallNow);
  }
  if (result.start.isCertain("timezoneOffset")) return wall;
  return instantOfWallTime(wall, zone);
}

/** True when chrono's match is the whole text, but for spacing, punctuation and "at"/"on". */
function coversWhole(matched: string, text: string): boolean {
  const squeeze = (value: string) =>
    value
      .toLowerCase()
      .replace(/^(at|on|in)\s+/, "")
      .replace(/[\s.,!]+/g, "");
  const rest = squeeze(text).replace(squeeze(matched), "");
  return rest === "" || rest === "at" || rest === "on";
}

const DAY_NUMBERS: Record<string, number> = {
  sunday: 0,
  monday: 1,
  tuesday: 2,
  wednesday: 3,
  thursday: 4,
  friday: 5,
  saturday: 6,
};
const DAY_SETS: Record<string, string> = { day: "*", weekday: "1-5", weekend: "0,6" };
const REPEAT_FORMS =
  'a cron expression ("0 8 * * 1-5") or words: "every day at 8:00", "every weekday at 7:30", "every monday and thursday at 18:00", "every weekend at 10am", "every 2 hours", "every 30 minutes"';

/**
 * The cron expression `repeat` names: itself when it is one, else the expression of its
 * words. A ToolError names the forms it reads.
 */
export function parseRepeat(repeat: string): string {
  const text = repeat.trim().toLowerCase().replace(/\s+/g, " ");
  const cron = text.startsWith("every ") ? repeatWords(text) : text;
  if (cron !== null && validCron(cron)) return cron;
  throw new ToolError(`schedule: could not read repeat "${repeat}"; use ${REPEAT_FORMS}`);
}

function validCron(expression: string): boolean {
  try {
    CronExpressionParser.parse(expression);
    return true;
  } catch {
    return false;
  }
}

/**
 * "every 15 minutes", "every hour", "every weekday at 8", "every mon and wed at 9:30";
 * "every 10 seconds" too (a cron with seconds), so that it is refused as too frequent
 * rather than as words it cannot read.
 */
function repeatWords(text: string): string | null {
  const step = /^every (?:(\d+) )?(second|minute|hour)s?$/.exec(text);
  if (step) {
    const n = Number(step[1] ?? 1);
    if (n < 1) return null;
    const every = n === 1 ? "*" : `*/${n}`;
    if (step[2] === "second") return `${every} * * * * *`;
    if (step[2] === "minute") return `${every} * * * *`;
    return n === 1 ? "0 * * * *" : `0 */${n} * * *`;
  }
  const days = /^every (.+?) at (.+)$/.exec(text);
  if (!days?.[1] || !days[2]) return null;
  const dayField = dayFieldOf(days[1]);
  const time = timeOfDay(days[2]);
  if (dayField === null || time === null) return null;
  return `${time.minute} ${time.hour} * * ${dayField}`;
}

function dayFieldOf(text: string): string | null {
  const set = DAY_SETS[text.replace(/s$/, "")];
  if (set !== undefined) return set;
  const numbers: number[] = [];
  for (const word of text.split(/,\s*|\s+and\s+|\s+/)) {
    if (word === "" || word === "and") continue;
    const day = Object.entries(DAY_NUMBERS).find(
      ([name]) => word.replace(/s$/, "") === name || (word.length >= 3 && name.startsWith(word)),
    );
    if (day === undefined) return null;
    numbers.push(day[1]);
  }
  return numbers.length === 0 ? null : [...new Set(numbers)].sort().join(",");
}

function timeOfDay(text: string): { hour: number; minute: number } | null {
  if (text === "noon") return { hour: 12, minute: 0 };
  if (text === "midnight") return { hour: 0, minute: 0 };
  const match = /^(\d{1,2})(?:[:.](\d\d))? ?(am|pm)?$/.exec(text);
  if (!match) return null;
  let hour = Number(match[1]);
  const minute = Number(match[2] ?? 0);
  if (match[3] !== undefined) {
    if (hour < 1 || hour > 12) return null;
    hour = (hour % 12) + (match[3] === "pm" ? 12 : 0);
  }
  return hour < 24 && minute < 60 ? { hour, minute } : null;
}

/** Gaps sampled to find a recurring schedule's shortest one. */
const SAMPLED_GAPS = 60;

/**
 * The shortest time between two runs of `cron` in `zone`, sampled over its next
 * {@link SAMPLED_GAPS} occurrences after `now` (enough for any minute or hour step).
 */
export function shortestGapMs(cron: string, zone: string, now: number): number {
  const timing = { id: "schedule", schedule: cron, timezone: zone };
  let previous = nextOccurrence(timing, now);
  let shortest = Number.POSITIVE_INFINITY;
  for (let i = 0; i < SAMPLED_GAPS; i++) {
    const next = nextOccurrence(timing, previous);
    shortest = Math.min(shortest, next - previous);
    previous = next;
  }
  return shortest;
}

/** Minutes as people say them: "90 minutes", "2 hours"; under a minute, "10 seconds". */
export function minutesInWords(ms: number): string {
  if (ms < MINUTE_MS) {
    const seconds = Math.max(1, Math.round(ms / 1000));
    return seconds === 1 ? "1 second" : `${seconds} seconds`;
  }
  return minutesAsWords(Math.round(ms / MINUTE_MS));
}
