/**
 * Photos, PDFs, voice notes and the kinds picklebot cannot read, sent from Telegram (and
 * an image and a sticker from Discord), end to end: `picklebot server` as a child process against the fake Bot API (getFile and the
 * file URL), the fake Anthropic API (which refuses the image and document blocks the real
 * one refuses) and the fake speech-to-text server.
 */
import sharp from "sharp";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { costOf, priceOf } from "../../src/agents/prices.js";
import { CAN_READ } from "../../src/chat/inbox.js";
import type { TokenUsage } from "../../src/ports/index.js";
import { type FakeAnthropic, lastUserText, startFakeAnthropic } from "../fakes/anthropic.js";
import { startFakeDiscord } from "../fakes/discord.js";
import { type FakeTelegram, startFakeTelegram } from "../fakes/telegram.js";
import { type FakeTranscription, startFakeTranscription } from "../fakes/transcription.js";
import { busWorkspace, discordYaml, startBusServer, telegramYaml } from "../helpers/bus.js";
import { runCli } from "../helpers/cli.js";
import { amrAudio, pdf, photo, voiceNote } from "../helpers/media.js";
import { killAllServers } from "../helpers/server.js";
import type { TempWorkspace } from "../helpers/workspace.js";

const OWNER = 4242;

let model: FakeAnthropic;
let telegram: FakeTelegram;
let speech: FakeTranscription;
let ws: TempWorkspace | null = null;

beforeEach(async () => {
  model = await startFakeAnthropic({
    defaultReply: (request) => ({ text: `echo: ${lastUserText(request)}` }),
  });
  telegram = await startFakeTelegram();
  speech = await startFakeTranscription();
});

afterEach(async () => {
  await killAllServers();
  await Promise.all([telegram.close(), model.close(), speech.close()]);
  ws?.remove();
  ws = null;
});

/** Starts a server on a workspace with Telegram, and `extra` picklebot.yaml. */
async function start(extra = ""): Promise<void> {
  ws = busWorkspace(model.url, telegramYaml(telegram, { allowedUserIds: [OWNER] }) + extra);
  await startBusServer(ws.dir, ["telegram"]);
}

function speechYaml(key = "stt-test-key", extra = ""): string {
  return `speech_to_text:\n  base_url: ${speech.url}\n  api_key: ${key}\n  model: whisper-1\n${extra}`;
}

/** Waits for the bot's last message in the owner's chat to contain `text`; returns it. */
async function replyContaining(text: string): Promise<string> {
  await telegram.waitFor(() => telegram.messages(OWNER).some((m) => m.includes(text)), 20_000);
  return telegram.messages(OWNER).find((m) => m.includes(text)) ?? "";
}

/** The content blocks of the last user message of the model's last request. */
function lastUserBlocks(): Array<Record<string, unknown>> {
  const request = model.requests.at(-1);
  const message = request?.body.messages.filter((m) => m.role === "user").at(-1);
  if (!message || typeof message.content === "string") return [];
  return message.content as Array<Record<string, unknown>>;
}

/** The base64 payload of an image or document block. */
function dataOf(block: Record<string, unknown> | undefined): string {
  return String((block?.source as { data?: string } | undefined)?.data);
}

