import { describe, expect, it } from "vitest";
import { checkZone, parseRepeat, parseWhen, shortestGapMs } from "../../src/cron/when.js";

/** Friday 2026-11-27 22:00 in Berlin. */
const NOW = Date.parse("2026-11-27T21:00:00Z");
const BERLIN = "Europe/Berlin";
const at = (when: string, zone = BERLIN) => new Date(parseWhen(when, NOW, zone)).toISOString();

describe("parseWhen: a time in words or ISO 8601, in the person's zone", () => {
  it("reads relative times from now", () => {
    expect(at("in 20 minutes")).toBe("2026-11-27T21:20:00.000Z");
    expect(at("in 1 minute")).toBe("2026-11-27T21:01:00.000Z");
  });

  it("reads a wall-clock time in the person's zone", () => {
    expect(at("next Tuesday at 9:00")).toBe("2026-12-01T08:00:00.000Z");
    expect(at("tomorrow at 8am")).toBe("2026-11-28T07:00:00.000Z");
    expect(at("tomorrow at 8am", "America/New_York")).toBe("2026-11-28T13:00:00.000Z");
    expect(at("2026-12-01T10:00")).toBe("2026-12-01T09:00:00.000Z");
  });

  it("takes an ISO time with an offset as the instant it names", () => {
    expect(at("2026-12-01T10:00:00Z")).toBe("2026-12-01T10:00:00.000Z");
    expect(at("2026-12-01T10:00+05:00")).toBe("2026-12-01T05:00:00.000Z");
  });

  it("reads a wall-clock time across a DST change with the zone's rules of that day", () => {
    // Berlin is UTC+2 in summer: 9:00 on 2027-06-01 is 07:00Z.
    expect(at("2027-06-01T09:00")).toBe("2027-06-01T07:00:00.000Z");
  });

  it("refuses text it cannot read whole, saying what it understood and what to write", () => {
    expect(() => parseWhen("banana", NOW, BERLIN)).toThrow(
      /could not read "banana" as a time \(understood nothing\); write it like "in 20 minutes"/,
    );
    expect(() => parseWhen("after the meeting at 9", NOW, BERLIN)).toThrow(
      /understood only "at 9"/,
    );
  });

  it("refuses a time in the past", () => {
    expect(() => parseWhen("2026-11-27T20:00:00Z", NOW, BERLIN)).toThrow(
      /is in the past .* give a time in the future/,
    );
    expect(() => parseWhen("yesterday at 9", NOW, BERLIN)).toThrow(/is in the past/);
  });

  it("refuses a zone that does not exist", () => {
    expect(() => checkZone("Mars/Olympus_Mons")).toThrow(
      /"Mars\/Olympus_Mons" is not a time zone; use an IANA name such as "Europe\/Berlin"/,
    );
    expect(checkZone("Asia/Tokyo")).toBe("Asia/Tokyo");
  });
});

describe("parseRepeat: a cron expression or words", () => {
  it.each([
    ["every weekday at 8", "0 8 * * 1-5"],
    ["every day at 7:30pm", "30 19 * * *"],
    ["Every Monday and Thursday at 18:00", "0 18 * * 1,4"],
    ["every mon, wed at 9", "0 9 * * 1,3"],
    ["every weekend at 10am", "0 10 * * 0,6"],
    ["every 2 hours", "0 */2 * * *"],
    ["every 30 minutes", "*/30 * * * *"],
    ["0 8 * * 1-5", "0 8 * * 1-5"],
  ])("%s ─► %s", (words, cron) => {
    expect(parseRepeat(words)).toBe(cron);
  });

  it("refuses words it cannot read, naming the forms it reads", () => {
    expect(() => parseRepeat("every blue moon")).toThrow(
      /could not read repeat "every blue moon"; use a cron expression \("0 8 \* \* 1-5"\) or words/,
    );
    expect(() => parseRepeat("every day at 25:00")).toThrow(/could not read repeat/);
    expect(() => parseRepeat("61 * * * *")).toThrow(/could not read repeat/);
  });

  it("finds the shortest gap between runs", () => {
    expect(shortestGapMs("*/30 * * * *", BERLIN, NOW)).toBe(30 * 60_000);
    expect(shortestGapMs("0 8 * * 1-5", BERLIN, NOW)).toBe(24 * 3600_000);
  });
});
