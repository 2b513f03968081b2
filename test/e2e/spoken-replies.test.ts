/**
 * Spoken replies end to end: `picklebot server` with Telegram against the fake Bot API, the
 * fake model and the fake text-to-speech server. An agent with `voice_replies: always`
 * answers in text and, once, in a voice message (sendVoice, OGG/Opus); one with `in_kind`
 * does so only for a voice note (transcribed by the fake speech-to-text server), also when
 * its job resumes after a SIGKILL; a speech service that refuses the key or is down leaves
 * the text reply as it is, with a log line. On Slack (the fake Web API and Socket Mode)
 * the voice is an audio file shared into the DM.
 */
import { createHash } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { costOf, priceOf } from "../../src/agents/prices.js";
import type { TokenUsage } from "../../src/ports/index.js";
import { type FakeAnthropic, lastUserText, startFakeAnthropic } from "../fakes/anthropic.js";
import { startFakeSlack } from "../fakes/slack.js";
import { type FakeSpeech, fakeAudio, startFakeSpeech } from "../fakes/speech.js";
import { type FakeTelegram, startFakeTelegram } from "../fakes/telegram.js";
import { type FakeTranscription, startFakeTranscription } from "../fakes/transcription.js";
import { busWorkspace, slackYaml, startBusServer, telegramYaml } from "../helpers/bus.js";
import { runCli } from "../helpers/cli.js";
import { voiceNote } from "../helpers/media.js";
import { killAllServers, type ServerProcess } from "../helpers/server.js";
import { waitFor } from "../helpers/wait.js";
import type { TempWorkspace } from "../helpers/workspace.js";

const OWNER = 4242;

const TALKER =
  "---\nname: Talker\ndescription: Talks back\ntools: []\nvoice_replies: always\n---\nYou talk.\n";

let model: FakeAnthropic;
let telegram: FakeTelegram;
let speech: FakeSpeech;
let listener: FakeTranscription;
let ws: TempWorkspace | undefined;

beforeEach(async () => {
  model = await startFakeAnthropic({
    defaultReply: (request) => ({ text: `echo: ${lastUserText(request)}` }),
  });
  telegram = await startFakeTelegram();
  speech = await startFakeSpeech();
  listener = await startFakeTranscription();
});

afterEach(async () => {
  await killAllServers();
  await telegram.close();
  await speech.close();
  await listener.close();
  await model.close();
  ws?.remove();
  ws = undefined;
});

/**
 * Starts the server with the talker (speaking `talk.mode`, default `always`) as the chats'
 * agent, `text_to_speech` keyed `key`, and the fake `speech_to_text` (with `talk.sttExtra`
 * keys).
 */
async function startTalking(
  key = speech.key,
  bus: { yaml: string; platform: "telegram" | "slack" } = {
    yaml: telegramYaml(telegram, { allowedUserIds: [OWNER] }),
    platform: "telegram",
  },
  talk: { mode?: string; sttExtra?: string } = {},
): Promise<ServerProcess> {
  const tts = `text_to_speech:\n  base_url: ${speech.baseUrl}\n  api_key: ${key}\n  model: tts-1\n  voice: nova\n`;
  const stt = `speech_to_text:\n  base_url: ${listener.url}\n  api_key: stt-test-key\n  model: whisper-1\n${talk.sttExtra ?? ""}`;
  const yaml = `default_agent: talker\n${tts}${stt}${bus.yaml}`;
  const agent = TALKER.replace("voice_replies: always", `voice_replies: ${talk.mode ?? "always"}`);
  ws = busWorkspace(model.url, yaml, { "agents/talker/AGENT.md": agent });
  return startBusServer(ws.dir, [bus.platform]);
}

/** Where the in-kind tests talk: the owner's Telegram chat. */
const TELEGRAM_BUS = () => ({
  yaml: telegramYaml(telegram, { allowedUserIds: [OWNER] }),
  platform: "telegram" as const,
});

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

  it("in kind: answers a voice note in text and voice, a text message in text only", async () => {
    await startTalking(speech.key, TELEGRAM_BUS(), { mode: "in_kind" });
    telegram.sendUserMessage({ chatId: OWNER, userId: OWNER, text: "hello" });
    await telegram.waitFor(() => telegram.messages(OWNER).length === 1, 15_000);
    telegram.sendUserFile({ chatId: OWNER, userId: OWNER, kind: "voice", bytes: voiceNote() });
    await telegram.waitFor(() => telegram.filesOf(OWNER).length === 1, 15_000);
    const spokenReply = "echo: [Transcription of a voice note]\npick up some pickles";
    // The chat's jobs run in order: the text message's job ended before the voice note's.
    expect(telegram.messages(OWNER)).toEqual(["echo: hello", spokenReply]);
    expect(speech.requests.map((request) => request.input)).toEqual([spokenReply]);
    const [voice] = telegram.filesOf(OWNER);
    expect([voice?.method, voice?.sha256]).toEqual(["sendVoice", sha256(fakeAudio(spokenReply))]);
  });

  it("in kind across a crash: the resumed job speaks, and its transcription is made and counted once", async () => {
    model.script({ hang: true });
    const first = await startTalking(speech.key, TELEGRAM_BUS(), {
      mode: "in_kind",
      sttExtra: "  price_per_minute: 0.6\n",
    });
    telegram.sendUserFile({ chatId: OWNER, userId: OWNER, kind: "voice", bytes: voiceNote() });
    // The message is checkpointed (with the transcription's charge) before the model call.
    await waitFor(() => model.requests.length === 1, "the first model call", 15_000);
    await first.kill();
    await startBusServer(ws?.dir ?? "", ["telegram"]);

    await telegram.waitFor(() => telegram.filesOf(OWNER).length === 1, 20_000);
    const spokenReply = "echo: [Transcription of a voice note]\npick up some pickles";
    expect(telegram.messages(OWNER)).toEqual([spokenReply]);
    expect(telegram.filesOf(OWNER).map((file) => file.method)).toEqual(["sendVoice"]);
    expect(listener.calls).toHaveLength(1);
    const usage = JSON.parse(
      (await runCli(["usage", "--json", "--workspace", ws?.dir ?? ""])).stdout,
    ) as { total: TokenUsage & { calls: number; costUsd: number } };
    const price = priceOf("claude-sonnet-4-6");
    const tokens = price ? costOf(usage.total, price) : Number.NaN;
    // The answered model call and the transcription (2 s at $0.60 a minute), once each.
    expect(usage.total.calls).toBe(2);
    expect(usage.total.costUsd).toBeCloseTo(tokens + 0.02, 8);
  });
});
