import { Telegraf, TelegramError } from "telegraf";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type FakeTelegram, startFakeTelegram } from "./telegram.js";

describe("fake Telegram Bot API with the real telegraf client", () => {
  let fake: FakeTelegram;
  let bot: Telegraf;
  let polling: Promise<void> | undefined;

  beforeEach(async () => {
    fake = await startFakeTelegram();
    bot = new Telegraf(fake.token, { telegram: { apiRoot: fake.apiRoot } });
    polling = undefined;
  });

  afterEach(async () => {
    if (polling) {
      bot.stop("test over");
      await polling.catch(() => undefined);
    }
    await fake.close();
  });

  function launch(): Promise<void> {
    polling = bot.launch();
    return fake.waitForCall("getUpdates").then(() => undefined);
  }

  it("delivers a user's text to a polling bot and records its reply", async () => {
    bot.on("text", (ctx) => ctx.reply(`echo: ${ctx.message.text}`));
    await launch();

    fake.sendUserMessage({ chatId: 42, userId: 42, text: "hello" });
    await fake.waitForCall("sendMessage");

    expect(fake.messages(42)).toEqual(["echo: hello"]);
    expect(fake.sent.map((call) => call.method).slice(0, 3)).toEqual([
      "getMe",
      "deleteWebhook",
      "getUpdates",
    ]);
  });

  it("serves getFile and the file URL, and refuses a file over 20 MB as the Bot API does", async () => {
    const small = fake.sendUserFile({
      chatId: 42,
      userId: 42,
      kind: "document",
      bytes: Buffer.from("hello"),
      name: "a.txt",
    });
    const big = fake.sendUserFile({
      chatId: 42,
      userId: 42,
      kind: "document",
      bytes: Buffer.from("stand-in"),
      size: 25 * 1024 * 1024,
      name: "big.pdf",
    });
    const idOf = (update: typeof small) =>
      (update.message as unknown as { document: { file_id: string } }).document.file_id;
    const link = await bot.telegram.getFileLink(idOf(small));
    expect(await (await fetch(link)).text()).toBe("hello");
    expect(fake.downloads).toEqual([idOf(small)]);
    const refused = await bot.telegram.getFile(idOf(big)).catch((thrown: unknown) => thrown);
    expect(refused).toBeInstanceOf(TelegramError);
    expect((refused as TelegramError).response).toMatchObject({
      ok: false,
      error_code: 400,
      description: "Bad Request: file is too big",
    });
  });

  it("confirms handled updates through the offset, so none is handed out twice", async () => {
    bot.on("text", (ctx) => ctx.reply(`got ${ctx.message.text}`));
    await launch();

    const first = fake.sendUserMessage({ chatId: 7, userId: 7, text: "one" });
    await fake.waitFor(() => fake.messages(7).length === 1);
    const second = fake.sendUserMessage({ chatId: 7, userId: 7, text: "two" });
    await fake.waitFor(() => fake.messages(7).length === 2);
    bot.stop("test over");
    await polling;
    polling = undefined;

    expect(fake.messages(7)).toEqual(["got one", "got two"]);
    expect(fake.confirmedOffset).toBe(second.update_id + 1);
    expect(fake.updateLog.map((queued) => queued.deliveredAt.length)).toEqual([1, 1]);
    expect(first.update_id).toBeLessThan(second.update_id);
  });

  it("marks commands, mentions and replies to the bot the way telegraf expects", async () => {
    const seen: string[] = [];
    bot.command("new", (ctx) => ctx.reply("fresh session"));
    bot.on("text", (ctx) => {
      const message = ctx.message;
      const mention = message.entities?.some((entity) => entity.type === "mention") ?? false;
      const replyToBot = message.reply_to_message?.from?.id === ctx.botInfo.id;
      seen.push(`${ctx.chat.type} mention=${mention} reply=${replyToBot}`);
    });
    await launch();

    fake.sendUserMessage({ chatId: -100, userId: 5, text: "/new", chatType: "group" });
    await fake.waitFor(() => fake.messages(-100).length === 1);
    fake.sendUserMessage({ chatId: -100, userId: 5, text: "hi", mention: true });
    fake.sendUserMessage({ chatId: -100, userId: 5, text: "and you", replyToBot: true });
    await fake.waitFor(() => seen.length === 2);

    expect(fake.messages(-100)).toEqual(["fresh session"]);
    expect(seen).toEqual(["group mention=true reply=false", "group mention=false reply=true"]);
  });

  it("edits a message in place and rejects an unchanged edit as 'message is not modified'", async () => {
    fake.openChat(9);
    const sent = await bot.telegram.sendMessage(9, "Thinking");
    await bot.telegram.editMessageText(9, sent.message_id, undefined, "Thinking about it");
    const unchanged = bot.telegram.editMessageText(
      9,
      sent.message_id,
      undefined,
      "Thinking about it",
    );

    await expect(unchanged).rejects.toBeInstanceOf(TelegramError);
    await expect(unchanged).rejects.toMatchObject({
      code: 400,
      description: expect.stringContaining("message is not modified"),
    });
    expect(fake.messages(9)).toEqual(["Thinking about it"]);
  });

  it("surfaces an injected 429 with retry_after, then serves the retry", async () => {
    fake.openChat(9);
    fake.failNext("sendMessage", { status: 429, retryAfter: 3 });

    await expect(bot.telegram.sendMessage(9, "hi")).rejects.toMatchObject({
      code: 429,
      parameters: { retry_after: 3 },
    });
    await bot.telegram.sendMessage(9, "hi");
    expect(fake.messages(9)).toEqual(["hi"]);
    expect(fake.callsOf("sendMessage").map((call) => call.status)).toEqual([429, 200]);
  });

  it("injects parse errors and server errors for a given number of calls", async () => {
    fake.openChat(9);
    const parseError = "Bad Request: can't parse entities: Unsupported start tag";
    fake.failNext("sendMessage", { status: 400, description: parseError });
    fake.failNext("sendMessage", { status: 500 }, 2);

    await expect(bot.telegram.sendMessage(9, "a")).rejects.toMatchObject({
      code: 400,
      description: parseError,
    });
    await expect(bot.telegram.sendMessage(9, "b")).rejects.toMatchObject({ code: 500 });
    await expect(bot.telegram.sendMessage(9, "c")).rejects.toMatchObject({ code: 500 });
    await bot.telegram.sendMessage(9, "d");
    expect(fake.messages(9)).toEqual(["d"]);
  });

  it("parses MarkdownV2 like Telegram: unescaped reserved characters are rejected", async () => {
    fake.openChat(9);
    const bad = bot.telegram.sendMessage(9, "Done. *bold*", { parse_mode: "MarkdownV2" });
    await expect(bad).rejects.toMatchObject({
      code: 400,
      description:
        "Bad Request: can't parse entities: Character '.' is reserved and must be escaped with the preceding '\\'",
    });
    const unclosed = bot.telegram.sendMessage(9, "snake_case", { parse_mode: "MarkdownV2" });
    await expect(unclosed).rejects.toMatchObject({
      description: expect.stringContaining("Can't find end of Italic entity"),
    });

    const source = "Done\\. *bold* `a.b` [link](https://x.y/\\))\n```ts\nconst a = 1;\n```";
    const good = await bot.telegram.sendMessage(9, source, { parse_mode: "MarkdownV2" });
    expect(good.text).toBe("Done. bold a.b link\nconst a = 1;\n");
    expect(good.entities).toEqual([
      { type: "bold", offset: 6, length: 4 },
      { type: "code", offset: 11, length: 3 },
      { type: "text_link", offset: 15, length: 4, url: "https://x.y/)" },
      { type: "pre", offset: 20, length: 13, language: "ts" },
    ]);
  });

  it("parses HTML like Telegram: known tags and escapes only, balanced", async () => {
    fake.openChat(9);
    const source = '<b>bold</b> &lt;tag&gt; <a href="https://x.y">link</a>';
    const good = await bot.telegram.sendMessage(9, source, { parse_mode: "HTML" });

    expect(good.text).toBe("bold <tag> link");
    expect(good.entities?.map((entity) => entity.type)).toEqual(["bold", "text_link"]);
    for (const bad of ["<b>x</i>", "<blink>x</blink>", "a < b"]) {
      await expect(bot.telegram.sendMessage(9, bad, { parse_mode: "HTML" })).rejects.toMatchObject({
        description: expect.stringContaining("can't parse entities"),
      });
    }
  });

  it("rejects text longer than 4096 characters after parsing", async () => {
    fake.openChat(9);
    const escaped = "\\.".repeat(4096);
    await bot.telegram.sendMessage(9, escaped, { parse_mode: "MarkdownV2" });

    await expect(bot.telegram.sendMessage(9, "x".repeat(4097))).rejects.toMatchObject({
      description: "Bad Request: message is too long",
    });
    expect(fake.messages(9)).toEqual([".".repeat(4096)]);
  });

  it("counts UTF-16 code units and refuses a lone surrogate as not UTF-8", async () => {
    fake.openChat(9);
    await bot.telegram.sendMessage(9, "😀".repeat(2048));
    await expect(bot.telegram.sendMessage(9, "😀".repeat(2049))).rejects.toMatchObject({
      description: "Bad Request: message is too long",
    });
    const { message_id } = await bot.telegram.sendMessage(9, "ok");
    const loneHalf = "😀".slice(0, 1);
    for (const attempt of [
      () => bot.telegram.sendMessage(9, `cut ${loneHalf}`),
      () => bot.telegram.editMessageText(9, message_id, undefined, `cut ${loneHalf}`),
    ]) {
      await expect(attempt()).rejects.toMatchObject({
        code: 400,
        description: "Bad Request: text must be encoded in UTF-8",
      });
    }
    expect(fake.messages(9)).toEqual(["😀".repeat(2048), "ok"]);
  });

  it("goes offline: a held poll is cut, requests fail until it is back, queued updates wait", async () => {
    const held = bot.telegram.getUpdates(50, 100, 0, undefined);
    await fake.waitFor(() => fake.heldPolls === 1);
    fake.goOffline();
    expect(fake.heldPolls).toBe(0);
    await expect(held).rejects.toThrow(/socket hang up|ECONNRESET/);
    await expect(bot.telegram.getMe()).rejects.toThrow(/socket hang up|ECONNRESET/);
    fake.sendUserMessage({ chatId: 42, userId: 42, text: "sent while offline" });
    fake.goOnline();

    expect(await bot.telegram.getUpdates(0, 100, 0, undefined)).toMatchObject([
      { message: { text: "sent while offline" } },
    ]);
  });

  it("answers a wrong token with the Bot API's 401 body", async () => {
    const response = await fetch(`${fake.apiRoot}/bot1:wrong/getMe`);
    expect(response.status).toBe(401);
    expect(await response.json()).toEqual({
      ok: false,
      error_code: 401,
      description: "Unauthorized",
    });
  });

  it("refuses a wrong token with 401 Unauthorized", async () => {
    const stranger = new Telegraf("1:wrong", { telegram: { apiRoot: fake.apiRoot } });

    await expect(stranger.launch()).rejects.toMatchObject({
      code: 401,
      description: "Unauthorized",
    });
  });

  it("ends the first poller with 409 Conflict when a second bot polls the same token", async () => {
    await launch();
    const first = polling;
    const second = new Telegraf(fake.token, { telegram: { apiRoot: fake.apiRoot } });
    const secondPolling = second.launch();

    await expect(first).rejects.toMatchObject({ code: 409 });
    polling = undefined;
    second.stop("test over");
    await secondPolling;
  });

  it("sets the command menu, and refuses what the Bot API refuses", async () => {
    const commands = [{ command: "new", description: "  Start over " }];
    await expect(bot.telegram.setMyCommands(commands)).resolves.toBe(true);
    expect(fake.commands).toEqual([{ command: "new", description: "Start over" }]);
    expect(await bot.telegram.getMyCommands()).toEqual(fake.commands);

    const refusal = (list: Array<{ command: string; description: string }>) =>
      bot.telegram.setMyCommands(list).then(
        () => "accepted",
        (error: unknown) =>
          error instanceof TelegramError ? `${error.code} ${error.description}` : String(error),
      );
    const many = Array.from({ length: 101 }, (_, i) => ({ command: `c${i}`, description: "x" }));
    expect(await refusal([{ command: "New", description: "x" }])).toBe(
      "400 Bad Request: BOT_COMMAND_INVALID",
    );
    expect(await refusal([{ command: "/new", description: "x" }])).toBe(
      "400 Bad Request: BOT_COMMAND_INVALID",
    );
    expect(await refusal([{ command: "a".repeat(33), description: "x" }])).toBe(
      "400 Bad Request: command length must not exceed 32",
    );
    expect(await refusal([{ command: "", description: "x" }])).toBe(
      "400 Bad Request: command must be non-empty",
    );
    expect(await refusal([{ command: "new", description: " " }])).toBe(
      "400 Bad Request: command description must be non-empty",
    );
    expect(await refusal([{ command: "new", description: "x".repeat(257) }])).toBe(
      "400 Bad Request: command description length must not exceed 256",
    );
    expect(await refusal(many)).toBe("400 Bad Request: BOT_COMMANDS_TOO_MUCH");
    expect(await refusal(many.slice(0, 100))).toBe("accepted");
    expect(await refusal([{ command: "a".repeat(32), description: "x".repeat(256) }])).toBe(
      "accepted",
    );
  });
});
