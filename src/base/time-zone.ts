/** Wall-clock time in an IANA time zone, without a date library. */

import { getOrMake } from "./get-or-make.js";

/** The zone's UTC offset at `instant`, in ms (positive east of Greenwich). */
export function offsetAt(instant: number, timeZone: string): number {
  return wallClockMs(instant, timeZone) - instant;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

/**
 * An `Intl.DateTimeFormat` for `timeZone`, built once per locale, zone and options:
 * building one costs far more than formatting with it (every model call's prompt, every
 * cell of a table). Pass `options` as a constant.
 */
export function zoneFormatter(
  locale: string,
  timeZone: string,
  options: Intl.DateTimeFormatOptions,
): Intl.DateTimeFormat {
  const key = `${locale} ${timeZone} ${JSON.stringify(options)}`;
  return getOrMake(
    formatters,
    key,
    () => new Intl.DateTimeFormat(locale, { ...options, timeZone }),
  );
}

const WALL_CLOCK_PARTS: Intl.DateTimeFormatOptions = {
  hourCycle: "h23",
  year: "numeric",
  month: "numeric",
  day: "numeric",
  hour: "numeric",
  minute: "numeric",
  second: "numeric",
};

/** What the zone's clock shows at `instant`, as epoch ms of that time read as UTC. */
export function wallClockMs(instant: number, timeZone: string): number {
  const formatter = zoneFormatter("en-US", timeZone, WALL_CLOCK_PARTS);
  const parts: Record<string, number> = {};
  for (const part of formatter.formatToParts(new Date(instant))) {
    if (part.type !== "literal") parts[part.type] = Number(part.value);
  }
  const wholeSeconds = Date.UTC(
    parts.year ?? 0,
    (parts.month ?? 1) - 1,
    parts.day ?? 1,
    parts.hour ?? 0,
    parts.minute ?? 0,
    parts.second ?? 0,
  );
  return wholeSeconds + (((instant % 1000) + 1000) % 1000);
}

/** The host's IANA time zone, the default of `timezone`. */
export function hostTimeZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone;
}

/**
 * An epoch-ms time as `YYYY-MM-DD HH:MM:SS <zone>` on the clock of `timeZone` (Default:
 * the host's zone), or "-". The zone is always shown: a cron's own zone and the host's
 * can differ, and a bare time would not say which one it is.
 */
export function formatTime(
  epochMs: number | null | undefined,
  timeZone: string = hostTimeZone(),
): string {
  if (epochMs === null || epochMs === undefined) return "-";
  const wallClock = new Date(wallClockMs(epochMs, timeZone)).toISOString();
  return `${wallClock.slice(0, 10)} ${wallClock.slice(11, 19)} ${timeZone}`;
}
