/**
 * The {@link ChatPlatformHarness} of the Telegram adapter: TelegramPlatform (real telegraf)
 * against the fake Bot API (`test/fakes/telegram.ts`).
 */
import { silentLogger } from "../../src/base/log.js";
import { TelegramPlatform } from "../../src/chat/telegram/platform.js";
import { startFakeTelegram } from "../fakes/telegram.js";
import type { ChatPlatformHarness, HarnessAction, Person } from "./harness.js";

const METHODS = {
  send: "sendMessage",
  edit: "editMessageText",
  typing: "sendChatAction",
} as const satisfies Record<HarnessAction, string>;

/** A supergroup, as Telegram numbers them. */
const GROUP_CHAT = -1001234567890;

/** Starts the fake Bot API; its harness closes it. */
export async function telegramHarness(): Promise<ChatPlatformHarness> {
  let clock = Date.now();
  const fake = await startFakeTelegram({ now: () => clock });
  const usernames = new Map([
    ["5001", "alice"],
    ["5002", "bob"],
  ]);
  const alice: Person = { id: "5001", userName: "@alice" };
  const bob: Person = { id: "5002", userName: "@bob" };
  for (const person of [alice, bob]) fake.openChat(Number(person.id), "private");
  fake.openChat(GROUP_CHAT, "supergroup");
  let closed: Promise<void> | undefined;

  return {
    kind: "telegram",
    token: fake.token,
    wrongToken: "123456789:AAH-this-token-was-revoked-long-ago",
    alice,
    bob,
    groupChat: String(GROUP_CHAT),
    platform: (options = {}) =>
      new TelegramPlatform({
        token: options.token ?? fake.token,
        apiRoot: fake.apiRoot,
        logger: options.logger ?? silentLogger(),
        reconnectBaseMs: 10,
        ...(options.callTimeoutMs === undefined ? {} : { callTimeoutMs: options.callTimeoutMs }),
      }),
    // A private chat's id is the person's user id.
    directChat: (person) => person.id,

    async write({ from, in: where, text, mention }) {
      fake.sendUserMessage({
        chatId: where === "direct" ? Number(from.id) : GROUP_CHAT,
        chatType: where === "direct" ? "private" : "supergroup",
        userId: Number(from.id),
        username: usernames.get(from.id) ?? "",
        text,
        mention: mention ?? false,
      });
    },
    async writeAsBot() {
      throw new Error("Telegram never hands a bot its own messages or other bots' messages");
    },
    async press({ from, chatId, messageId, choiceId }) {
      const update = fake.pressButton({
        chatId: Number(chatId),
        messageId: Number(messageId),
        data: choiceId,
        userId: Number(from.id),
        username: usernames.get(from.id) ?? "",
      });
      return update.callback_query.id;
    },
    expirePresses() {
      clock += 16_000;
    },

    shown: (chatId) =>
      fake.botMessagesOf(Number(chatId)).map(({ messageId, text }) => ({
        messageId: String(messageId),
        text,
        buttons: fake.buttonsOf(Number(chatId), messageId).map((row) =>
          row.map((button) => ({
            id: "callback_data" in button ? button.callback_data : "",
            label: button.text,
          })),
        ),
      })),
    typings: (chatId) =>
      fake
        .callsOf("sendChatAction")
        .filter((call) => call.status === 200 && String(call.params.chat_id) === chatId).length,
    answers: () =>
      fake.callbackAnswers
        .filter((answer) => answer.status === 200)
        .map(({ queryId, text }) =>
          text === undefined ? { pressId: queryId } : { pressId: queryId, notice: text },
        ),
    sendAttempts: () => fake.callsOf("sendMessage").length,
    files: (chatId) =>
      fake.filesOf(Number(chatId)).map((file) => ({
        messageId: String(file.messageId),
        name: file.filename,
        size: file.size,
        sha256: file.sha256,
        caption: file.caption ?? "",
      })),
    fileAttempts: () =>
      ["sendPhoto", "sendDocument", "sendVoice"].flatMap((method) => fake.callsOf(method)).length,
    connections: () => fake.heldPolls,
    logins: () => fake.callsOf("getMe").length,

    failNext(action, failure) {
      const injected =
        failure.status === 429
          ? { status: 429 as const, retryAfter: failure.retryAfterS }
          : failure;
      fake.failNext(METHODS[action], injected);
    },
    hangNext: (action) => fake.hangNext(METHODS[action]),
    goOffline: () => fake.goOffline(),
    goOnline: () => fake.goOnline(),
    close: () => {
      closed ??= fake.close();
      return closed;
    },
  };
}
