/** Refusal: a refusal only the owner can fix is told once, until it ends. */
import { describe, expect, it } from "vitest";
import { Refusal } from "../../src/base/refusal.js";
import { recordingLogger } from "../helpers/log.js";

const TOKEN_REFUSED = "Telegram refused the bot token (401 Unauthorized); ask @BotFather";

describe("Refusal", () => {
  it("logs a refusal once while it repeats, and holds it until it ends", () => {
    const { logger, lines } = recordingLogger();
    const refusal = new Refusal(logger);
    for (let attempt = 0; attempt < 5; attempt += 1) {
      refusal.refused(TOKEN_REFUSED, "telegram: could not connect");
    }
    expect(lines).toEqual([
      expect.objectContaining({
        level: 50,
        msg: "telegram: could not connect",
        error: TOKEN_REFUSED,
      }),
    ]);
    expect(refusal.current).toBe(TOKEN_REFUSED);
    refusal.end();
    expect(refusal.current).toBeNull();
  });

  it("tells a refusal again once it ended, and a different one at once", () => {
    const { logger, lines } = recordingLogger();
    const refusal = new Refusal(logger);
    refusal.refused(TOKEN_REFUSED, "refused");
    refusal.end();
    refusal.refused(TOKEN_REFUSED, "refused");
    refusal.refused("Discord refused the bot token", "refused");
    expect(lines.map((line) => line.error)).toEqual([
      TOKEN_REFUSED,
      TOKEN_REFUSED,
      "Discord refused the bot token",
    ]);
  });
});
