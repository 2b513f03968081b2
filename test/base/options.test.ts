import { describe, expect, it } from "vitest";
import { systemClock } from "../../src/base/clock.js";
import { UserError } from "../../src/base/errors.js";
import { silentLogger } from "../../src/base/log.js";
import { checkNumberOptions } from "../../src/base/options.js";
import { DiscordPlatform } from "../../src/chat/discord/platform.js";
import { TelegramPlatform } from "../../src/chat/telegram/platform.js";
import { ServerMetrics } from "../../src/server/metrics.js";
import { Supervisor } from "../../src/server/supervisor.js";
import { MemoryJobQueue } from "../../src/storage/memory/queue.js";
import { openDatabase } from "../../src/storage/sqlite/database.js";
import { SqliteJobQueue } from "../../src/storage/sqlite/queue.js";

describe("checkNumberOptions", () => {
  it("accepts good values and absent options", () => {
    expect(() =>
      checkNumberOptions(
        "Thing",
        { workers: 2, timeoutMs: 0.5, delayMs: 0, jitter: 1, unset: undefined },
        {
          workers: "count",
          timeoutMs: "positive",
          delayMs: "non-negative",
          jitter: "fraction",
          unset: "count",
        },
      ),
    ).not.toThrow();
  });

  it.each([
    [{ workers: 0 }, "count", "Thing: workers must be a whole number of at least 1, found 0"],
    [{ workers: 1.5 }, "count", "Thing: workers must be a whole number of at least 1, found 1.5"],
    [{ workers: -1 }, "positive", "Thing: workers must be a number greater than 0, found -1"],
    [
      { workers: Number.NaN },
      "positive",
      "Thing: workers must be a number greater than 0, found NaN",
    ],
    [
      { workers: Number.POSITIVE_INFINITY },
      "non-negative",
      "Thing: workers must be a number of at least 0, found Infinity",
    ],
    [{ workers: 1.2 }, "fraction", "Thing: workers must be a number from 0 to 1, found 1.2"],
    [{ workers: "3" }, "count", 'Thing: workers must be a whole number of at least 1, found "3"'],
  ] as const)("rejects %o as a %s, naming the option", (options, rule, message) => {
    const check = () => checkNumberOptions("Thing", options, { workers: rule });
    expect(check).toThrow(UserError);
    expect(check).toThrow(message);
  });
});

describe("option objects are checked where they are accepted", () => {
  it.each([
    ["MemoryJobQueue", () => new MemoryJobQueue({ defaultMaxAttempts: 0 }), "defaultMaxAttempts"],
    [
      "SqliteJobQueue",
      () => new SqliteJobQueue({ db: openDatabase(":memory:"), defaultMaxAttempts: -2 }),
      "defaultMaxAttempts",
    ],
    [
      "Supervisor",
      () =>
        new Supervisor({
          clock: systemClock,
          logger: silentLogger(),
          metrics: new ServerMetrics(),
          policy: { initialDelayMs: Number.NaN },
        }),
      "initialDelayMs",
    ],
    [
      "TelegramPlatform",
      () => new TelegramPlatform({ token: "1:x", logger: silentLogger(), reconnectBaseMs: 0 }),
      "reconnectBaseMs",
    ],
    [
      "DiscordPlatform",
      () => new DiscordPlatform({ token: "x", callTimeoutMs: -5 }),
      "callTimeoutMs",
    ],
  ])("%s", (owner, create, option) => {
    expect(create).toThrow(UserError);
    expect(create).toThrow(new RegExp(`^${owner}.*: ${option} must be`));
  });
});
