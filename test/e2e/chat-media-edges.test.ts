/**
 * Files sent from Telegram the way people and attackers send them, end to end:
 * `picklebot server` as a child process against the fake Bot API, the fake Anthropic API
 * (which refuses the media the real one refuses) and the fake speech-to-text server. A
 * photo without a caption, an album, a photo sent while the server was down, a zip
 * renamed .jpg, file names that look like paths or are huge, PDFs whose pages together
 * pass the API's limit, and a speech service that is down or refuses its key.
 */
import { readdirSync } from "node:fs";
import { join } from "node:path";
import sharp from "sharp";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { contextWindowOf, toolResultMaxChars } from "../../src/agents/context-budget.js";
import { CAN_READ } from "../../src/chat/inbox.js";
import {
  type FakeAnthropic,
  lastUserText,
  type RecordedRequest,
  startFakeAnthropic,
} from "../fakes/anthropic.js";
import {
  type DiscordUserMessageInput,
  type FakeDiscord,
  startFakeDiscord,
} from "../fakes/discord.js";
import { type FakeTelegram, startFakeTelegram } from "../fakes/telegram.js";
import { type FakeTranscription, startFakeTranscription } from "../fakes/transcription.js";
import { busWorkspace, discordYaml, startBusServer, telegramYaml } from "../helpers/bus.js";
import { compressedPdf, pdf, photo, voiceNote } from "../helpers/media.js";
import { killAllServers, type ServerProcess } from "../helpers/server.js";
import type { TempWorkspace } from "../helpers/workspace.js";

const OWNER = 4242;
const DISCORD_OWNER = "400000000000000001";
const DISCORD_DM = "300000000000000001";

let model: FakeAnthropic;
let telegram: FakeTelegram;
let speech: FakeTranscription;
let ws: TempWorkspace | null = null;

/** Blocks of `type` in every message of a request. */
function blocksOf(request: RecordedRequest | undefined, type: string): Record<string, unknown>[] {
  return (request?.body.messages ?? [])
    .flatMap((message) => (typeof message.content === "string" ? [] : message.content))
    .filter((block) => (block as { type?: string }).type === type) as Record<string, unknown>[];
}

