/**
 * The in-memory chat platform's buttons: what a chat shows, how a press is delivered, and
 * that it refuses what the real platforms refuse.
 */
import { describe, expect, it } from "vitest";
import { ChatPlatformError } from "../../src/base/errors.js";
import type { IncomingChoice } from "../../src/ports/index.js";
import { FakeChatPlatform } from "./chat-platform.js";

const CHOICES = [
  { id: "allow", label: "Allow once", style: "primary" as const },
  { id: "deny", label: "Deny", style: "danger" as const },
];

async function startedPlatform(presses: IncomingChoice[]): Promise<FakeChatPlatform> {
  const platform = new FakeChatPlatform();
  await platform.start(
    async () => {},
    async (press) => {
      presses.push(press);
    },
  );
  return platform;
}

describe("FakeChatPlatform choices", () => {
  it("shows the choices until an edit, and delivers a press of a shown button", async () => {
    const presses: IncomingChoice[] = [];
    const platform = await startedPlatform(presses);
    const { messageId } = await platform.sendChoices("42", "Run ls?", "plain", CHOICES);
    expect(platform.shown("42")).toEqual([
      { messageId, text: "Run ls?", format: "plain", choices: CHOICES },
    ]);

    const press = await platform.pressButton({ messageId, choiceId: "deny" });
    expect(presses).toEqual([press]);
    expect(press).toMatchObject({ chatId: "42", messageId, choiceId: "deny", userId: "7" });
    await expect(platform.pressButton({ messageId, choiceId: "maybe" })).rejects.toThrow(
      /no button "maybe"/,
    );

    await platform.edit("42", messageId, "Run ls? Denied.", "plain");
    expect(platform.shown("42")).toEqual([{ messageId, text: "Run ls? Denied.", format: "plain" }]);
  });

  it("answers a press once, and refuses bad choices before anything is sent", async () => {
    const platform = await startedPlatform([]);
    const { messageId } = await platform.sendChoices("42", "Run ls?", "plain", CHOICES);
    const press = await platform.pressButton({ messageId, choiceId: "allow" });
    await platform.acknowledgeChoice(press, "Allowed");
    await expect(platform.acknowledgeChoice(press)).rejects.toBeInstanceOf(ChatPlatformError);
    expect(platform.calls.map((call) => [call.method, call.text, call.error === null])).toEqual([
      ["sendChoices", "Run ls?", true],
      ["acknowledgeChoice", "Allowed", true],
      ["acknowledgeChoice", undefined, false],
    ]);

    const tooMany = ["a", "b", "c", "d", "e", "f"].map((id) => ({ id, label: id }));
    await expect(platform.sendChoices("42", "?", "plain", tooMany)).rejects.toThrow(
      "telegram: cannot send these choices: 6 choices, at most 5 fit in one row",
    );
    expect(platform.calls).toHaveLength(3);
  });
});
