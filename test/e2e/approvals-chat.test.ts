/**
 * Approvals in real chats: `picklebot server` as a child process with an agent whose
 * `bash` is set to `ask`, the fake Telegram and Discord servers and the fake model. The
 * owner answers with the question's buttons: allowed, denied, unanswered until the
 * timeout, and answered after the server was killed and started again.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type FakeAnthropic, startFakeAnthropic } from "../fakes/anthropic.js";
import { type FakeDiscord, startFakeDiscord } from "../fakes/discord.js";
import { type FakeTelegram, startFakeTelegram } from "../fakes/telegram.js";
import { CAREFUL_AGENT, echoHiModel } from "../helpers/approvals.js";
import { busWorkspace, discordYaml, startBusServer, telegramYaml } from "../helpers/bus.js";
import { killAllServers } from "../helpers/server.js";
import type { TempWorkspace } from "../helpers/workspace.js";

let fake: FakeAnthropic;
let ws: TempWorkspace | null = null;

beforeEach(async () => {
  fake = await startFakeAnthropic({ defaultReply: echoHiModel });
});

afterEach(async () => {
  await killAllServers();
  await fake.close();
  ws?.remove();
  ws = null;
});

const APPROVALS = (timeoutS: number) => `approvals:\n  timeout_s: ${timeoutS}\n`;

describe("approvals on Telegram", () => {
  const OWNER = 4242;
  let telegram: FakeTelegram;

  beforeEach(async () => {
    telegram = await startFakeTelegram();
  });
  afterEach(async () => {
    await telegram.close();
  });

  async function serve(timeoutS = 3600) {
    ws = busWorkspace(
      fake.url,
      telegramYaml(telegram, { allowedUserIds: [OWNER] }) + APPROVALS(timeoutS),
      { "agents/pickle/AGENT.md": CAREFUL_AGENT },
    );
    return startBusServer(ws.dir, ["telegram"]);
  }

  /** The question the bot asked, once it shows its buttons. */
  function question() {
    return telegram.waitFor(() =>
      telegram
        .botMessagesOf(OWNER)
        .find((message) => telegram.buttonsOf(OWNER, message.messageId).length > 0),
    );
  }

  function press(messageId: number, label: string, userId = OWNER) {
    const button = telegram
      .buttonsOf(OWNER, messageId)
      .flat()
      .find((candidate) => candidate.text === label);
    const data = button && "callback_data" in button ? button.callback_data : "";
    return telegram.pressButton({ chatId: OWNER, messageId, data, userId, username: "ana" });
  }

  it("Allow once runs the call; the question then shows who allowed it, without buttons", async () => {
    await serve();
    telegram.sendUserMessage({ chatId: OWNER, userId: OWNER, text: "say hi" });
    const asked = await question();
    expect(asked.text).toContain("pickle wants to run bash: echo hi");
    press(asked.messageId, "Allow once");
    await telegram.waitFor(() => telegram.messages(OWNER).includes("result: hi"), 15_000);
    const shown = telegram.botMessagesOf(OWNER).find((m) => m.messageId === asked.messageId);
    expect(shown?.text).toMatch(/✅ Allowed once by /);
    expect(telegram.buttonsOf(OWNER, asked.messageId)).toEqual([]);
    expect(telegram.callbackAnswers.at(-1)).toMatchObject({ status: 200 });
  });

  it("Deny refuses the call and the agent says so", async () => {
    await serve();
    telegram.sendUserMessage({ chatId: OWNER, userId: OWNER, text: "say hi" });
    const asked = await question();
    press(asked.messageId, "Deny");
    await telegram.waitFor(
      () =>
        telegram.messages(OWNER).some((text) => text.startsWith("result: bash: the owner denied")),
      15_000,
    );
  });

  it("an unanswered question counts as Deny after approvals.timeout_s", async () => {
    await serve(2);
    telegram.sendUserMessage({ chatId: OWNER, userId: OWNER, text: "say hi" });
    const asked = await question();
    await telegram.waitFor(
      () =>
        telegram
          .messages(OWNER)
          .some((text) => text.includes("did not answer the approval request in time")),
      15_000,
    );
    const shown = telegram.botMessagesOf(OWNER).find((m) => m.messageId === asked.messageId);
    expect(shown?.text).toMatch(/⌛ No answer in time: denied\.$/);
  });

  it("a question asked before a SIGKILL is answered after the restart, and the call runs once", async () => {
    const first = await serve();
    telegram.sendUserMessage({ chatId: OWNER, userId: OWNER, text: "say hi" });
    const asked = await question();
    await first.waitForLog("job waiting for the owner's approval");
    await first.kill();
    if (!ws) throw new Error("no workspace");
    await startBusServer(ws.dir, ["telegram"]);
    press(asked.messageId, "Allow once");
    await telegram.waitFor(() => telegram.messages(OWNER).includes("result: hi"), 15_000);
    // One question, and the model called once before and once after the answer.
    const questions = telegram.botMessagesOf(OWNER).filter((m) => m.text.includes("wants to run"));
    expect(questions).toHaveLength(1);
    expect(fake.requests).toHaveLength(2);
  });

  it("a press by someone who is not allowed is refused, and the question stays open", async () => {
    await serve();
    telegram.sendUserMessage({ chatId: OWNER, userId: OWNER, text: "say hi" });
    const asked = await question();
    press(asked.messageId, "Allow once", 999);
    await telegram.waitFor(() =>
      telegram.callbackAnswers.some((answer) => answer.text === "Only the owner can answer this."),
    );
    expect(telegram.buttonsOf(OWNER, asked.messageId)).not.toEqual([]);
  });
});

