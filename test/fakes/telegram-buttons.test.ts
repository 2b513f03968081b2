/**
 * The fake Telegram's inline keyboards and callback queries, with the real telegraf
 * client: what it keeps, what it refuses, and how a press is delivered and answered.
 */
import { Telegraf } from "telegraf";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type FakeTelegram, startFakeTelegram } from "./telegram.js";
import { BUTTON_DATA_INVALID, QUERY_TOO_OLD } from "./telegram-buttons.js";

const CHAT = 9;
const keyboard = (...data: string[]) => ({
  inline_keyboard: [data.map((entry) => ({ text: `Button ${entry}`, callback_data: entry }))],
});

describe("fake Telegram buttons with the real telegraf client", () => {
  let fake: FakeTelegram;
  let bot: Telegraf;
  let clock: number;

  beforeEach(async () => {
    clock = 1_000_000;
    fake = await startFakeTelegram({ now: () => clock });
    bot = new Telegraf(fake.token, { telegram: { apiRoot: fake.apiRoot } });
    fake.openChat(CHAT);
  });

  afterEach(async () => {
    await fake.close();
  });

  /** A bot message with buttons "yes" and "no", and a press of "yes" taken by a poll. */
  async function pressedYes() {
    const sent = await bot.telegram.sendMessage(CHAT, "Sure?", {
      reply_markup: keyboard("yes", "no"),
    });
    fake.pressButton({ chatId: CHAT, messageId: sent.message_id, data: "yes", userId: 5 });
    const updates = await bot.telegram.getUpdates(0, 100, 0, ["callback_query"]);
    const update = updates.at(-1);
    if (!update || !("callback_query" in update)) throw new Error("no callback query");
    return { sent, query: update.callback_query };
  }

  it("keeps a message's keyboard; an edit with an empty one, or none, removes it", async () => {
    const sent = await bot.telegram.sendMessage(CHAT, "Sure?", { reply_markup: keyboard("yes") });
    expect(fake.buttonsOf(CHAT, sent.message_id)).toEqual([
      [{ text: "Button yes", callback_data: "yes" }],
    ]);

    // The same text without the buttons is a change, not "message is not modified".
    await bot.telegram.editMessageText(CHAT, sent.message_id, undefined, "Sure?", {
      reply_markup: { inline_keyboard: [] },
    });
    expect(fake.buttonsOf(CHAT, sent.message_id)).toEqual([]);

    await bot.telegram.editMessageText(CHAT, sent.message_id, undefined, "Again?", {
      reply_markup: keyboard("again"),
    });
    await bot.telegram.editMessageText(CHAT, sent.message_id, undefined, "Done");
    expect(fake.buttonsOf(CHAT, sent.message_id)).toEqual([]);
  });

  it("refuses callback_data that is empty or longer than 64 bytes with BUTTON_DATA_INVALID", async () => {
    const refused = { code: 400, description: BUTTON_DATA_INVALID };
    const sixtySixBytes = "é".repeat(33);
    await expect(
      bot.telegram.sendMessage(CHAT, "x", { reply_markup: keyboard(sixtySixBytes) }),
    ).rejects.toMatchObject(refused);
    await expect(
      bot.telegram.sendMessage(CHAT, "x", { reply_markup: keyboard("") }),
    ).rejects.toMatchObject(refused);
    const sent = await bot.telegram.sendMessage(CHAT, "x", {
      reply_markup: keyboard("é".repeat(32)),
    });
    await expect(
      bot.telegram.editMessageText(CHAT, sent.message_id, undefined, "y", {
        reply_markup: keyboard("a".repeat(65)),
      }),
    ).rejects.toMatchObject(refused);
    expect(fake.messages(CHAT)).toEqual(["x"]);
  });

  it("delivers a press as a callback_query with its id, the user, the message and the data", async () => {
    const { sent, query } = await pressedYes();
    expect(query).toMatchObject({
      id: expect.any(String),
      from: { id: 5, is_bot: false },
      message: { message_id: sent.message_id, chat: { id: CHAT }, text: "Sure?" },
      data: "yes",
    });
    expect(() =>
      fake.pressButton({ chatId: CHAT, messageId: sent.message_id, data: "maybe", userId: 5 }),
    ).toThrow(/shows no button "maybe"/);
  });

  it("answers a callback query once; again, unknown or after 15 s is 'query is too old'", async () => {
    const refused = { code: 400, description: QUERY_TOO_OLD };
    const { query } = await pressedYes();
    await bot.telegram.answerCbQuery(query.id, "Allowed");
    await expect(bot.telegram.answerCbQuery(query.id)).rejects.toMatchObject(refused);
    await expect(bot.telegram.answerCbQuery("nope")).rejects.toMatchObject(refused);

    const late = await pressedYes();
    clock += 15_000;
    await bot.telegram.answerCbQuery(late.query.id);
    const later = await pressedYes();
    clock += 15_001;
    await expect(bot.telegram.answerCbQuery(later.query.id)).rejects.toMatchObject(refused);
    expect(fake.callbackAnswers.map(({ text, status }) => [text, status])).toEqual([
      ["Allowed", 200],
      [undefined, 400],
      [undefined, 400],
      [undefined, 200],
      [undefined, 400],
    ]);
  });

  it("hands out a callback query only to a poll whose allowed_updates include it", async () => {
    const sent = await bot.telegram.sendMessage(CHAT, "Sure?", { reply_markup: keyboard("yes") });
    fake.pressButton({ chatId: CHAT, messageId: sent.message_id, data: "yes", userId: 5 });
    expect(await bot.telegram.getUpdates(0, 100, 0, ["message"])).toEqual([]);
    const updates = await bot.telegram.getUpdates(0, 100, 0, ["message", "callback_query"]);
    expect(updates.map((update) => "callback_query" in update)).toEqual([true]);
  });
});
