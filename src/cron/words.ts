/**
 * A cron schedule in words: "at 08:00 every day", "every 15 minutes", "at 09:00 on
 * Monday–Friday". It reads the fields as cron-parser expands them (names, ranges, steps,
 * `H` seeded by the cron id), so the words describe what actually fires; the times are wall
 * clock in the cron's zone, which the caller names next to them. A schedule the words
 * cannot say exactly (`L`, `W`, long irregular lists) gets null, and the caller shows the
 * expression alone rather than a wrong sentence.
 */
import { CronExpressionParser } from "cron-parser";
import type { CronTiming } from "./schedule.js";

const DAY_NAMES = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];
const MONTH_NAMES = [
  "January",
  "February",
  "March",
  "April",
  "May",
  "June",
  "July",
  "August",
  "September",
  "October",
  "November",
  "December",
];
const ORDINALS = ["", "first", "second", "third", "fourth", "fifth"];
/** More listed times than this read worse than the expression. */
const MAX_LISTED_TIMES = 6;

/** The schedule of `cron` in words, or null when words would not be exact. */
export function describeSchedule(cron: Pick<CronTiming, "id" | "schedule">): string | null {
  const fields = CronExpressionParser.parse(cron.schedule, { hashSeed: cron.id }).fields;
  const minutes = numbers(fields.minute.values);
  const hours = numbers(fields.hour.values);
  const daysOfMonth = numbers(fields.dayOfMonth.values);
  const daysOfWeek = numbers(fields.dayOfWeek.values);
  const months = numbers(fields.month.values);
  if (!minutes || !hours || !daysOfMonth || !daysOfWeek || !months) return null;
  const time = timeWords(minutes, hours);
  const days = dayWords(
    fields.dayOfMonth.isWildcard ? null : daysOfMonth,
    fields.dayOfWeek.isWildcard ? null : uniqueWeekdays(daysOfWeek),
    fields.dayOfWeek.nthDay,
  );
  if (time === null || days === null) return null;
  const everyDay = days === "every day";
  const repeating = /^every /.test(time);
  const dayPart = everyDay && repeating ? "" : ` ${days}`;
  return `${time}${dayPart}${monthWords(months)}`;
}

/** The values when every one is a number (cron-parser keeps `L` as text), else null. */
function numbers(values: readonly (number | string)[]): number[] | null {
  return values.every((value) => typeof value === "number") ? [...(values as number[])] : null;
}

function timeWords(minutes: number[], hours: number[]): string | null {
  const allHours = hours.length === 24;
  const minuteStep = stepOf(minutes, 60);
  if (allHours && minutes.length === 60) return "every minute";
  if (allHours && minuteStep !== null && minutes[0] === 0) return `every ${minuteStep} minutes`;
  if (allHours) return `every hour at ${minutes.map((m) => `:${pad(m)}`).join(", ")}`;
  const hourStep = stepOf(hours, 24);
  if (hourStep !== null && hours[0] === 0 && minutes.length === 1) {
    return `every ${hourStep} hours at :${pad(minutes[0] ?? 0)}`;
  }
  if (minutes.length * hours.length <= MAX_LISTED_TIMES) {
    const times = hours.flatMap((hour) => minutes.map((minute) => `${pad(hour)}:${pad(minute)}`));
    return `at ${joinWords(times)}`;
  }
  return hourRangeWords(minutes, hours, minuteStep);
}

/** Many times within one run of consecutive hours: "every 15 minutes from 09:00 to 17:45". */
function hourRangeWords(minutes: number[], hours: number[], minuteStep: number | null) {
  const first = hours[0] ?? 0;
  const last = hours[hours.length - 1] ?? 0;
  if (last - first !== hours.length - 1) return null;
  const from = (minute: number) => `from ${pad(first)}:${pad(minute)}`;
  const to = (minute: number) => `to ${pad(last)}:${pad(minute)}`;
  const lastMinute = minutes[minutes.length - 1] ?? 0;
  if (minutes.length === 1) return `every hour ${from(lastMinute)} ${to(lastMinute)}`;
  if (minutes.length === 60) return `every minute ${from(0)} ${to(59)}`;
  if (minuteStep !== null && minutes[0] === 0) {
    return `every ${minuteStep} minutes ${from(0)} ${to(lastMinute)}`;
  }
  return null;
}

/** `n` when `values` are 0..max spaced by n (n > 1) from their first value; else null. */
function stepOf(values: number[], size: number): number | null {
  if (values.length < 2) return null;
  const step = (values[1] ?? 0) - (values[0] ?? 0);
  if (step <= 1 || size % step !== 0 || values.length !== size / step) return null;
  return values.every((value, index) => value === (values[0] ?? 0) + index * step) ? step : null;
}

function dayWords(
  daysOfMonth: number[] | null,
  weekdays: number[] | null,
  nthDay: number,
): string | null {
  const monthPart = daysOfMonth && `on the ${joinWords(daysOfMonth.map(ordinalNumber))}`;
  let weekPart = weekdays && `on ${weekdayList(weekdays)}`;
  if (weekdays && nthDay > 0) {
    if (weekdays.length !== 1) return null;
    weekPart = `on the ${ORDINALS[nthDay]} ${DAY_NAMES[weekdays[0] ?? 0]} of the month`;
  }
  // Standard cron: with both fields set, a day matching either one fires.
  if (monthPart && weekPart) return `${monthPart} of the month or ${weekPart}`;
  if (monthPart) return `${monthPart} of the month`;
  return weekPart ?? "every day";
}

/** Weekdays Monday first (Sunday is 0 or 7 in cron), each once. */
function uniqueWeekdays(days: number[]): number[] {
  const mondayFirst = new Set(days.map((day) => (day === 0 ? 7 : day)));
  return [...mondayFirst].sort((a, b) => a - b).map((day) => day % 7);
}

/** `Monday–Friday`, `Monday, Wednesday and Friday`, `Saturday and Sunday`. */
function weekdayList(days: number[]): string {
  const runs: number[][] = [];
  for (const day of days) {
    const run = runs[runs.length - 1];
    const previous = run?.[run.length - 1];
    if (run && previous !== undefined && (previous % 7) + 1 === (day === 0 ? 7 : day)) {
      run.push(day);
    } else runs.push([day]);
  }
  const parts = runs.flatMap((run) =>
    run.length >= 3
      ? [`${DAY_NAMES[run[0] ?? 0]}–${DAY_NAMES[run[run.length - 1] ?? 0]}`]
      : run.map((day) => DAY_NAMES[day] ?? ""),
  );
  return joinWords(parts);
}

function monthWords(months: number[]): string {
  if (months.length === 12) return "";
  return ` in ${joinWords(months.map((month) => MONTH_NAMES[month - 1] ?? ""))}`;
}

function ordinalNumber(n: number): string {
  const tens = n % 100;
  if (tens >= 11 && tens <= 13) return `${n}th`;
  return `${n}${["th", "st", "nd", "rd"][n % 10] ?? "th"}`;
}

/** `a`, `a and b`, `a, b and c`. */
function joinWords(words: string[]): string {
  if (words.length <= 1) return words.join("");
  return `${words.slice(0, -1).join(", ")} and ${words[words.length - 1]}`;
}

function pad(n: number): string {
  return String(n).padStart(2, "0");
}