describe("approvals on Discord", () => {
  const OWNER = "5150";
  const DM = "7000";
  let discord: FakeDiscord;

  beforeEach(async () => {
    discord = await startFakeDiscord();
  });
  afterEach(async () => {
    await discord.close();
  });

  async function serve(timeoutS = 3600) {
    ws = busWorkspace(
      fake.url,
      discordYaml(discord, { allowedUserIds: [OWNER] }) + APPROVALS(timeoutS),
      { "agents/pickle/AGENT.md": CAREFUL_AGENT },
    );
    return startBusServer(ws.dir, ["discord"]);
  }

  function question() {
    return discord.waitFor(
      () => discord.botMessagesOf(DM).find((message) => message.components.length > 0),
      10_000,
    );
  }

  function press(asked: { messageId: string; components: unknown[] }, label: string) {
    const rows = asked.components as Array<{
      components: Array<{ label?: string; custom_id?: string }>;
    }>;
    const button = rows.flatMap((row) => row.components).find((b) => b.label === label);
    return discord.pressButton({
      channelId: DM,
      messageId: asked.messageId,
      customId: button?.custom_id ?? "",
      userId: OWNER,
    });
  }

  it("Allow once runs the call; the question shows the outcome without buttons", async () => {
    await serve();
    await discord.sendUserMessage({ channelId: DM, userId: OWNER, content: "say hi" });
    const asked = await question();
    await press(asked, "Allow once");
    await discord.waitFor(() => discord.messages(DM).includes("result: hi"), 15_000);
    const shown = discord.botMessagesOf(DM).find((m) => m.messageId === asked.messageId);
    expect(shown?.content).toMatch(/✅ Allowed once by /);
    expect(shown?.components).toEqual([]);
    expect(discord.interactionResponses.at(-1)).toMatchObject({ status: 204 });
  });

  it("Deny refuses the call", async () => {
    await serve();
    await discord.sendUserMessage({ channelId: DM, userId: OWNER, content: "say hi" });
    await press(await question(), "Deny");
    await discord.waitFor(
      () => discord.messages(DM).some((text) => text.startsWith("result: bash: the owner denied")),
      15_000,
    );
  });

  it("an unanswered question counts as Deny after approvals.timeout_s", async () => {
    await serve(2);
    await discord.sendUserMessage({ channelId: DM, userId: OWNER, content: "say hi" });
    const asked = await question();
    await discord.waitFor(
      () =>
        discord
          .messages(DM)
          .some((text) => text.includes("did not answer the approval request in time")),
      15_000,
    );
    const shown = discord.botMessagesOf(DM).find((m) => m.messageId === asked.messageId);
    expect(shown?.content).toMatch(/⌛ No answer in time: denied\.$/);
  });

  it("a question asked before a SIGKILL is answered after the restart", async () => {
    const first = await serve();
    await discord.sendUserMessage({ channelId: DM, userId: OWNER, content: "say hi" });
    const asked = await question();
    await first.waitForLog("job waiting for the owner's approval");
    await first.kill();
    if (!ws) throw new Error("no workspace");
    await startBusServer(ws.dir, ["discord"]);
    await press(asked, "Allow once");
    await discord.waitFor(() => discord.messages(DM).includes("result: hi"), 15_000);
    expect(fake.requests).toHaveLength(2);
  });
});