describe("files sent from Telegram", () => {
  it("a photo with a caption reaches the model as an image block, at most 1568 px, and the caption", async () => {
    await start();
    const bytes = await photo(3000, 2000);
    telegram.sendUserFile({
      chatId: OWNER,
      userId: OWNER,
      kind: "photo",
      bytes,
      caption: "what is in this picture?",
    });
    expect(await replyContaining("echo: what is in this picture?")).toBe(
      "echo: what is in this picture?",
    );
    const [image, caption] = lastUserBlocks();
    expect(image).toMatchObject({
      type: "image",
      source: { type: "base64", media_type: "image/jpeg" },
    });
    const sent = Buffer.from(dataOf(image), "base64");
    const meta = await sharp(sent).metadata();
    expect([meta.width, meta.height]).toEqual([1568, 1045]);
    expect(caption).toMatchObject({ type: "text", text: "what is in this picture?" });
    // The transcript shows what was sent.
    const [session] = JSON.parse(
      (await runCli(["sessions", "list", "--json", "--workspace", ws?.dir ?? ""])).stdout,
    ) as Array<{ id: string }>;
    const shown = await runCli([
      "sessions",
      "show",
      session?.id ?? "",
      "--workspace",
      ws?.dir ?? "",
    ]);
    // Name, media type, size and pixels.
    expect(shown.stdout).toMatch(/\[image photo-\d+\.jpg, image\/jpeg, \d+\.\d kB, 1568×1045 px\]/);
    // Downloaded once, as a step of the job: a second run of the same file is not downloaded.
    expect(telegram.downloads).toHaveLength(1);
  });

  it("a PDF reaches the model as a document block", async () => {
    await start();
    const bytes = pdf(3);
    telegram.sendUserFile({
      chatId: OWNER,
      userId: OWNER,
      kind: "document",
      bytes,
      name: "report.pdf",
      mimeType: "application/pdf",
      caption: "summarise this",
    });
    await replyContaining("echo: summarise this");
    const [document] = lastUserBlocks();
    expect(document).toMatchObject({
      type: "document",
      title: "report.pdf",
      source: { type: "base64", media_type: "application/pdf" },
    });
    expect(Buffer.from(dataOf(document), "base64").equals(bytes)).toBe(true);
  });

  it("a voice note reaches the model as its transcript, marked as one", async () => {
    await start(speechYaml());
    telegram.sendUserFile({ chatId: OWNER, userId: OWNER, kind: "voice", bytes: voiceNote() });
    const reply = await replyContaining("pick up some pickles");
    expect(reply).toBe("echo: [Transcription of a voice note]\npick up some pickles");
    expect(speech.calls).toMatchObject([{ model: "whisper-1", status: 200 }]);
    telegram.sendUserMessage({ chatId: OWNER, userId: OWNER, text: "/transcript" });
    await telegram.waitFor(() => telegram.messages(OWNER).length === 2, 20_000);
    expect(telegram.messages(OWNER)[1]).toBe(
      "[Transcription of a voice note]\npick up some pickles",
    );
    // Transcribed once: the answer and /transcript read the stored transcript.
    expect(speech.calls).toHaveLength(1);
  });

  it("a location and a sticker get the 'I can read …' answer, and no model call", async () => {
    await start();
    telegram.sendUserFile({ chatId: OWNER, userId: OWNER, kind: "location" });
    await replyContaining("I cannot read a location.");
    telegram.sendUserFile({ chatId: OWNER, userId: OWNER, kind: "sticker" });
    await replyContaining("I cannot read a sticker.");
    expect(telegram.messages(OWNER)).toEqual([
      `${CAN_READ} I cannot read a location.`,
      `${CAN_READ} I cannot read a sticker.`,
    ]);
    expect(model.requests).toHaveLength(0);
  });
});

