/**
 * Skills and agents added while `picklebot server` runs, used from Telegram: the child
 * process with the real telegraf against the fake Bot API and the fake Anthropic API.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  type FakeAnthropic,
  lastUserText,
  requestAt,
  startFakeAnthropic,
} from "../fakes/anthropic.js";
import { type FakeTelegram, startFakeTelegram } from "../fakes/telegram.js";
import { busWorkspace, nthTelegramReply, startBusServer, telegramYaml } from "../helpers/bus.js";
import { killAllServers } from "../helpers/server.js";
import type { TempWorkspace } from "../helpers/workspace.js";

const OWNER = 4242;

let model: FakeAnthropic;
let telegram: FakeTelegram;
let ws: TempWorkspace;

beforeEach(async () => {
  model = await startFakeAnthropic();
  telegram = await startFakeTelegram();
  ws = busWorkspace(model.url, telegramYaml(telegram, { allowedUserIds: [OWNER] }));
});

afterEach(async () => {
  await killAllServers();
  await telegram.close();
  await model.close();
  ws.remove();
});

function say(text: string) {
  return telegram.sendUserMessage({ chatId: OWNER, userId: OWNER, text });
}

describe("skills and agents from Telegram, added while the server runs", () => {
  it("offers the new agent in /agent, and answers with its new skill loaded on use", async () => {
    const server = await startBusServer(ws.dir, ["telegram"]);
    ws.write(
      "agents/cook/AGENT.md",
      "---\nname: Cook\ndescription: Kitchen help\ntools: [read]\n---\nYou are Cook.\n",
    );
    ws.write(
      "agents/cook/skills/brine/SKILL.md",
      "---\nname: brine\ndescription: Brine ratios. Use for pickling.\n---\nUse 50 g salt per litre.\n",
    );
    await server.waitForLog(
      (line) =>
        line.msg === "agents and skills reloaded" && (line.added as string[]).includes("cook"),
    );

    await say("/agent");
    expect(await nthTelegramReply(telegram, OWNER, 1)).toContain("cook: Cook, Kitchen help");
    await say("/agent cook");
    expect(await nthTelegramReply(telegram, OWNER, 2)).toMatch(/^Switched to cook \(Cook\)/);

    model.script(
      { toolUses: [{ name: "skill", input: { name: "brine" } }] },
      { text: "50 g of salt per litre." },
    );
    await say("how salty is a brine?");
    expect(await nthTelegramReply(telegram, OWNER, 3)).toBe("50 g of salt per litre.");
    const system = JSON.stringify(requestAt(model, 0).body.system);
    expect(system).toContain("You are Cook.");
    expect(system).toContain(
      "- brine: Brine ratios. Use for pickling. (agents/cook/skills/brine/SKILL.md)",
    );
    expect(system).not.toContain("50 g salt");
    expect(lastUserText(requestAt(model, 1))).toBe("Use 50 g salt per litre.");
  });
});
