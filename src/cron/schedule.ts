/**
 * When a cron is due, in its own time zone, with one fixed answer per occurrence.
 *
 * cron-parser evaluates the expression on the zone's wall clock ("08:00 in Berlin"); this
 * file maps those wall-clock times to instants. The mapping is a pure function of the
 * expression and the zone, so every process and every restart agrees on the same
 * occurrences, which is what lets the stored "last fired occurrence" prevent double fires.
 * (cron-parser's own `tz` stepping answers differently around DST changes depending on
 * where it starts, so it is not used for the zone.)
 *
 * Daylight-saving changes:
 * - **Spring forward** (a wall-clock time that does not exist, e.g. 02:30 in Berlin on the
 *   last Sunday of March): the occurrence fires once, at the first instant after the gap
 *   (03:00 local). Mapping every skipped time to that instant keeps occurrences in order.
 * - **Fall back** (a wall-clock time that happens twice, e.g. 01:30 in New York on the
 *   first Sunday of November): the occurrence fires once, at the first of the two instants.
 *   Only an expression whose hour field is `*` fires in both copies of the repeated hour,
 *   so "every 15 minutes" keeps its rhythm while "at 01:30" does not run twice.
 */

import { CronExpressionParser } from "cron-parser";
import { PicklebotError } from "../base/errors.js";
import { offsetAt, wallClockMs } from "../base/time-zone.js";

/** What the schedule of a cron depends on. */
export interface CronTiming {
  /** Seeds cron-parser's `H` (hash) fields, so they are stable per cron. */
  id: string;
  /** A 5-field cron expression, evaluated on the zone's wall clock. */
  schedule: string;
  /** IANA time zone name. */
  timezone: string;
}

const MINUTE_MS = 60_000;
const HOUR_MS = 60 * MINUTE_MS;
const DAY_MS = 24 * HOUR_MS;
/** Larger than any UTC offset change, so a window this wide sees both sides of one. */
const TRANSITION_MARGIN_MS = 3 * HOUR_MS;
/** Wall-clock steps examined per call before giving up (a cron never due). */
const MAX_STEPS = 100_000;

/** The first occurrence strictly after `afterMs` (epoch ms). */
export function nextOccurrence(cron: CronTiming, afterMs: number): number {
  const wallAfter = wallClockMs(afterMs, cron.timezone);
  // Near an offset change an earlier wall-clock time can map to a later instant (the second
  // copy of a repeated hour), so start a little earlier and keep the smallest instant.
  const startWall = nearTransition(afterMs, cron.timezone)
    ? wallAfter - TRANSITION_MARGIN_MS
    : wallAfter;
  const repeatsInBothCopies = hourFieldIsWildcard(cron.schedule);
  const expression = CronExpressionParser.parse(cron.schedule, {
    currentDate: new Date(startWall),
    tz: "UTC",
    hashSeed: cron.id,
  });
  let best = Number.POSITIVE_INFINITY;
  for (let step = 0; step < MAX_STEPS; step++) {
    const wall = expression.next().getTime();
    const instants = instantsOfWallTime(wall, cron.timezone, repeatsInBothCopies);
    for (const instant of instants) {
      if (instant > afterMs && instant < best) best = instant;
    }
    // First copies are in order: once one is past `afterMs`, nothing later can beat `best`.
    if ((instants[0] ?? Number.NEGATIVE_INFINITY) > afterMs) return best;
  }
  // A schedule that names no reachable date ("0 0 30 2 *") finds none on a retry either.
  throw new PicklebotError(`cron "${cron.id}": no occurrence of "${cron.schedule}" found`, {
    retryable: false,
    context: { cron: cron.id },
  });
}

/**
 * The latest occurrence in `(fromExclusiveMs, toInclusiveMs]`, or null when there is none
 * (what `catch_up` runs after downtime).
 */
export function latestOccurrenceBetween(
  cron: CronTiming,
  fromExclusiveMs: number,
  toInclusiveMs: number,
): number | null {
  if (toInclusiveMs <= fromExclusiveMs) return null;
  // Look back over a window that doubles until it holds an occurrence, then walk forward
  // inside it: cheap for "every minute" and for "once a year" alike.
  for (let span = MINUTE_MS; ; span *= 2) {
    const windowStart = Math.max(fromExclusiveMs, toInclusiveMs - span);
    let latest = nextOccurrence(cron, windowStart);
    if (latest <= toInclusiveMs) {
      let later = nextOccurrence(cron, latest);
      while (later <= toInclusiveMs) {
        latest = later;
        later = nextOccurrence(cron, latest);
      }
      return latest;
    }
    if (windowStart === fromExclusiveMs) return null;
  }
}

/**
 * The instant the zone's clock first shows `wall` (a wall-clock time written as if it were
 * UTC), by the same daylight-saving rules as an occurrence: inside a spring-forward gap,
 * the first instant after it; in a repeated hour, the first copy.
 */
export function instantOfWallTime(wall: number, timeZone: string): number {
  return instantsOfWallTime(wall, timeZone, false)[0] as number;
}

/**
 * The instants at which the zone's clock shows `wall` (a wall-clock time written as if it
 * were UTC): one normally, the transition instant inside a gap, the first of two in a
 * repeated hour (both when `bothCopies`).
 */
function instantsOfWallTime(wall: number, timeZone: string, bothCopies: boolean): number[] {
  const offsetBefore = offsetAt(wall - DAY_MS, timeZone);
  const offsetAfter = offsetAt(wall + DAY_MS, timeZone);
  const candidates = offsetBefore === offsetAfter ? [offsetBefore] : [offsetBefore, offsetAfter];
  const instants = candidates
    .map((offset) => wall - offset)
    .filter((instant) => wallClockMs(instant, timeZone) === wall)
    .sort((a, b) => a - b);
  if (instants.length === 0) return [transitionInstant(wall, timeZone, offsetBefore, offsetAfter)];
  return bothCopies ? instants : instants.slice(0, 1);
}

/** The first instant after a spring-forward gap that contains `wall`. */
function transitionInstant(
  wall: number,
  timeZone: string,
  offsetBefore: number,
  offsetAfter: number,
): number {
  // Inside the gap, `wall - offsetAfter` still uses the old offset and `wall - offsetBefore`
  // already uses the new one; the change happens in between.
  let low = Math.min(wall - offsetAfter, wall - offsetBefore);
  let high = Math.max(wall - offsetAfter, wall - offsetBefore);
  while (high - low > 1) {
    const middle = Math.floor((low + high) / 2);
    if (offsetAt(middle, timeZone) === offsetBefore) low = middle;
    else high = middle;
  }
  return high;
}

/** Whether the zone's UTC offset changes within a day of `instant`. */
function nearTransition(instant: number, timeZone: string): boolean {
  return offsetAt(instant - DAY_MS, timeZone) !== offsetAt(instant + DAY_MS, timeZone);
}

function hourFieldIsWildcard(schedule: string): boolean {
  return schedule.trim().split(/\s+/)[1] === "*";
}
