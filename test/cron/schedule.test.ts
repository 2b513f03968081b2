import { describe, expect, it } from "vitest";
import {
  type CronTiming,
  latestOccurrenceBetween,
  nextOccurrence,
} from "../../src/cron/schedule.js";

const at = (iso: string): number => Date.parse(iso);
const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

function cron(schedule: string, timezone: string): CronTiming {
  return { id: "test", schedule, timezone };
}

/** The next `count` occurrences after `fromIso`, as ISO strings. */
function upcoming(timing: CronTiming, fromIso: string, count: number): string[] {
  const result: string[] = [];
  let cursor = at(fromIso);
  for (let i = 0; i < count; i++) {
    cursor = nextOccurrence(timing, cursor);
    result.push(new Date(cursor).toISOString());
  }
  return result;
}

describe("nextOccurrence", () => {
  it("reads the schedule on the cron's own wall clock, in two time zones", () => {
    const berlin = cron("0 8 * * *", "Europe/Berlin");
    const newYork = cron("0 8 * * *", "America/New_York");
    // Winter: Berlin is UTC+1, New York UTC-5.
    expect(iso(nextOccurrence(berlin, at("2025-01-15T12:00:00Z")))).toBe(
      "2025-01-16T07:00:00.000Z",
    );
    expect(iso(nextOccurrence(newYork, at("2025-01-15T12:00:00Z")))).toBe(
      "2025-01-15T13:00:00.000Z",
    );
    // Summer: Berlin is UTC+2, New York UTC-4.
    expect(iso(nextOccurrence(berlin, at("2025-07-15T10:00:00Z")))).toBe(
      "2025-07-16T06:00:00.000Z",
    );
    expect(iso(nextOccurrence(newYork, at("2025-07-15T10:00:00Z")))).toBe(
      "2025-07-15T12:00:00.000Z",
    );
  });

  it("is strictly after the given instant", () => {
    const daily = cron("0 8 * * *", "UTC");
    expect(iso(nextOccurrence(daily, at("2025-01-15T08:00:00Z")))).toBe("2025-01-16T08:00:00.000Z");
    expect(iso(nextOccurrence(daily, at("2025-01-15T07:59:59.999Z")))).toBe(
      "2025-01-15T08:00:00.000Z",
    );
  });

  it("fires a 02:30 cron once on the Berlin spring-forward day, right after the gap", () => {
    // 2025-03-30: 02:00 CET jumps to 03:00 CEST; 02:30 does not exist that day.
    expect(upcoming(cron("30 2 * * *", "Europe/Berlin"), "2025-03-29T12:00:00Z", 3)).toEqual([
      "2025-03-30T01:00:00.000Z",
      "2025-03-31T00:30:00.000Z",
      "2025-04-01T00:30:00.000Z",
    ]);
  });

  it("fires a 02:30 cron once on the Berlin fall-back day, wherever it starts counting", () => {
    // 2025-10-26: 03:00 CEST falls back to 02:00 CET; 02:30 happens twice.
    const timing = cron("30 2 * * *", "Europe/Berlin");
    expect(upcoming(timing, "2025-10-25T12:00:00Z", 2)).toEqual([
      "2025-10-26T00:30:00.000Z",
      "2025-10-27T01:30:00.000Z",
    ]);
    // Between the two 02:30s, and just before the second one: the next is the day after.
    expect(iso(nextOccurrence(timing, at("2025-10-26T00:45:00Z")))).toBe(
      "2025-10-27T01:30:00.000Z",
    );
    expect(iso(nextOccurrence(timing, at("2025-10-26T01:29:59Z")))).toBe(
      "2025-10-27T01:30:00.000Z",
    );
  });

  it("fires a 01:30 cron once on the New York fall-back day", () => {
    // 2025-11-02: 02:00 EDT falls back to 01:00 EST; 01:30 happens twice.
    const timing = cron("30 1 * * *", "America/New_York");
    expect(upcoming(timing, "2025-11-01T12:00:00Z", 2)).toEqual([
      "2025-11-02T05:30:00.000Z",
      "2025-11-03T06:30:00.000Z",
    ]);
    expect(iso(nextOccurrence(timing, at("2025-11-02T06:29:59Z")))).toBe(
      "2025-11-03T06:30:00.000Z",
    );
  });

  it("fires a 02:30 cron once on the New York spring-forward day", () => {
    expect(upcoming(cron("30 2 * * *", "America/New_York"), "2025-03-08T12:00:00Z", 2)).toEqual([
      "2025-03-09T07:00:00.000Z",
      "2025-03-10T06:30:00.000Z",
    ]);
  });

  it("keeps an every-15-minutes cron running through both copies of the repeated hour", () => {
    const timing = cron("*/15 * * * *", "Europe/Berlin");
    expect(upcoming(timing, "2025-10-25T23:50:00Z", 10)).toEqual([
      "2025-10-26T00:00:00.000Z",
      "2025-10-26T00:15:00.000Z",
      "2025-10-26T00:30:00.000Z",
      "2025-10-26T00:45:00.000Z",
      "2025-10-26T01:00:00.000Z",
      "2025-10-26T01:15:00.000Z",
      "2025-10-26T01:30:00.000Z",
      "2025-10-26T01:45:00.000Z",
      "2025-10-26T02:00:00.000Z",
      "2025-10-26T02:15:00.000Z",
    ]);
  });

  it("does not burst through the skipped hour of spring forward", () => {
    const timing = cron("*/30 * * * *", "Europe/Berlin");
    expect(upcoming(timing, "2025-03-30T00:15:00Z", 3)).toEqual([
      "2025-03-30T00:30:00.000Z",
      "2025-03-30T01:00:00.000Z",
      "2025-03-30T01:30:00.000Z",
    ]);
  });
});

