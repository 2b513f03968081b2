/**
 * Reports over the usage ledger: model calls summed by agent, day, session, cron or
 * heartbeat (each heartbeat's calls per day), with their cost at the workspace's prices. Shared by `picklebot usage`, `/usage`, `status`
 * and the metrics.
 */
import { UsageError } from "../base/errors.js";
import { cronIdOfKey, heartbeatIdOfKey } from "../base/session-key.js";
import { offsetAt, wallClockMs, zoneFormatter } from "../base/time-zone.js";
import { addUsage, zeroUsage } from "../base/usage.js";
import type { TokenUsage, UsageLedger, UsageRecord } from "../ports/index.js";
import { costOf, type PriceTable, priceOf } from "./prices.js";

/** How a report groups its calls. */
export const USAGE_GROUPINGS = ["agent", "day", "session", "cron", "heartbeat"] as const;
export type UsageGrouping = (typeof USAGE_GROUPINGS)[number];

/** Calls of one group, summed. */
export interface UsageLine extends TokenUsage {
  /** The agent id, `YYYY-MM-DD`, session id, cron id, or `YYYY-MM-DD <heartbeat id>`. */
  key: string;
  calls: number;
  costUsd: number;
}

/** Calls summed by group, biggest cost first, and their total. */
export interface UsageReport {
  lines: UsageLine[];
  total: UsageLine;
  /** Models the prices do not know: their calls count as $0 (set `llm.prices`). */
  unpriced: string[];
}

/**
 * The cost of one recorded call at `prices` (its tokens count 0 for a model they do not
 * know), plus what a speech service charged for it (`serviceUsd`, priced when recorded).
 */
export function callCost(record: UsageRecord, prices: PriceTable = {}): number {
  const price = priceOf(record.model, prices);
  return (price ? costOf(record, price, record.batch) : 0) + (record.serviceUsd ?? 0);
}

/**
 * Whether a call's tokens go unpriced: `prices` do not know its model. A speech service's
 * row (a transcription, `speech_to_text:<model>`) is priced by its `serviceUsd`.
 */
function isUnpriced(record: UsageRecord, prices: PriceTable | undefined): boolean {
  return record.serviceUsd === undefined && !priceOf(record.model, prices);
}

/** Sums `records` by `by`; a day is the calendar day in `timezone`. */
export function summarizeUsage(
  records: readonly UsageRecord[],
  options: { by: UsageGrouping; prices?: PriceTable; timezone: string },
): UsageReport {
  const groups = new Map<string, UsageLine>();
  const total = emptyLine("total");
  const unpriced = new Set<string>();
  for (const record of records) {
    const key = groupKey(record, options.by, options.timezone);
    if (key === undefined) continue;
    if (isUnpriced(record, options.prices)) unpriced.add(record.model);
    const cost = callCost(record, options.prices);
    const line = groups.get(key) ?? emptyLine(key);
    groups.set(key, addCall(line, record, cost));
    Object.assign(total, addCall(total, record, cost));
  }
  const byDay = options.by === "day" || options.by === "heartbeat";
  const lines = [...groups.values()].sort((a, b) =>
    byDay ? a.key.localeCompare(b.key) : b.costUsd - a.costUsd,
  );
  return { lines, total, unpriced: [...unpriced].sort() };
}

/**
 * The group of a call; undefined leaves it out (a call outside a cron, by cron; outside a
 * heartbeat's tick, by heartbeat: there the group is the day and the heartbeat, so the
 * report reads as each heartbeat's cost per day).
 */
function groupKey(record: UsageRecord, by: UsageGrouping, timezone: string): string | undefined {
  switch (by) {
    case "agent":
      return record.agentId;
    case "session":
      return record.sessionId;
    case "day":
      return localDate(record.at, timezone);
    case "cron":
      return cronIdOfKey(record.sessionKey);
    case "heartbeat": {
      const heartbeat = heartbeatIdOfKey(record.sessionKey);
      return heartbeat === undefined ? undefined : `${localDate(record.at, timezone)} ${heartbeat}`;
    }
    default:
      return by satisfies never;
  }
}

function emptyLine(key: string): UsageLine {
  return { key, calls: 0, costUsd: 0, ...zeroUsage() };
}

function addCall(line: UsageLine, usage: TokenUsage, cost: number): UsageLine {
  return {
    key: line.key,
    calls: line.calls + 1,
    costUsd: line.costUsd + cost,
    ...addUsage(line, usage),
  };
}

/** `YYYY-MM-DD` of `at` in `timezone`. */
export function localDate(at: number, timezone: string): string {
  return zoneFormatter("en-CA", timezone, { dateStyle: "short" }).format(at);
}

/** Epoch ms of the start of the day (or month) that holds `now`, in `timezone`. */
export function periodStart(now: number, period: "day" | "month", timezone: string): number {
  const wall = new Date(wallClockMs(now, timezone));
  const day = period === "day" ? wall.getUTCDate() : 1;
  const startWall = Date.UTC(wall.getUTCFullYear(), wall.getUTCMonth(), day);
  // The offset at the start may differ from now's (a DST change in between): ask again there.
  return startWall - offsetAt(startWall - offsetAt(now, timezone), timezone);
}

const DURATION_UNITS = { m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 } as const;

/** `--since`: `30m`, `12h`, `7d` or `2w` before `now`; throws UsageError otherwise. */
export function parseSince(text: string, now: number): number {
  const match = /^(\d+)([mhdw])$/.exec(text.trim());
  if (!match) {
    throw new UsageError(
      `--since "${text}" is not a duration: write a number and a unit m, h, d or w, such as 7d.`,
    );
  }
  const unit = match[2] as keyof typeof DURATION_UNITS;
  return now - Number(match[1]) * DURATION_UNITS[unit];
}

/** `$0.0123`: cents for sums of a dollar or more, four decimals below. */
export function formatUsd(usd: number): string {
  return `$${usd.toFixed(usd >= 1 ? 2 : 4)}`;
}

/** What was spent today and this month (calendar periods in `timezone`), in USD. */
export interface Spend {
  todayUsd: number;
  monthUsd: number;
}

/** Today's and this month's cost of the calls in `ledger` (of one session, when given). */
export async function spendNow(
  ledger: UsageLedger,
  options: { now: number; timezone: string; prices?: PriceTable; sessionId?: string },
): Promise<Spend> {
  const dayStart = periodStart(options.now, "day", options.timezone);
  const monthStart = periodStart(options.now, "month", options.timezone);
  const since = Math.min(dayStart, monthStart);
  const query =
    options.sessionId === undefined ? { since } : { since, sessionId: options.sessionId };
  const spend = { todayUsd: 0, monthUsd: 0 };
  for (const record of await ledger.calls(query)) {
    const cost = callCost(record, options.prices);
    if (record.at >= monthStart) spend.monthUsd += cost;
    if (record.at >= dayStart) spend.todayUsd += cost;
  }
  return spend;
}
