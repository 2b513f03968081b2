/**
 * Session keys and outbox keys: every form round-trips through its builder and its parser,
 * keeps the exact text stored keys have, and a malformed key parses as none.
 */
import { describe, expect, it } from "vitest";
import {
  formatOutboxKey,
  jobIdOfOutboxKey,
  type OutboxKey,
  parseOutboxKey,
} from "../../src/base/outbox-key.js";
import {
  chatSessionKey,
  consoleSessionKey,
  cronIdOfKey,
  cronKeyPrefix,
  cronManualKey,
  cronOccurrenceKey,
  formatSessionKey,
  heartbeatIdOfKey,
  heartbeatTickKey,
  isManualCronKey,
  isWebSessionKey,
  parseSessionKey,
  type SessionKey,
  subagentDepthOf,
  webSessionKey,
} from "../../src/base/session-key.js";

const AT = Date.UTC(2026, 10, 27, 8, 0);

describe("session keys", () => {
  it.each<[SessionKey, string]>([
    [{ kind: "chat", platform: "telegram", chatId: "42" }, "telegram:42"],
    [{ kind: "chat", platform: "telegram", chatId: "-1001234" }, "telegram:-1001234"],
    [
      { kind: "chat", platform: "discord", chatId: "80351110224678912" },
      "discord:80351110224678912",
    ],
    [
      { kind: "cron", cronId: "news", run: { manual: false, at: "2026-11-27T08:00:00.000Z" } },
      "cron:news:2026-11-27T08:00:00.000Z",
    ],
    [
      {
        kind: "cron",
        cronId: "daily-brine",
        run: { manual: true, at: "2026-11-27T08:00:00.000Z" },
      },
      "cron:daily-brine:manual:2026-11-27T08:00:00.000Z",
    ],
    [{ kind: "cron", cronId: "brine", run: null }, "cron:brine"],
    [
      { kind: "subagent", depth: 1, parent: "mwwcllfh00018eym1g81", callId: "toolu_01" },
      "subagent:1:mwwcllfh00018eym1g81:toolu_01",
    ],
    [
      { kind: "subagent", depth: 2, parent: "console:alice", callId: "call" },
      "subagent:2:console:alice:call",
    ],
    [{ kind: "console", user: "alice" }, "console:alice"],
    [
      { kind: "schedule", scheduleId: "r7k2", at: "2026-11-27T08:00:00.000Z" },
      "schedule:r7k2:2026-11-27T08:00:00.000Z",
    ],
    [
      { kind: "heartbeat", heartbeatId: "config-telegram-42", at: "2026-11-27T08:00:00.000Z" },
      "heartbeat:config-telegram-42:2026-11-27T08:00:00.000Z",
    ],
    [{ kind: "web", agentId: "pickle", id: "0a1b2c3d" }, "web:pickle:0a1b2c3d"],
  ])("round-trips %j as %s", (key, text) => {
    expect(formatSessionKey(key)).toBe(text);
    expect(parseSessionKey(text)).toEqual(key);
  });

  it("builds each form with its builder", () => {
    expect(chatSessionKey({ platform: "discord", chatId: "555" })).toBe("discord:555");
    expect(consoleSessionKey("bob")).toBe("console:bob");
    expect(cronOccurrenceKey("news", AT)).toBe("cron:news:2026-11-27T08:00:00.000Z");
    expect(cronManualKey("news", AT)).toBe("cron:news:manual:2026-11-27T08:00:00.000Z");
    expect(cronManualKey("news", AT).startsWith(cronKeyPrefix("news"))).toBe(true);
    expect(webSessionKey("pickle", "ff00")).toBe("web:pickle:ff00");
    expect(heartbeatTickKey("k7m2qx", AT)).toBe("heartbeat:k7m2qx:2026-11-27T08:00:00.000Z");
  });

  it("answers the questions callers ask of a key", () => {
    expect(cronIdOfKey("cron:news:2026-03-01T08:00")).toBe("news");
    expect(cronIdOfKey("cron:news")).toBe("news");
    expect(cronIdOfKey("telegram:42")).toBeUndefined();
    expect(isManualCronKey(cronManualKey("news", AT))).toBe(true);
    expect(isManualCronKey(cronOccurrenceKey("news", AT))).toBe(false);
    expect(isWebSessionKey("web:pickle:ff00")).toBe(true);
    expect(isWebSessionKey("telegram:42")).toBe(false);
    expect(subagentDepthOf("subagent:3:job:call")).toBe(3);
    expect(subagentDepthOf("telegram:42")).toBe(0);
    expect(heartbeatIdOfKey("heartbeat:k7m2qx:2026-11-27T08:00:00.000Z")).toBe("k7m2qx");
    expect(heartbeatIdOfKey("schedule:k7m2qx:2026-11-27T08:00:00.000Z")).toBeUndefined();
  });

  it.each([
    "",
    "telegram",
    "telegram:",
    "telegram:abc",
    "discord:12a",
    "slack:123",
    ":42",
    "cron:",
    "cron:bad id:2026",
    "cron:news:",
    "cron:news:manual:",
    "subagent:x:job:call",
    "subagent:1:job",
    "subagent:1::call",
    "subagent:1:job:",
    "console:",
    "web:pickle",
    "web::ff00",
    "web:pickle:ff00:extra",
    "heartbeat:k7m2qx",
    "heartbeat::2026",
    "k1",
  ])("refuses %j", (text) => {
    expect(parseSessionKey(text)).toBeNull();
  });
});

