/**
 * TelegramPlatform against the fake Bot API, in process: what it hands over, how each Bot
 * API failure comes back as a ChatPlatformError, and that the token never shows.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ChatPlatformError } from "../../src/base/errors.js";
import { silentLogger } from "../../src/base/log.js";
import { splitMessage } from "../../src/chat/split.js";
import { TelegramPlatform } from "../../src/chat/telegram/platform.js";
import {
  CHAT_COMMANDS,
  type Choice,
  type IncomingChatMessage,
  type IncomingChoice,
} from "../../src/ports/index.js";
import { type FakeTelegram, startFakeTelegram } from "../fakes/telegram.js";
import { recordingLogger } from "../helpers/log.js";
import { freePort } from "../helpers/server.js";

let fake: FakeTelegram;
let platform: TelegramPlatform;
let received: IncomingChatMessage[];
let presses: IncomingChoice[];

beforeEach(async () => {
  fake = await startFakeTelegram();
  platform = new TelegramPlatform({
    token: fake.token,
    apiRoot: fake.apiRoot,
    logger: silentLogger(),
  });
  received = [];
  presses = [];
});

afterEach(async () => {
  await platform.stop();
  await fake.close();
});

async function started(
  onMessage: (message: IncomingChatMessage) => Promise<void> = async (message) => {
    received.push(message);
  },
  onChoice: (press: IncomingChoice) => Promise<void> = async (press) => {
    presses.push(press);
  },
): Promise<void> {
  await platform.start(onMessage, onChoice);
  await fake.waitForCall("getUpdates");
}

/** A platform that polls again 10 ms after a failed poll. */
function quicklyRepolling(): TelegramPlatform {
  const options = { token: fake.token, apiRoot: fake.apiRoot, logger: silentLogger() };
  return new TelegramPlatform({ ...options, reconnectBaseMs: 10 });
}

/** A handler that fails the first time, as a full disk would, then keeps what it gets. */
function refusingOnce<T>(keep: (value: T) => void): (value: T) => Promise<void> {
  let refusals = 1;
  return async (value) => {
    if (refusals-- > 0) throw new Error("database or disk is full");
    keep(value);
  };
}

async function failure(call: Promise<unknown>): Promise<ChatPlatformError> {
  const error = await call.then(
    () => null,
    (thrown: unknown) => thrown,
  );
  if (!(error instanceof ChatPlatformError))
    throw new Error(`expected a ChatPlatformError, got ${String(error)}`);
  return error;
}

