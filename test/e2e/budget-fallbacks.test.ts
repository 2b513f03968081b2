/**
 * Budgets over every model a turn may call: `picklebot server` as a child process, the
 * real telegraf against the fake Bot API, and two fake Anthropic servers as two named
 * models: the default entry (`llm:`, a priced model) and `backup`, a hosted model no price
 * knows. Under a budget, neither a fallback to it nor a chat switched to it with `/model`
 * may run at $0 (docs/decisions/unpriced-models.md).
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type FakeAnthropic, type FakeReply, startFakeAnthropic } from "../fakes/anthropic.js";
import { type FakeTelegram, startFakeTelegram } from "../fakes/telegram.js";
import { nthTelegramReply, startBusServer, telegramYaml } from "../helpers/bus.js";
import { killAllServers } from "../helpers/server.js";
import { makeWorkspace, type TempWorkspace } from "../helpers/workspace.js";

const OWNER = 4242;
/** The refusal as Telegram shows it (the backticks around `picklebot doctor` are code). */
const REFUSED =
  'Sorry, I could not finish this: agent "pickle" uses a model without a price, so its budget cannot be kept; the owner can see how to fix it with picklebot doctor.';

let primary: FakeAnthropic;
let backup: FakeAnthropic;
let telegram: FakeTelegram;
let ws: TempWorkspace;
/** The primary's answer while its script is empty. */
let primaryAnswer: FakeReply;

/** A workspace with a daily budget, `llm:` on `primary` and `backup` unpriced. */
function workspace(llmFallbacks: string[]): TempWorkspace {
  return makeWorkspace({
    "picklebot.yaml": [
      "llm:",
      "  api_key: test-key",
      `  base_url: ${primary.url}`,
      "  timeout_s: 20",
      `  fallbacks: [${llmFallbacks.join(", ")}]`,
      "  fallback_cooldown_s: 0",
      "models:",
      "  backup:",
      "    model: backup-model",
      `    base_url: ${backup.url}`,
      "budget:",
      "  daily_usd: 5",
      "http:",
      "  port: 0",
      telegramYaml(telegram, { allowedUserIds: [OWNER] }),
    ].join("\n"),
  });
}

beforeEach(async () => {
  primaryAnswer = { text: "primary here" };
  primary = await startFakeAnthropic({ defaultReply: () => primaryAnswer });
  backup = await startFakeAnthropic({ defaultReply: () => ({ text: "backup here at $0" }) });
  telegram = await startFakeTelegram();
});

afterEach(async () => {
  await killAllServers();
  await telegram.close();
  await primary.close();
  await backup.close();
  ws.remove();
});

function say(text: string) {
  return telegram.sendUserMessage({ chatId: OWNER, userId: OWNER, text });
}

describe("budgets over a model chain", () => {
  it("refuses a turn whose fallback has no price, so a failing primary never falls back at $0", async () => {
    primaryAnswer = { error: { status: 503 } };
    ws = workspace(["backup"]);
    await startBusServer(ws.dir, ["telegram"]);

    await say("hello?");
    expect(await nthTelegramReply(telegram, OWNER, 1)).toBe(REFUSED);
    expect(backup.requests).toHaveLength(0);
    expect(telegram.messages(OWNER).join("\n")).not.toContain("backup here");
  });

  it("refuses a chat switched with /model to a model without a price", async () => {
    ws = workspace([]);
    await startBusServer(ws.dir, ["telegram"]);

    await say("/model backup");
    expect(await nthTelegramReply(telegram, OWNER, 1)).toContain(
      "This conversation now uses backup (backup-model)",
    );
    await say("who answers?");
    expect(await nthTelegramReply(telegram, OWNER, 2)).toBe(REFUSED);
    expect(backup.requests).toHaveLength(0);
    expect(primary.requests).toHaveLength(0);
  });
});
