/**
 * Spoken replies end to end: `picklebot server` with Telegram against the fake Bot API, the
 * fake model and the fake text-to-speech server. An agent with `voice_replies: always`
 * answers in text and, once, in a voice message (sendVoice, OGG/Opus); a speech service
 * that refuses the key or is down leaves the text reply as it is, with a log line. On
 * Slack (the fake Web API and Socket Mode) the voice is an audio file shared into the DM.
 */
import { createHash } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type FakeAnthropic, lastUserText, startFakeAnthropic } from "../fakes/anthropic.js";
import { startFakeSlack } from "../fakes/slack.js";
import { type FakeSpeech, fakeAudio, startFakeSpeech } from "../fakes/speech.js";
import { type FakeTelegram, startFakeTelegram } from "../fakes/telegram.js";
import { busWorkspace, slackYaml, startBusServer, telegramYaml } from "../helpers/bus.js";
import { killAllServers, type ServerProcess } from "../helpers/server.js";
import { waitFor } from "../helpers/wait.js";
import type { TempWorkspace } from "../helpers/workspace.js";

const OWNER = 4242;

const TALKER =
  "---\nname: Talker\ndescription: Talks back\ntools: []\nvoice_replies: always\n---\nYou talk.\n";

let model: FakeAnthropic;
let telegram: FakeTelegram;
let speech: FakeSpeech;
let ws: TempWorkspace | undefined;

beforeEach(async () => {
  model = await startFakeAnthropic({
    defaultReply: (request) => ({ text: `echo: ${lastUserText(request)}` }),
  });
  telegram = await startFakeTelegram();
  speech = await startFakeSpeech();
});

afterEach(async () => {
  await killAllServers();
  await telegram.close();
  await speech.close();
  await model.close();
  ws?.remove();
  ws = undefined;
});

/** Starts the server with the talker as the chats' agent and `text_to_speech` keyed `key`. */
async function startTalking(
  key = speech.key,
  bus: { yaml: string; platform: "telegram" | "slack" } = {
    yaml: telegramYaml(telegram, { allowedUserIds: [OWNER] }),
    platform: "telegram",
  },
): Promise<ServerProcess> {
  const tts = `text_to_speech:\n  base_url: ${speech.baseUrl}\n  api_key: ${key}\n  model: tts-1\n  voice: nova\n`;
  const yaml = `default_agent: talker\n${tts}${bus.yaml}`;
  ws = busWorkspace(model.url, yaml, { "agents/talker/AGENT.md": TALKER });
  return startBusServer(ws.dir, [bus.platform]);
}

function sha256(content: Buffer): string {
  return createHash("sha256").update(content).digest("hex");
}

describe("spoken replies", () => {
  it("sends the text reply and, once, the same reply as a voice message", async () => {
    await startTalking();
    telegram.sendUserMessage({ chatId: OWNER, userId: OWNER, text: "hello" });
    await telegram.waitFor(() => telegram.filesOf(OWNER).length === 1, 15_000);
    expect(telegram.messages(OWNER)).toEqual(["echo: hello"]);
    expect(speech.requests).toEqual([
      { model: "tts-1", voice: "nova", input: "echo: hello", responseFormat: "opus" },
    ]);
    const [voice] = telegram.filesOf(OWNER);
    expect([voice?.method, voice?.filename, voice?.sha256]).toEqual([
      "sendVoice",
      "reply.ogg",
      sha256(fakeAudio("echo: hello")),
    ]);
  });

  it("on Slack, shares the spoken reply as an audio file into the DM, beside the text reply", async () => {
    const slack = await startFakeSlack();
    try {
      const dm = slack.addPerson("U0OWNER01", "owner");
      await startTalking(speech.key, {
        yaml: slackYaml(slack, { allowedUserIds: ["U0OWNER01"] }),
        platform: "slack",
      });
      slack.write({ userId: "U0OWNER01", channelId: dm, text: "hello" });
      const [voice] = await waitFor(
        () => slack.sharedFiles(dm).length === 1 && slack.sharedFiles(dm),
        "the voice reply",
        15_000,
      );
      expect(slack.messages(dm).map((message) => message.text)).toEqual(["echo: hello"]);
      expect([voice?.name, voice?.sha256]).toEqual(["reply.ogg", sha256(fakeAudio("echo: hello"))]);
    } finally {
      await killAllServers();
      await slack.close();
    }
  });

  it("delivers the text reply alone, and logs why, when the service refuses the key", async () => {
    const server = await startTalking("sk-revoked");
    telegram.sendUserMessage({ chatId: OWNER, userId: OWNER, text: "hello" });
    const line = await server.waitForLog(
      (entry) => entry.msg === "spoken reply not made; the text reply is sent without it",
      15_000,
    );
    expect(String(line.error)).toMatch(/answered 401: .*check text_to_speech\.api_key/);
    expect(server.transcript()).not.toContain("sk-revoked");
    await telegram.waitFor(() => telegram.messages(OWNER).length === 1, 15_000);
    expect(telegram.messages(OWNER)).toEqual(["echo: hello"]);
    expect(telegram.filesOf(OWNER)).toEqual([]);
  });

  it("delivers the text reply alone, and logs why, when the service is down", async () => {
    speech.refuseAll = true;
    const server = await startTalking();
    telegram.sendUserMessage({ chatId: OWNER, userId: OWNER, text: "hello" });
    const line = await server.waitForLog(
      (entry) => entry.msg === "spoken reply not made; the text reply is sent without it",
      15_000,
    );
    expect(String(line.error)).toMatch(/answered 503/);
    await telegram.waitFor(() => telegram.messages(OWNER).length === 1, 15_000);
    expect(telegram.filesOf(OWNER)).toEqual([]);
  });
});