describe("TelegramPlatform", () => {
  it("sets the command menu at start to the chat commands, and Telegram accepts it", async () => {
    await started();
    await fake.waitForCall("setMyCommands");
    expect(fake.commands).toEqual(
      CHAT_COMMANDS.map(({ command, description }) => ({ command, description })),
    );
    expect(fake.commands.map((entry) => entry.command)).toEqual([
      "new",
      "status",
      "usage",
      "compact",
      "stop",
      "agent",
      "model",
      "reminders",
      "heartbeat",
      "transcript",
      "memory",
      "forget",
      "help",
    ]);
  });

  it("logs a refused command menu and keeps running", async () => {
    await platform.stop();
    const { logger, lines } = recordingLogger();
    platform = new TelegramPlatform({
      token: fake.token,
      apiRoot: fake.apiRoot,
      logger,
      commands: [{ command: "New", description: "Start over" }],
    });
    await started();
    await fake.waitFor(() => lines.some((line) => line.msg?.includes("command menu")));
    const warning = lines.find((line) => line.msg?.includes("command menu"));
    expect(warning?.error).toBe("telegram: 400 Bad Request: BOT_COMMAND_INVALID");
    expect(platform.state).toBe("connected");
    fake.sendUserMessage({ chatId: 5, userId: 5, text: "still here" });
    await fake.waitFor(() => received.length === 1);
  });

  it("hands over private messages, and group messages only when mentioned or replied to", async () => {
    await started();
    expect(platform.state).toBe("connected");
    fake.sendUserMessage({ chatId: 5, userId: 5, text: "hi", username: "ann" });
    fake.sendUserMessage({ chatId: -9, userId: 5, text: "not for the bot" });
    fake.sendUserMessage({ chatId: -9, userId: 6, text: "/status@picklebot_test_bot" });
    const last = fake.sendUserMessage({ chatId: -9, userId: 5, text: "hello bot", mention: true });
    await fake.waitFor(() => fake.confirmedOffset > last.update_id || received.length === 3);
    expect(received).toEqual([
      {
        platform: "telegram",
        chatId: "5",
        userId: "5",
        userName: "@ann",
        text: "hi",
        direct: true,
        messageId: "1",
      },
      expect.objectContaining({ chatId: "-9", userId: "6", text: "/status", direct: false }),
      expect.objectContaining({
        chatId: "-9",
        text: "hello bot",
        messageId: String(last.update_id),
      }),
    ]);
  });

  it("sends Markdown as MarkdownV2 and edits; 'message is not modified' is a success", async () => {
    await started();
    fake.openChat(5);
    const sent = await platform.send("5", "a **b** c.", "markdown");
    expect(fake.messages(5)).toEqual(["a b c."]);
    await platform.edit("5", sent.messageId, "a **b** c.", "markdown");
    await platform.edit("5", sent.messageId, "plain *text*", "plain");
    expect(fake.messages(5)).toEqual(["plain *text*"]);
  });

  it("sends every part of a long run of emoji split at maxMessageLength, each accepted", async () => {
    fake.openChat(5);
    // No space or line break: a cut by code units alone lands inside a surrogate pair here.
    const text = `!${"😀👨‍👩‍👧🇫🇷".repeat(700)}`;
    const parts = splitMessage(text, platform.maxMessageLength);
    expect(parts.length).toBeGreaterThan(1);
    for (const part of parts) await platform.send("5", part, "plain");
    expect(fake.messages(5).join("")).toBe(text);
  });

  it("turns 429, parse errors, 5xx and refusals into ChatPlatformErrors that say what to do", async () => {
    await started();
    fake.openChat(5);
    fake.failNext("sendMessage", { status: 429, retryAfter: 7 });
    expect(await failure(platform.send("5", "x", "plain"))).toMatchObject({
      retryable: true,
      retryAfterS: 7,
    });
    fake.failNext("sendMessage", {
      status: 400,
      description: "Bad Request: can't parse entities: oops",
    });
    expect(await failure(platform.send("5", "x", "markdown"))).toMatchObject({
      retryable: false,
      formatRejected: true,
    });
    fake.failNext("sendChatAction", { status: 502 });
    expect(await failure(platform.typing("5"))).toMatchObject({
      retryable: true,
      formatRejected: false,
    });
    const blocked = await failure(platform.send("404", "x", "plain"));
    expect(blocked).toMatchObject({
      retryable: false,
      message: "telegram: 400 Bad Request: chat not found",
    });
  });

  it("never puts the token in an error, even a network error whose URL holds it", async () => {
    const offline = new TelegramPlatform({
      token: fake.token,
      apiRoot: `http://127.0.0.1:${await freePort()}`,
      logger: silentLogger(),
    });
    const error = await failure(offline.send("5", "x", "plain"));
    expect(error.retryable).toBe(true);
    expect(error.message).toContain("ECONNREFUSED");
    expect(`${error.message} ${String(error.cause ?? "")}`).not.toContain(fake.token);
  });

  it("confirms the update offset when it stops", async () => {
    await started();
    const update = fake.sendUserMessage({ chatId: 5, userId: 5, text: "hi" });
    await fake.waitFor(() => received.length === 1);
    await platform.stop();
    expect(platform.state).toBe("stopped");
    expect(fake.confirmedOffset).toBe(update.update_id + 1);
  });

  it("does not confirm an update it could not store: it comes again, and only then is confirmed", async () => {
    platform = quicklyRepolling();
    await started(refusingOnce((message) => received.push(message)));
    const update = fake.sendUserMessage({ chatId: 5, userId: 5, text: "keep me" });
    await fake.waitFor(() => received.length === 1, 10_000);
    expect(received.map((message) => message.text)).toEqual(["keep me"]);
    await platform.stop();
    expect(fake.confirmedOffset).toBe(update.update_id + 1);
  });

  describe("a Bot API call that never answers (half-open connection)", () => {
    beforeEach(() => {
      platform = new TelegramPlatform({
        token: fake.token,
        apiRoot: fake.apiRoot,
        logger: silentLogger(),
        pollTimeoutS: 0,
        callTimeoutMs: 300,
        reconnectBaseMs: 400,
      });
    });

    it("a hung getUpdates is abandoned: connecting, then polling resumes and the message arrives", async () => {
      await started();
      fake.hangNext("getUpdates");
      await fake.waitFor(() => fake.callsOf("getUpdates").some((call) => call.status === 0));
      await fake.waitFor(() => platform.state === "connecting", 5_000);
      fake.sendUserMessage({ chatId: 5, userId: 5, text: "still there?" });
      await fake.waitFor(() => received.length === 1, 10_000);
      expect(platform.state).toBe("connected");
      expect(received[0]?.text).toBe("still there?");
    });

    it("a hung sendMessage fails after the timeout with a retryable error that says so", async () => {
      fake.hangNext("sendMessage");
      const error = await failure(platform.send("5", "hello", "plain"));
      expect(error.retryable).toBe(true);
      expect(error.message).toBe("telegram: sendMessage did not answer within 0.3 s; abandoned");
    });
  });

  describe("choices", () => {
    const CHOICES: Choice[] = [
      { id: "once", label: "Allow once", style: "primary" },
      { id: "always", label: "Always allow" },
      { id: "deny", label: "Deny", style: "danger" },
    ];

    /** A message with the three choices in chat 5, and a press of `choiceId` handed over. */
    async function pressed(choiceId: string): Promise<{
      messageId: string;
      press: IncomingChoice;
      queryId: string;
    }> {
      const { messageId } = await platform.sendChoices("5", "Run `ls`?", "markdown", CHOICES);
      const data = { chatId: 5, messageId: Number(messageId), data: choiceId, userId: 5 };
      const update = fake.pressButton({ ...data, username: "ann" });
      const press = await fake.waitFor(() => presses.find((p) => p.messageId === messageId));
      return { messageId, press, queryId: update.callback_query.id };
    }

    it("polls for callback queries beside messages", async () => {
      await started();
      expect(fake.callsOf("getUpdates")[0]?.params.allowed_updates).toEqual([
        "message",
        "callback_query",
      ]);
    });

    it("confirms a press only once it is handled: a refused one comes again", async () => {
      platform = quicklyRepolling();
      await started(
        undefined,
        refusingOnce((press) => presses.push(press)),
      );
      fake.openChat(5);
      await pressed("deny");
      await platform.stop();
      const update = fake.updateLog.at(-1)?.update;
      expect(fake.confirmedOffset).toBe((update?.update_id ?? 0) + 1);
      expect(fake.updateLog.at(-1)?.deliveredAt).toHaveLength(2);
    });

    it("acknowledges a press silently or with a notice; a second time is refused", async () => {
      await started();
      fake.openChat(5);
      const first = await pressed("once");
      const second = await pressed("deny");
      await platform.acknowledgeChoice(first.press);
      await platform.acknowledgeChoice(second.press, "Denied");
      expect(fake.callbackAnswers).toEqual([
        { queryId: first.press.pressId, status: 200 },
        { queryId: second.press.pressId, text: "Denied", status: 200 },
      ]);
      const again = await failure(platform.acknowledgeChoice(first.press));
      expect(again).toMatchObject({
        retryable: false,
        message: expect.stringContaining("query is too old"),
      });
    });
  });
});
