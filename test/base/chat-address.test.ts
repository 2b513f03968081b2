import { describe, expect, it } from "vitest";
import {
  CHAT_ADDRESS_FORMS,
  CHAT_PLATFORM_KINDS,
  chatAddressOf,
  chatReplyTarget,
  formatReplyTarget,
  parseChatAddress,
} from "../../src/base/chat-address.js";
import type { CHAT_PLATFORMS, ReplyTarget } from "../../src/ports/index.js";
import { isReplyTarget, readReplyTarget } from "../../src/storage/job.js";

/** A valid chat id of each platform. */
const SAMPLE_CHAT_IDS = {
  telegram: "-1001234",
  discord: "80351110224678912",
  slack: "C0123ABCD/1700000000.000100",
} satisfies Record<keyof typeof CHAT_PLATFORMS, string>;

describe("chat addresses", () => {
  it.each(CHAT_PLATFORM_KINDS)("round-trips a %s address through text and reply target", (kind) => {
    const address = { platform: kind, chatId: SAMPLE_CHAT_IDS[kind] };
    const target = chatReplyTarget(address);
    expect(target).toEqual({ kind, chatId: address.chatId });
    expect(isReplyTarget(target)).toBe(true);
    expect(chatAddressOf(target)).toEqual(address);
    expect(formatReplyTarget(target)).toBe(`${kind}:${address.chatId}`);
    expect(parseChatAddress(formatReplyTarget(target))).toEqual(address);
  });

  it("names the chat chatId on every platform", () => {
    expect(chatReplyTarget({ platform: "telegram", chatId: "1" })).toEqual({
      kind: "telegram",
      chatId: "1",
    });
    expect(chatReplyTarget({ platform: "discord", chatId: "2" })).toEqual({
      kind: "discord",
      chatId: "2",
    });
  });

  it("reads a Discord target stored before the migration (channelId) as chatId", () => {
    expect(readReplyTarget({ kind: "discord", channelId: "2" })).toEqual({
      kind: "discord",
      chatId: "2",
    });
    expect(readReplyTarget({ kind: "discord", chatId: "2" })).toEqual({
      kind: "discord",
      chatId: "2",
    });
    expect(readReplyTarget({ kind: "telegram", channelId: "2" })).toBeNull();
    expect(readReplyTarget({ kind: "discord", channelId: "" })).toBeNull();
    expect(readReplyTarget({ kind: "discord", channelId: 2 })).toBeNull();
    expect(readReplyTarget(null)).toBeNull();
  });

  it.each([
    "telegram:",
    "telegram:abc",
    "discord:@name",
    "discord:12a",
    "slack:123",
    "123",
    ":123",
  ])("refuses %j", (text) => {
    expect(parseChatAddress(text)).toBeNull();
  });

  it("accepts a Telegram @channel name", () => {
    expect(parseChatAddress("telegram:@news")).toEqual({ platform: "telegram", chatId: "@news" });
  });

  it("names every platform's form for error messages", () => {
    expect(CHAT_ADDRESS_FORMS).toBe(
      "telegram:<chat_id> or discord:<channel_id> or slack:<channel_id>",
    );
  });

  it.each([
    [{ kind: "console" }, "console"],
    [{ kind: "silent" }, "silent"],
  ] as Array<[ReplyTarget, string]>)("formats %j as %s, with no chat", (target, text) => {
    expect(chatAddressOf(target)).toBeNull();
    expect(formatReplyTarget(target)).toBe(text);
  });

  it.each([
    { kind: "telegram", channelId: "1" },
    { kind: "discord", channelId: "1" },
    { kind: "discord", chatId: 1 },
    { kind: "telegram", chatId: "" },
    { kind: "matrix", chatId: "1" },
    { kind: "toString" },
    null,
  ])("is not a reply target: %j", (value) => {
    expect(isReplyTarget(value)).toBe(false);
  });
});
