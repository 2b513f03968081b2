import { describe, expect, it } from "vitest";
import { cutContext, hasTurnStart, isTurnStart } from "../../src/storage/context.js";
import { newSessionId, titleFromMessage } from "../../src/storage/session.js";
import { assistantText, toolCalls, toolResults, userText } from "./contract.js";

describe("cutContext", () => {
  const history = [
    userText("one"),
    assistantText("1"),
    userText("two"),
    toolCalls("t1"),
    toolResults("t1"),
    assistantText("2"),
  ];

  it("starts at the earliest turn start that keeps within maxMessages", () => {
    expect(cutContext(history, 6)).toEqual(history);
    expect(cutContext(history, 5)).toEqual(history.slice(2));
    expect(cutContext(history, 4)).toEqual(history.slice(2));
  });

  it("returns the latest turn whole when it alone exceeds maxMessages", () => {
    expect(cutContext(history, 1)).toEqual(history.slice(2));
  });

  it("returns nothing for a tail without any turn start", () => {
    expect(cutContext([toolResults("t1"), assistantText("x")], 5)).toEqual([]);
    expect(cutContext([], 5)).toEqual([]);
  });

  it("refuses a maxMessages that is not a positive integer", () => {
    expect(() => cutContext(history, 0)).toThrow(RangeError);
    expect(() => cutContext(history, 2.5)).toThrow(RangeError);
  });

  it("tells a turn start from a tool result", () => {
    expect(isTurnStart(userText("hi"))).toBe(true);
    expect(isTurnStart(toolResults("t1"))).toBe(false);
    expect(isTurnStart(assistantText("hi"))).toBe(false);
    expect(hasTurnStart([toolCalls("t1"), toolResults("t1")])).toBe(false);
    expect(hasTurnStart(history.slice(1))).toBe(true);
  });
});

describe("session fields", () => {
  it("makes session ids that sort by creation time", () => {
    const ids = [1_000, 2_000_000, 1_700_000_000_000].map(newSessionId);
    expect([...ids].sort()).toEqual(ids);
    expect(ids[0]).toMatch(/^s_[0-9a-z]{9}[0-9a-f]{12}$/);
  });

  it("titles with the first non-empty user text only", () => {
    expect(titleFromMessage(assistantText("not me"))).toBeNull();
    expect(titleFromMessage(userText("   "))).toBeNull();
    expect(titleFromMessage(userText("🥒".repeat(100)))).toBe("🥒".repeat(80));
  });
});
