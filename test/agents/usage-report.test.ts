import { describe, expect, it } from "vitest";
import { costOf, priceOf } from "../../src/agents/prices.js";
import { parseSince, periodStart, summarizeUsage } from "../../src/agents/usage-report.js";
import { cronIdOfKey as cronIdOf } from "../../src/base/session-key.js";
import type { UsageRecord } from "../../src/ports/index.js";

function call(at: string, overrides: Partial<UsageRecord> = {}): UsageRecord {
  return {
    at: Date.parse(at),
    agentId: "pickle",
    sessionId: "s_1",
    sessionKey: "telegram:1",
    jobId: null,
    model: "claude-sonnet-4-5",
    batch: false,
    input: 1_000_000,
    output: 0,
    cacheRead: 0,
    cacheWrite: 0,
    ...overrides,
  };
}

describe("prices", () => {
  it("prices a dated model id by its longest known prefix", () => {
    expect(priceOf("claude-opus-4-20250514")?.input).toBe(15);
    expect(priceOf("claude-opus-4-1-20250805")?.input).toBe(15);
    expect(priceOf("claude-opus-4-5-20251101")).toEqual({
      input: 5,
      output: 25,
      cache_read: 0.5,
      cache_write: 6.25,
    });
    expect(priceOf("claude-sonnet-4-6")?.output).toBe(15);
    expect(priceOf("claude-haiku-4-5-20251001")?.input).toBe(1);
    expect(priceOf("claude-sonnetish")).toBeUndefined();
    expect(priceOf("gpt-9")).toBeUndefined();
  });

  it("prices OpenAI's well-known models, dated ones by their prefix, cached input at its rate", () => {
    expect(priceOf("gpt-4o-2024-08-06")).toEqual({
      input: 2.5,
      output: 10,
      cache_read: 1.25,
      cache_write: 2.5,
    });
    expect(priceOf("gpt-4o-mini")?.input).toBe(0.15);
    expect(priceOf("gpt-4.1-mini-2025-04-14")?.output).toBe(1.6);
    expect(priceOf("gpt-5-nano")?.cache_read).toBe(0.005);
    expect(priceOf("o3-mini")?.input).toBe(1.1);
    expect(priceOf("qwen2.5:7b")).toBeUndefined();
  });

  it("takes llm.prices over the table, for a prefix too", () => {
    const cheap = { input: 0.5, output: 1, cache_read: 0, cache_write: 0 };
    expect(priceOf("claude-sonnet-4-5-20250929", { "claude-sonnet-4-5": cheap })).toBe(cheap);
    expect(priceOf("local-llama", { "local-llama": cheap })).toBe(cheap);
  });
});

describe("summarizeUsage", () => {
  it("groups by the calendar day of the workspace's zone", () => {
    const calls = [call("2026-03-01T23:30:00Z"), call("2026-03-02T08:00:00Z")];
    const berlin = summarizeUsage(calls, { by: "day", timezone: "Europe/Berlin" });
    expect(berlin.lines.map((line) => [line.key, line.calls])).toEqual([["2026-03-02", 2]]);
    const utc = summarizeUsage(calls, { by: "day", timezone: "UTC" });
    expect(utc.lines.map((line) => line.key)).toEqual(["2026-03-01", "2026-03-02"]);
    expect(utc.total).toMatchObject({ calls: 2, input: 2_000_000, costUsd: 6 });
  });

  it("by heartbeat, sums each heartbeat's tick calls per day and leaves every other call out", () => {
    const tick = (at: string, id: string) =>
      call(at, { sessionKey: `heartbeat:${id}:${at}`, input: 1000, output: 100 });
    const calls = [
      tick("2026-03-01T10:00:00Z", "k7m2qx"),
      tick("2026-03-01T10:30:00Z", "k7m2qx"),
      tick("2026-03-02T10:00:00Z", "k7m2qx"),
      tick("2026-03-01T11:00:00Z", "config-telegram-42"),
      call("2026-03-01T12:00:00Z"),
    ];
    const report = summarizeUsage(calls, { by: "heartbeat", timezone: "UTC" });
    // 1,000 tokens in at $3/M and 100 out at $15/M: $0.0045 a tick.
    expect(report.lines.map((line) => [line.key, line.calls, line.costUsd])).toEqual([
      ["2026-03-01 config-telegram-42", 1, 0.0045],
      ["2026-03-01 k7m2qx", 2, 0.009],
      ["2026-03-02 k7m2qx", 1, 0.0045],
    ]);
    expect(report.total.calls).toBe(4);
  });

  it("names models it cannot price, at $0", () => {
    const report = summarizeUsage([call("2026-03-01T00:00:00Z", { model: "unknown" })], {
      by: "agent",
      timezone: "UTC",
    });
    expect(report.unpriced).toEqual(["unknown"]);
    expect(report.total.costUsd).toBe(0);
  });

  it("reads the cron id from the session key", () => {
    expect(cronIdOf("cron:news:2026-03-01T08:00")).toBe("news");
    expect(cronIdOf("cron:news")).toBe("news");
    expect(cronIdOf("telegram:42")).toBeUndefined();
  });
});

describe("periods and durations", () => {
  it("starts today and this month at midnight in the zone", () => {
    const now = Date.parse("2026-03-15T23:30:00Z"); // 2026-03-16 00:30 in Berlin
    expect(new Date(periodStart(now, "day", "Europe/Berlin")).toISOString()).toBe(
      "2026-03-15T23:00:00.000Z",
    );
    expect(new Date(periodStart(now, "month", "UTC")).toISOString()).toBe(
      "2026-03-01T00:00:00.000Z",
    );
  });

  it("parses --since, and refuses what it cannot read", () => {
    expect(parseSince("7d", 1_000_000_000)).toBe(1_000_000_000 - 7 * 86_400_000);
    expect(parseSince("30m", 10_000_000)).toBe(10_000_000 - 1_800_000);
    expect(() => parseSince("7x", 0)).toThrow(/--since "7x" is not a duration/);
    expect(() => parseSince("", 0)).toThrow(/not a duration/);
  });
});

describe("cache writes with the 1-hour lifetime", () => {
  it("cost twice the input price, the 5-minute ones the cache_write rate", () => {
    const price = { input: 3, output: 15, cache_read: 0.3, cache_write: 3.75 };
    const usage = {
      input: 0,
      output: 0,
      cacheRead: 0,
      cacheWrite: 3_000_000,
      cacheWrite1h: 1_000_000,
    };
    // 2 M at $3.75 and 1 M at $6.
    expect(costOf(usage, price)).toBeCloseTo(13.5, 10);
    expect(costOf(usage, price, true)).toBeCloseTo(6.75, 10);
  });
});

describe("web searches the model API ran", () => {
  it("cost $10 per 1,000, on top of the tokens, without the batch discount", () => {
    const price = { input: 3, output: 15, cache_read: 0.3, cache_write: 3.75 };
    const usage = { input: 1_000_000, output: 0, cacheRead: 0, cacheWrite: 0, webSearches: 4 };
    expect(costOf(usage, price)).toBeCloseTo(3.04, 10);
    expect(costOf(usage, price, true)).toBeCloseTo(1.54, 10);
  });
});
