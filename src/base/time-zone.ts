/** Wall-clock time in an IANA time zone, without a date library. */

import { existsSync, readlinkSync } from "node:fs";
import { join } from "node:path";
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

/** Where the host's tz database keeps one file per zone. */
const ZONEINFO = "/usr/share/zoneinfo";

/** The names by which hosts call UTC, which `Intl` calls "UTC". */
const UTC_NAMES = new Set(["UTC", "Etc/UTC", "Etc/Universal", "Universal", "Etc/Zulu", "Zulu"]);

/**
 * The host's IANA time zone, the default of `timezone`. Read as ICU reads it (`TZ`, else
 * the zone `/etc/localtime` links to) when that names a zone of the host's tz database, so
 * a server that formats no time never loads ICU's zone data (about 6 MiB of its idle
 * memory); else `Intl`'s answer, else UTC.
 */
export function hostTimeZone(): string {
  return (
    hostZoneName(process.env.TZ) ??
    hostZoneName(localtimeLink()) ??
    // Undefined when TZ names no zone ICU knows.
    (Intl.DateTimeFormat().resolvedOptions().timeZone as string | undefined) ??
    "UTC"
  );
}

/** `name` when it is a zone of the host's tz database ("UTC" for its aliases), else null. */
function hostZoneName(name: string | undefined): string | null {
  if (!name || !/^[A-Z][\w+-]*(\/[\w+-]+)*$/.test(name) || name === "Factory") return null;
  if (UTC_NAMES.has(name)) return "UTC";
  return existsSync(join(ZONEINFO, name)) ? name : null;
}

/** The zone `/etc/localtime` links to (`Europe/Berlin`), or undefined. */
function localtimeLink(): string | undefined {
  try {
    return readlinkSync("/etc/localtime").split("/zoneinfo/")[1];
  } catch {
    return undefined;
  }
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