describe("files picklebot cannot read get a clear answer, and the caption its reply", () => {
  it("a file over Telegram's 20 MB download limit", async () => {
    await start();
    const bytes = Buffer.from("%PDF-1.4 small stand-in\n%%EOF\n");
    telegram.sendUserFile({
      chatId: OWNER,
      userId: OWNER,
      kind: "document",
      bytes,
      size: 25 * 1024 * 1024,
      name: "big.pdf",
      mimeType: "application/pdf",
      caption: "read this",
    });
    const reply = await replyContaining("read this");
    expect(reply).toMatch(/echo: .*read this$/s);
    expect(reply).toContain(
      "I could not read big.pdf: the download failed: telegram: 400 Bad Request: file is too big (Telegram lets bots download files up to 20 MB; send it as a link, or a smaller file)",
    );
  });

  it("a damaged image", async () => {
    await start();
    const bytes = Buffer.concat([(await photo(100, 100)).subarray(0, 10), Buffer.alloc(500)]);
    telegram.sendUserFile({ chatId: OWNER, userId: OWNER, kind: "photo", bytes, caption: "look" });
    const reply = await replyContaining("echo:");
    expect(reply).toMatch(
      /^\(I could not read photo-\d+\.jpg: it is not an image I can open \(it looks damaged\)\)/,
    );
    expect(reply).toMatch(/echo: .*look$/s);
  });

  it("an encrypted PDF and a damaged one", async () => {
    await start();
    telegram.sendUserFile({
      chatId: OWNER,
      userId: OWNER,
      kind: "document",
      bytes: pdf(1, { encrypted: true }),
      name: "secret.pdf",
      mimeType: "application/pdf",
      caption: "one",
    });
    expect(await replyContaining("echo:")).toContain(
      "I could not read secret.pdf: it is encrypted (password-protected)",
    );
    telegram.sendUserFile({
      chatId: OWNER,
      userId: OWNER,
      kind: "document",
      bytes: pdf(2).subarray(0, 60),
      name: "cut.pdf",
      mimeType: "application/pdf",
      caption: "two",
    });
    expect(await replyContaining("cut.pdf")).toContain(
      "I could not read cut.pdf: it is damaged (cut short)",
    );
  });

  it("audio in a codec the speech service cannot decode", async () => {
    await start(speechYaml());
    telegram.sendUserFile({
      chatId: OWNER,
      userId: OWNER,
      kind: "audio",
      bytes: amrAudio(),
      name: "memo.amr",
      mimeType: "audio/amr",
      caption: "transcribe",
    });
    const reply = await replyContaining("echo:");
    expect(reply).toContain(
      "I could not read memo.amr: I could not transcribe it: the speech-to-text service",
    );
    expect(reply).toContain("Invalid file format");
    expect(reply).toMatch(/echo: .*transcribe$/s);
  });

  it("a speech service that refuses its key, one that is down, and none configured", async () => {
    await start(`${speechYaml("wrong-key")}workers:\n  max_attempts: 1\n`);
    telegram.sendUserFile({
      chatId: OWNER,
      userId: OWNER,
      kind: "voice",
      bytes: voiceNote(),
      caption: "first",
    });
    expect(await replyContaining("first")).toContain(
      "the speech-to-text service refused its key (401); check speech_to_text.api_key in picklebot.yaml",
    );
    speech.down = true;
    telegram.sendUserFile({
      chatId: OWNER,
      userId: OWNER,
      kind: "voice",
      bytes: Buffer.concat([voiceNote(), Buffer.from("2")]),
      caption: "second",
    });
    expect(await replyContaining("second")).toContain("did not answer");
  });

  it("a priced transcription is counted by picklebot usage, once", async () => {
    await start(speechYaml("stt-test-key", "  price_per_minute: 0.6\n"));
    // The fake Telegram says a voice note lasts 2 s; the fake service does not say.
    telegram.sendUserFile({ chatId: OWNER, userId: OWNER, kind: "voice", bytes: voiceNote() });
    await replyContaining("pick up some pickles");
    telegram.sendUserMessage({ chatId: OWNER, userId: OWNER, text: "and now?" });
    await replyContaining("and now?");
    const usage = JSON.parse(
      (await runCli(["usage", "--json", "--workspace", ws?.dir ?? ""])).stdout,
    ) as { total: TokenUsage & { calls: number; costUsd: number }; unpriced: string[] };
    const model = priceOf("claude-sonnet-4-6");
    const tokens = model ? costOf(usage.total, model) : Number.NaN;
    // Two model calls and one transcription: 2 s at $0.60 a minute.
    expect(usage.total.calls).toBe(3);
    expect(usage.total.costUsd).toBeCloseTo(tokens + 0.02, 8);
    expect(usage.unpriced).toEqual([]);
  });

  it("a voice note without a speech service says how to configure one", async () => {
    await start();
    telegram.sendUserFile({ chatId: OWNER, userId: OWNER, kind: "voice", bytes: voiceNote() });
    expect(await replyContaining("speech_to_text")).toContain(
      "I cannot listen to voice notes yet: my owner can set speech_to_text (base_url, api_key, model) in picklebot.yaml",
    );
  });
});

describe("files sent from Discord", () => {
  const OWNER_ID = "400000000000000001";
  const DM = "300000000000000001";

  it("an image attachment reaches the model as an image block with the message's text; a sticker and a poll get the 'I can read …' answer", async () => {
    const discord = await startFakeDiscord();
    try {
      ws = busWorkspace(model.url, discordYaml(discord, { allowedUserIds: [OWNER_ID] }));
      await startBusServer(ws.dir, ["discord"]);
      const bytes = await photo(800, 600);
      const attachments = [{ name: "cat.png", contentType: "image/jpeg", bytes }];
      await discord.sendUserMessage({
        channelId: DM,
        userId: OWNER_ID,
        content: "what is this?",
        attachments,
      });
      await discord.waitFor(
        () => discord.messages(DM).join("").includes("echo: what is this?"),
        20_000,
      );
      const [image, text] = lastUserBlocks();
      expect(image).toMatchObject({ type: "image", source: { media_type: "image/jpeg" } });
      expect(Buffer.from(dataOf(image), "base64").equals(bytes)).toBe(true);
      expect(text).toMatchObject({ type: "text", text: "what is this?" });
      expect(discord.downloads).toHaveLength(1);

      await discord.sendUserMessage({
        channelId: DM,
        userId: OWNER_ID,
        content: "",
        sticker: true,
      });
      await discord.waitFor(
        () => discord.messages(DM).some((m) => m.includes("I cannot read a sticker.")),
        20_000,
      );

      await discord.sendUserMessage({ channelId: DM, userId: OWNER_ID, content: "", poll: true });
      await discord.waitFor(
        () => discord.messages(DM).some((m) => m.includes("I cannot read a poll.")),
        20_000,
      );
    } finally {
      await killAllServers();
      await discord.close();
    }
  });
});
