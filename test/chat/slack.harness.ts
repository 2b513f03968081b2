/**
 * The {@link ChatPlatformHarness} of the Slack adapter: SlackPlatform (the real
 * @slack/web-api and @slack/socket-mode clients) against the fake Slack
 * (`test/fakes/slack.ts`), which sends an unacknowledged envelope again after 100 ms.
 */
import { parseSlackChatId } from "../../src/chat/slack/chat-id.js";
import { unescapeSlackText } from "../../src/chat/slack/mrkdwn.js";
import { SlackPlatform } from "../../src/chat/slack/platform.js";
import { startFakeSlack } from "../fakes/slack.js";
import type { ChatPlatformHarness, HarnessAction, Person } from "./harness.js";

/** The Web API method of each action; Slack has no typing call (the contract opts out). */
const METHODS = {
  send: "chat.postMessage",
  edit: "chat.update",
  typing: "(none)",
} as const satisfies Record<HarnessAction, string>;

/** Starts the fake Slack; its harness closes it. */
export async function slackHarness(): Promise<ChatPlatformHarness> {
  let clock = Date.now();
  const fake = await startFakeSlack({ now: () => clock, redeliverAfterMs: 100 });
  const alice: Person = { id: "U0ALICE01", userName: "alice" };
  const bob: Person = { id: "U0BOB0001", userName: "bob" };
  const directChannels = new Map(
    [alice, bob].map((person) => [person.id, fake.addPerson(person.id, person.userName)]),
  );
  const directChat = (person: Person): string => {
    const channel = directChannels.get(person.id);
    if (channel === undefined) throw new Error(`no DM with ${person.userName}`);
    return channel;
  };
  const mention = `<@${fake.botUserId}>`;
  let closed: Promise<void> | undefined;

  return {
    kind: "slack",
    token: fake.botToken,
    wrongToken: "xoxb-0000000000-revoked-long-ago-0000",
    alice,
    bob,
    groupChat: fake.channelId,
    platform: (options = {}) =>
      new SlackPlatform({
        botToken: options.token ?? fake.botToken,
        appToken: fake.appToken,
        apiUrl: fake.apiUrl,
        reconnectBaseMs: 10,
        ...(options.logger === undefined ? {} : { logger: options.logger }),
        ...(options.callTimeoutMs === undefined ? {} : { callTimeoutMs: options.callTimeoutMs }),
      }),
    directChat,

    async write({ from, in: where, text, mention: mentions }) {
      const channelId = where === "direct" ? directChat(from) : fake.channelId;
      fake.write({ userId: from.id, channelId, text: mentions ? `${mention} ${text}` : text });
    },
    async writeAsBot({ self, text }) {
      fake.write({
        userId: self ? fake.botUserId : "U0OTHERBOT",
        channelId: fake.channelId,
        text: `${mention} ${text}`,
        botId: self ? "B1" : "B2",
      });
    },
    async press({ from, chatId, messageId, choiceId }) {
      const { channel } = parseSlackChatId(chatId);
      return fake.press({ userId: from.id, channelId: channel, ts: messageId, actionId: choiceId });
    },
    expirePresses() {
      clock += 31 * 60 * 1000;
    },

    shown: (chatId) => {
      const { channel, threadTs } = parseSlackChatId(chatId);
      return fake
        .messages(channel)
        .filter((message) => message.threadTs === threadTs)
        .map(({ ts, text, blocks }) => ({
          messageId: ts,
          text: unescapeSlackText(text),
          buttons: blocks
            .filter((block) => block.type === "actions")
            .map((block) =>
              (block.elements ?? []).map((button) => ({
                id: button.action_id,
                label: button.text.text,
              })),
            ),
        }));
    },
    typings: () => 0,
    answers: () =>
      fake.pressResponses
        .filter((response) => response.status === 200)
        .map(({ pressId, body }) => ({ pressId, notice: String(body.text) })),
    sendAttempts: () => fake.callsTo(METHODS.send).length,
    files: (chatId) => {
      const { channel, threadTs } = parseSlackChatId(chatId);
      return fake
        .sharedFiles(channel)
        .filter((file) => file.threadTs === threadTs)
        .map(({ fileId, name, size, sha256, caption }) => ({
          messageId: fileId,
          name,
          size,
          sha256,
          caption: unescapeSlackText(caption),
        }));
    },
    fileAttempts: () => fake.callsTo("files.getUploadURLExternal").length,
    connections: () => fake.openSockets(),
    logins: () => fake.callsTo("auth.test").length,

    failNext: (action, failure) => fake.failNext(METHODS[action], failure),
    hangNext: (action) => fake.hangNext(METHODS[action]),
    goOffline: () => fake.goOffline(),
    goOnline: () => fake.goOnline(),
    close: () => {
      closed ??= fake.close();
      return closed;
    },
  };
}
