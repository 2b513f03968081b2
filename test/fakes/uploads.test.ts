/**
 * The fakes refuse uploads as the real services do, driven by the real clients (telegraf,
 * @discordjs/rest), not picklebot's adapters (which refuse such files before sending).
 */
import { DiscordAPIError, REST, Routes } from "discord.js";
import { Telegraf, TelegramError } from "telegraf";
import { afterEach, describe, expect, it } from "vitest";
import { type FakeDiscord, startFakeDiscord } from "./discord.js";
import { type FakeTelegram, startFakeTelegram } from "./telegram.js";

/** The error `call` rejects with. */
async function rejection(call: Promise<unknown>): Promise<unknown> {
  return call.then(
    () => null,
    (thrown: unknown) => thrown,
  );
}

describe("fake Telegram uploads", () => {
  let fake: FakeTelegram;
  afterEach(() => fake.close());

  async function telegram() {
    fake = await startFakeTelegram();
    fake.openChat(42);
    return new Telegraf(fake.token, { telegram: { apiRoot: fake.apiRoot } }).telegram;
  }

  it("takes a document and a photo, keeping name, size and caption", async () => {
    const api = await telegram();
    await api.sendDocument(
      42,
      { source: Buffer.from("%PDF"), filename: "a.pdf" },
      { caption: "A" },
    );
    await api.sendPhoto(42, { source: Buffer.from("PNG!"), filename: "b.png" });
    expect(
      fake.filesOf(42).map((file) => [file.method, file.filename, file.size, file.caption]),
    ).toEqual([
      ["sendDocument", "a.pdf", 4, "A"],
      ["sendPhoto", "b.png", 4, undefined],
    ]);
  });

  it('refuses an empty file with 400 "file must be non-empty"', async () => {
    const api = await telegram();
    const error = await rejection(
      api.sendDocument(42, { source: Buffer.alloc(0), filename: "e.txt" }),
    );
    expect(error).toBeInstanceOf(TelegramError);
    expect([(error as TelegramError).code, (error as TelegramError).description]).toEqual([
      400,
      "Bad Request: file must be non-empty",
    ]);
  });

  it("refuses a photo over 10 MB and a document over 50 MB with 413", async () => {
    const api = await telegram();
    const photo = await rejection(
      api.sendPhoto(42, { source: Buffer.alloc(10_000_001), filename: "p.png" }),
    );
    const document = await rejection(
      api.sendDocument(42, { source: Buffer.alloc(50_000_001), filename: "d.bin" }),
    );
    for (const error of [photo, document]) {
      expect([(error as TelegramError).code, (error as TelegramError).description]).toEqual([
        413,
        "Request Entity Too Large",
      ]);
    }
    expect(fake.filesOf(42)).toEqual([]);
  });
});

describe("fake Discord uploads", () => {
  let fake: FakeDiscord;
  afterEach(() => fake.close());

  it('refuses more than 25 MiB with 413, code 40005 "Request entity too large"', async () => {
    fake = await startFakeDiscord();
    const rest = new REST({ api: fake.restRoot, retries: 0 }).setToken(fake.token);
    const channel = fake.guildChannelId;
    const small = { name: "a.txt", data: Buffer.from("hello") };
    await rest.post(Routes.channelMessages(channel), { body: { content: "A" }, files: [small] });
    const huge = { name: "big.bin", data: Buffer.alloc(25 * 1024 * 1024 + 1) };
    const error = await rejection(
      rest.post(Routes.channelMessages(channel), { body: {}, files: [huge] }),
    );
    expect(error).toBeInstanceOf(DiscordAPIError);
    const refused = error as DiscordAPIError;
    expect([refused.status, refused.code, refused.message]).toEqual([
      413,
      40005,
      "Request entity too large",
    ]);
    expect(fake.filesOf(channel).map((file) => [file.filename, file.size, file.content])).toEqual([
      ["a.txt", 5, "A"],
    ]);
  });
});