describe("latestOccurrenceBetween", () => {
  it("finds the latest occurrence in the window, or null", () => {
    const daily = cron("0 8 * * *", "Europe/Berlin");
    expect(
      iso(latestOccurrenceBetween(daily, at("2025-01-10T00:00:00Z"), at("2025-01-15T12:00:00Z"))),
    ).toBe("2025-01-15T07:00:00.000Z");
    expect(
      latestOccurrenceBetween(daily, at("2025-01-15T07:00:00Z"), at("2025-01-16T06:59:59Z")),
    ).toBe(null);
    // The end is inclusive, the start exclusive.
    expect(
      iso(latestOccurrenceBetween(daily, at("2025-01-14T07:00:00Z"), at("2025-01-15T07:00:00Z"))),
    ).toBe("2025-01-15T07:00:00.000Z");
  });

  it("agrees with nextOccurrence across DST changes", () => {
    const spring = cron("30 2 * * *", "Europe/Berlin");
    expect(
      iso(latestOccurrenceBetween(spring, at("2025-03-29T12:00:00Z"), at("2025-03-30T12:00:00Z"))),
    ).toBe("2025-03-30T01:00:00.000Z");
    const fall = cron("30 1 * * *", "America/New_York");
    expect(
      iso(latestOccurrenceBetween(fall, at("2025-11-01T12:00:00Z"), at("2025-11-02T12:00:00Z"))),
    ).toBe("2025-11-02T05:30:00.000Z");
  });

  it("handles long windows for frequent and rare schedules", () => {
    const everyMinute = cron("* * * * *", "UTC");
    expect(iso(latestOccurrenceBetween(everyMinute, 0, at("2025-06-01T10:15:30Z")))).toBe(
      "2025-06-01T10:15:00.000Z",
    );
    const yearly = cron("0 0 1 1 *", "Asia/Tokyo");
    expect(iso(latestOccurrenceBetween(yearly, 0, at("2025-06-01T00:00:00Z")))).toBe(
      "2024-12-31T15:00:00.000Z",
    );
  });
});