beforeEach(async () => {
  model = await startFakeAnthropic({
    defaultReply: (request) => ({
      text: `saw ${blocksOf(request, "image").length} images: ${lastUserText(request)}`,
    }),
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

/** A workspace with Telegram (and `extra` picklebot.yaml); the server is not started. */
function workspace(extra = ""): TempWorkspace {
  ws = busWorkspace(model.url, telegramYaml(telegram, { allowedUserIds: [OWNER] }) + extra);
  return ws;
}

/** Starts a server on a new workspace with Telegram, and `extra` picklebot.yaml. */
function start(extra = ""): Promise<ServerProcess> {
  return startBusServer(workspace(extra).dir, ["telegram"]);
}

/** Runs `body` with a fake Discord and a server on a new workspace with Discord only. */
async function withDiscordServer(body: (discord: FakeDiscord) => Promise<void>): Promise<void> {
  const discord = await startFakeDiscord();
  try {
    ws = busWorkspace(model.url, discordYaml(discord, { allowedUserIds: [DISCORD_OWNER] }));
    await startBusServer(ws.dir, ["discord"]);
    await body(discord);
  } finally {
    await killAllServers();
    await discord.close();
  }
}

/**
 * The owner sends `content` with `attachments` in the Discord DM; waits until the bot's
 * messages there contain `content` (the fake model's answer repeats it).
 */
async function sendOnDiscordAndWait(
  discord: FakeDiscord,
  content: string,
  attachments: DiscordUserMessageInput["attachments"],
): Promise<void> {
  await discord.sendUserMessage({
    channelId: DISCORD_DM,
    userId: DISCORD_OWNER,
    content,
    attachments,
  });
  await discord.waitFor(() => discord.messages(DISCORD_DM).join("").includes(content), 30_000);
}

/** Waits for a bot message in the owner's chat that contains `text`; returns it. */
async function replyContaining(text: string): Promise<string> {
  await telegram.waitFor(() => telegram.messages(OWNER).some((m) => m.includes(text)), 20_000);
  return telegram.messages(OWNER).find((m) => m.includes(text)) ?? "";
}

/** The log line that tells why a file sent in a chat could not be read. */
function unreadableLine(server: ServerProcess, file: string) {
  return server.waitForLog(
    (line) => line.msg === "could not read a file sent in a chat" && line.file === file,
  );
}

describe("photos as people send them", () => {
  it("a photo without a caption reaches the model as an image block alone, and is answered", async () => {
    await start();
    telegram.sendUserFile({
      chatId: OWNER,
      userId: OWNER,
      kind: "photo",
      bytes: await photo(64, 48),
    });
    expect(await replyContaining("saw 1 images")).toBe("saw 1 images:");
    const user = model.requests.at(-1)?.body.messages.at(-1);
    const blocks = typeof user?.content === "string" ? [] : (user?.content ?? []);
    // The image, and no caption: only the clock note the server adds to every turn.
    expect(blocks.map((block) => (block as { type: string }).type)).toEqual(["image", "text"]);
    expect(String((blocks[1] as { text?: string }).text)).toMatch(/^\(current time: /);
  });

  it("an album: each of its photos reaches the model, the caption with the first; none is lost", async () => {
    await start();
    const sizes = [
      [64, 48],
      [80, 60],
      [96, 72],
    ] as const;
    for (const [index, [width, height]] of sizes.entries()) {
      telegram.sendUserFile({
        chatId: OWNER,
        userId: OWNER,
        kind: "photo",
        bytes: await photo(width, height),
        mediaGroupId: "album-1",
        ...(index === 0 ? { caption: "which one is best?" } : {}),
      });
    }
    await telegram.waitFor(
      () => model.requests.some((request) => blocksOf(request, "image").length === 3),
      20_000,
    );
    const last = model.requests.find((request) => blocksOf(request, "image").length === 3);
    const widths = blocksOf(last, "image").map((block) => {
      const data = String((block.source as { data: string }).data);
      return Buffer.from(data, "base64").length;
    });
    expect(new Set(widths).size).toBe(3);
    expect(blocksOf(last, "text").map((block) => block.text)).toContain("which one is best?");
    expect(telegram.downloads).toHaveLength(3);
  });

  it("a photo sent while the server was down is read, and answered, when it starts", async () => {
    const dir = workspace().dir;
    telegram.sendUserFile({
      chatId: OWNER,
      userId: OWNER,
      kind: "photo",
      bytes: await photo(64, 48),
      caption: "sent while you slept",
    });
    await startBusServer(dir, ["telegram"]);
    expect(await replyContaining("sent while you slept")).toBe(
      "saw 1 images: sent while you slept",
    );
    expect(telegram.downloads).toHaveLength(1);
  });

  it("a noisy PNG with transparency reaches the model under the API's 5 MB, and the chat goes on", async () => {
    await start();
    const side = 2000;
    const raw = Buffer.alloc(side * side * 4);
    for (let i = 0; i < raw.length; i++) raw[i] = (i * 2654435761) >>> 24;
    const bytes = await sharp(raw, { raw: { width: side, height: side, channels: 4 } })
      .png()
      .toBuffer();
    telegram.sendUserFile({
      chatId: OWNER,
      userId: OWNER,
      kind: "document",
      bytes,
      name: "noise.png",
      mimeType: "image/png",
      caption: "what is this?",
    });
    expect(await replyContaining("what is this?")).toBe("saw 1 images: what is this?");
    const [image] = blocksOf(model.requests.at(-1), "image");
    const data = String((image?.source as { data?: string } | undefined)?.data);
    expect(Buffer.from(data, "base64").length).toBeLessThan(5 * 1024 * 1024);
    telegram.sendUserMessage({ chatId: OWNER, userId: OWNER, text: "and now?" });
    expect(await replyContaining("and now?")).toBe("saw 1 images: and now?");
    expect(model.refused).toEqual([]);
  });

  it("a zip renamed .jpg gets a reply saying it is not an image, logged with the reason; the caption is answered", async () => {
    const server = await start();
    const zip = Buffer.concat([Buffer.from("PK\u0003\u0004"), Buffer.alloc(300, 7)]);
    telegram.sendUserFile({
      chatId: OWNER,
      userId: OWNER,
      kind: "document",
      bytes: zip,
      name: "cat.jpg",
      mimeType: "image/jpeg",
      caption: "is this a cat?",
    });
    const reply = await replyContaining("is this a cat?");
    expect(reply).toMatch(/^\(I could not read cat\.jpg: it is not an image I can open/);
    expect(reply).toMatch(/saw 0 images: .*is this a cat\?$/s);
    expect((await unreadableLine(server, "cat.jpg")).reason).toMatch(/not an image/);
  });
});

describe("a download as a step of the job", () => {
  it("a photo whose download hangs holds up nothing: another chat and /status are answered meanwhile", async () => {
    const OTHER = 5151;
    ws = busWorkspace(model.url, telegramYaml(telegram, { allowedUserIds: [OWNER, OTHER] }));
    await startBusServer(ws.dir, ["telegram"]);
    telegram.holdDownloads = true;
    telegram.sendUserFile({
      chatId: OWNER,
      userId: OWNER,
      kind: "photo",
      bytes: await photo(64, 48),
      caption: "slow one",
    });
    await telegram.waitFor(() => telegram.heldDownloadCount === 1, 20_000);
    telegram.sendUserMessage({ chatId: OTHER, userId: OTHER, text: "hello from elsewhere" });
    await telegram.waitFor(
      () => telegram.messages(OTHER).some((m) => m.includes("hello from elsewhere")),
      20_000,
    );
    telegram.sendUserMessage({ chatId: OWNER, userId: OWNER, text: "/status" });
    await telegram.waitFor(() => telegram.messages(OWNER).length === 1, 20_000);
    expect(telegram.heldDownloadCount).toBe(1);
    telegram.releaseDownloads();
    expect(await replyContaining("slow one")).toBe("saw 1 images: slow one");
  });

  it("a download Telegram fails with 502 is retried by the job, and the photo answered once", async () => {
    await start();
    telegram.failNext("getFile", { status: 502 });
    telegram.sendUserFile({
      chatId: OWNER,
      userId: OWNER,
      kind: "photo",
      bytes: await photo(64, 48),
      caption: "try again",
    });
    expect(await replyContaining("try again")).toBe("saw 1 images: try again");
    expect(telegram.messages(OWNER)).toEqual(["saw 1 images: try again"]);
    expect(telegram.sent.filter((call) => call.method === "getFile").map((c) => c.status)).toEqual([
      502, 200,
    ]);
    expect(telegram.downloads).toHaveLength(1);
  });

  it("a SIGKILL after the download, while the voice note is transcribed: the restarted job does not download it again", async () => {
    const first = await start(
      `speech_to_text:\n  base_url: ${speech.url}\n  api_key: stt-test-key\n  model: whisper-1\n`,
    );
    speech.hang = true;
    telegram.sendUserFile({ chatId: OWNER, userId: OWNER, kind: "voice", bytes: voiceNote() });
    await telegram.waitFor(() => speech.held === 1, 20_000);
    await first.kill();
    speech.hang = false;
    await startBusServer(ws?.dir ?? "", ["telegram"]);
    expect(await replyContaining("pick up some pickles")).toBe(
      "saw 0 images: [Transcription of a voice note]\npick up some pickles",
    );
    expect(telegram.downloads).toHaveLength(1);
    expect(speech.calls.filter((call) => call.status === 200)).toHaveLength(1);
  });
});

describe("every kind has an answer", () => {
  it("a contact and a video note get the 'I can read …' answer, logged, and no model call", async () => {
    const server = await start();
    telegram.sendUserFile({ chatId: OWNER, userId: OWNER, kind: "contact" });
    await replyContaining("I cannot read a contact.");
    telegram.sendUserFile({ chatId: OWNER, userId: OWNER, kind: "video_note" });
    await replyContaining("I cannot read a video note.");
    expect(telegram.messages(OWNER)).toEqual([
      `${CAN_READ} I cannot read a contact.`,
      `${CAN_READ} I cannot read a video note.`,
    ]);
    const logged = server.linesMatching(
      (line) => line.msg === "message part picklebot cannot read",
    );
    expect(logged.map((line) => line.what)).toEqual(["a contact", "a video note"]);
    expect(model.requests).toHaveLength(0);
  });

  it("a dice roll and a forwarded story, kinds the issue does not list, get the 'I can read …' answer too", async () => {
    await start();
    telegram.sendUserFile({ chatId: OWNER, userId: OWNER, kind: "dice" });
    await replyContaining("I cannot read a 🎲 roll.");
    telegram.sendUserFile({ chatId: OWNER, userId: OWNER, kind: "story" });
    await replyContaining("I cannot read a story.");
    expect(model.requests).toHaveLength(0);
  });

  it("a CSV is read as its text, cut like a long tool output; a binary file is described by name, type and size", async () => {
    await start();
    const limit = toolResultMaxChars(contextWindowOf("claude-sonnet-4-6"));
    const rows = "day,jars\n".repeat(Math.ceil((limit + 100) / 9));
    telegram.sendUserFile({
      chatId: OWNER,
      userId: OWNER,
      kind: "document",
      bytes: Buffer.from(rows),
      name: "pickles.csv",
      mimeType: "text/csv",
      caption: "sum it",
    });
    await replyContaining("sum it");
    const [csv] = blocksOf(model.requests.at(-1), "text");
    expect(String(csv?.text)).toMatch(/^\[The user sent a file: pickles\.csv \(text\/csv, /);
    expect(String(csv?.text)).toContain(
      `[cut to fit the context window: ${limit} of ${rows.length} characters shown]`,
    );
    telegram.sendUserFile({
      chatId: OWNER,
      userId: OWNER,
      kind: "document",
      bytes: Buffer.from([0x50, 0x4b, 3, 4, 0, 0, 0xff, 0xfe]),
      name: "backup.zip",
      mimeType: "application/zip",
      caption: "keep it",
    });
    await replyContaining("keep it");
    const texts = blocksOf(model.requests.at(-1), "text").map((block) => String(block.text));
    expect(texts).toContain(
      "[The user sent a file: backup.zip (application/zip, 8 B). Its contents are not readable as text, an image or a PDF.]",
    );
  });

  it("on Discord, a 40 MB attachment is refused by its size, never downloaded, and the words answered", async () => {
    await withDiscordServer(async (discord) => {
      const big = { name: "film.mp4", contentType: "video/mp4", bytes: Buffer.from("stand-in") };
      await sendOnDiscordAndWait(discord, "watch this", [{ ...big, size: 40 * 1024 * 1024 }]);
      expect(discord.messages(DISCORD_DM).join("")).toContain(
        "(I could not read film.mp4: it is 40.0 MB; I take files up to 32.0 MB)",
      );
      expect(discord.downloads).toEqual([]);
    });
  });

  it("on Discord, a 28 MB PDF, too big for the API's 32 MB request once encoded, gets a clear reply; the words are answered", async () => {
    await withDiscordServer(async (discord) => {
      const small = pdf(2);
      const bytes = Buffer.concat([
        small.subarray(0, small.length - 6),
        Buffer.alloc(28 * 1024 * 1024),
        Buffer.from("%%EOF\n"),
      ]);
      await sendOnDiscordAndWait(discord, "skim this", [
        { name: "scan.pdf", contentType: "application/pdf", bytes },
      ]);
      expect(discord.messages(DISCORD_DM).join("")).toContain(
        "(I could not read scan.pdf: it is over 22 MB, the most the model takes in one request once encoded)",
      );
      expect(model.refused).toEqual([]);
    });
  });

  it("on Discord, a PDF attachment reaches the model as a document block, with the message's text", async () => {
    await withDiscordServer(async (discord) => {
      const bytes = pdf(2);
      await sendOnDiscordAndWait(discord, "summarise this", [
        { name: "report.pdf", contentType: "application/pdf", bytes },
      ]);
      const [document] = blocksOf(model.requests.at(-1), "document");
      expect(document).toMatchObject({
        title: "report.pdf",
        source: { type: "base64", media_type: "application/pdf" },
      });
      const data = String((document?.source as { data?: string } | undefined)?.data);
      expect(Buffer.from(data, "base64").equals(bytes)).toBe(true);
    });
  });
});

describe("file names that are paths, or huge", () => {
  it("a file named ../../etc/passwd is kept by its content under the history, and read as text by its name", async () => {
    await start();
    telegram.sendUserFile({
      chatId: OWNER,
      userId: OWNER,
      kind: "document",
      bytes: Buffer.from("root:x:0:0:root:/root:/bin/bash\n"),
      name: "../../etc/passwd",
      mimeType: "text/plain",
      caption: "what is this?",
    });
    await replyContaining("what is this?");
    const [file] = blocksOf(model.requests.at(-1), "text");
    expect(String(file?.text)).toMatch(
      /^\[The user sent a file: \.\.\/\.\.\/etc\/passwd \(text\/plain/,
    );
    expect(String(file?.text)).toContain("root:x:0:0");
    const stored = readdirSync(join(ws?.dir ?? "", "history", "media"), { recursive: true });
    expect(
      stored.map(String).filter((name) => name.includes("passwd") || name.includes("..")),
    ).toEqual([]);
  });

  it("a file with a 5,000-character name is read and answered", async () => {
    await start();
    const name = `${"n".repeat(5000)}.txt`;
    telegram.sendUserFile({
      chatId: OWNER,
      userId: OWNER,
      kind: "document",
      bytes: Buffer.from("pickles: 3 jars\n"),
      name,
      mimeType: "text/plain",
      caption: "count them",
    });
    expect(await replyContaining("count them")).toMatch(/pickles: 3 jars/);
  });
});

describe("PDFs whose pages pass the API's limit together", () => {
  it("a second long PDF is read; the first is left out as a note, its words kept, so the chat is not stuck", async () => {
    await start();
    const send = (pages: number, name: string, caption: string) =>
      telegram.sendUserFile({
        chatId: OWNER,
        userId: OWNER,
        kind: "document",
        bytes: pdf(pages),
        name,
        mimeType: "application/pdf",
        caption,
      });
    send(60, "first.pdf", "read the first");
    await replyContaining("read the first");
    send(50, "second.pdf", "now the second");
    const reply = await replyContaining("now the second");
    expect(reply).toMatch(/now the second$/);
    expect(model.refused).toEqual([]);
    const last = model.requests.at(-1);
    expect(blocksOf(last, "document").map((block) => block.title)).toEqual(["second.pdf"]);
    // The words of the first turn stay; only its PDF is left out, named.
    expect(blocksOf(last, "text").map((block) => block.text)).toEqual(
      expect.arrayContaining([
        "[PDF first.pdf left out to save context; ask the user to send it again if you need it]",
        "read the first",
      ]),
    );
  });
});

describe("PDFs that keep their pages in compressed object streams", () => {
  it("a 150-page one gets a reply naming its pages and the limit, is not sent, and the caption is answered", async () => {
    await start();
    telegram.sendUserFile({
      chatId: OWNER,
      userId: OWNER,
      kind: "document",
      bytes: compressedPdf(150),
      name: "manual.pdf",
      mimeType: "application/pdf",
      caption: "summarise it",
    });
    const reply = await replyContaining("summarise it");
    expect(reply).toContain(
      "I could not read manual.pdf: it has 150 pages; the model reads at most 100",
    );
    expect(blocksOf(model.requests.at(-1), "document")).toEqual([]);
  });

  it("a 3-page one reaches the model as a document block", async () => {
    await start();
    const bytes = compressedPdf(3);
    telegram.sendUserFile({
      chatId: OWNER,
      userId: OWNER,
      kind: "document",
      bytes,
      name: "short.pdf",
      mimeType: "application/pdf",
      caption: "read it",
    });
    await replyContaining("read it");
    const [document] = blocksOf(model.requests.at(-1), "document");
    const data = String((document?.source as { data?: string } | undefined)?.data);
    expect(Buffer.from(data, "base64").equals(bytes)).toBe(true);
  });
});

describe("a voice note when the speech service fails", () => {
  const speechYaml = (key: string) =>
    `speech_to_text:\n  base_url: ${speech.url}\n  api_key: ${key}\n  model: whisper-1\nworkers:\n  max_attempts: 1\n`;

  it("refused key: the reply names the key to fix, a log line says why, the caption is answered", async () => {
    const server = await start(speechYaml("wrong-key"));
    telegram.sendUserFile({
      chatId: OWNER,
      userId: OWNER,
      kind: "voice",
      bytes: voiceNote(),
      caption: "hear me",
    });
    const reply = await replyContaining("hear me");
    expect(reply).toContain("check speech_to_text.api_key in picklebot.yaml");
    expect(reply).toMatch(/hear me$/);
    const line = await server.waitForLog((l) => l.msg === "could not read a file sent in a chat");
    expect(String(line.reason)).toContain("401");
  });

  it("service down (503): the reply says it did not answer, a log line says why, the caption is answered", async () => {
    const server = await start(speechYaml("stt-test-key"));
    speech.unavailable = true;
    telegram.sendUserFile({
      chatId: OWNER,
      userId: OWNER,
      kind: "voice",
      bytes: voiceNote(),
      caption: "hear me",
    });
    const reply = await replyContaining("hear me");
    expect(reply).toContain("I could not transcribe it: the speech-to-text service");
    expect(reply).toContain("failed (503)");
    expect(reply).toMatch(/hear me$/);
    const line = await server.waitForLog((l) => l.msg === "could not read a file sent in a chat");
    expect(String(line.reason)).toContain("503");
  });
});