describe("outbox keys", () => {
  it.each<[OutboxKey, string]>([
    [{ kind: "job", jobId: "mwwcllfh00018eym1g81" }, "job:mwwcllfh00018eym1g81"],
    [
      { kind: "reply", id: "5f0c6f1e-0a8e-4c1b-9d51-3b9a3c1d2e4f" },
      "reply:5f0c6f1e-0a8e-4c1b-9d51-3b9a3c1d2e4f",
    ],
    [
      { kind: "post", jobId: "mwwcllfh00018eym1g81", digest: "0123456789abcdef" },
      "post:mwwcllfh00018eym1g81:0123456789abcdef",
    ],
    [
      { kind: "file", jobId: "mwwcllfh00018eym1g81", digest: "0123456789abcdef" },
      "file:mwwcllfh00018eym1g81:0123456789abcdef",
    ],
    [{ kind: "voice", jobId: "mwwcllfh00018eym1g81" }, "voice:mwwcllfh00018eym1g81"],
    [{ kind: "bus", platform: "telegram", messageId: "1234" }, "bus:telegram:1234"],
    [
      { kind: "schedule", scheduleId: "r7k2", occurrenceMs: 1795651200000 },
      "schedule:r7k2:1795651200000",
    ],
    [
      { kind: "heartbeat-paused", heartbeatId: "k7m2qx", periodStart: 1795651200000 },
      "heartbeat-paused:k7m2qx:1795651200000",
    ],
    [
      { kind: "heartbeat-unpriced", heartbeatId: "k7m2qx", digest: "0123456789abcdef" },
      "heartbeat-unpriced:k7m2qx:0123456789abcdef",
    ],
    [
      {
        kind: "budget",
        scope: "agent pickle",
        period: "month",
        periodStart: 1793491200000,
        level: "warning",
      },
      "budget:agent pickle:month:1793491200000:warning",
    ],
    [
      {
        kind: "budget",
        scope: "the workspace",
        period: "day",
        periodStart: 1795651200000,
        level: "reached",
      },
      "budget:the workspace:day:1795651200000:reached",
    ],
  ])("round-trips %j as %s", (key, text) => {
    expect(formatOutboxKey(key)).toBe(text);
    expect(parseOutboxKey(text)).toEqual(key);
  });

  it("names the job of a reply or a post, and no job for the others", () => {
    expect(jobIdOfOutboxKey("job:j1")).toBe("j1");
    expect(jobIdOfOutboxKey("post:j1:0123456789abcdef")).toBe("j1");
    expect(jobIdOfOutboxKey("file:j1:0123456789abcdef")).toBe("j1");
    expect(jobIdOfOutboxKey("voice:j1")).toBe("j1");
    expect(jobIdOfOutboxKey("bus:discord:99")).toBeNull();
    expect(jobIdOfOutboxKey("reply:abc")).toBeNull();
    expect(jobIdOfOutboxKey("budget:the workspace:day:1:reached")).toBeNull();
  });

  it.each([
    "",
    "job",
    "job:",
    "job:j1:extra",
    "reply:",
    "post:j1",
    "post::abc",
    "post:j1:abc:extra",
    "file:j1",
    "voice:",
    "voice:j1:extra",
    "bus:matrix:1",
    "bus:telegram:",
    "bus:telegram",
    "budget:the workspace:day:1:exceeded",
    "budget:the workspace:week:1:reached",
    "budget:the workspace:day:soon:reached",
    "budget:day:1:reached",
    "heartbeat-paused:k7m2qx",
    "heartbeat-paused:k7m2qx:soon",
    "heartbeat-unpriced:k7m2qx",
    "heartbeat-unpriced:k7m2qx:abc:extra",
    "approval:a1",
  ])("refuses %j", (text) => {
    expect(parseOutboxKey(text)).toBeNull();
  });
});
