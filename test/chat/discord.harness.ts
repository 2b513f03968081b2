/**
 * The {@link ChatPlatformHarness} of the Discord adapter: DiscordPlatform (real @discordjs/ws and @discordjs/rest)
 * against the fake Discord REST API and gateway (`test/fakes/discord.ts`).
 */
import { DiscordPlatform } from "../../src/chat/discord/platform.js";
import { startFakeDiscord } from "../fakes/discord.js";
import type { ChatPlatformHarness, HarnessAction, Person } from "./harness.js";

const ROUTES = {
  send: "POST /channels/:id/messages",
  edit: "PATCH /channels/:id/messages/:mid",
  typing: "POST /channels/:id/typing",
} as const satisfies Record<HarnessAction, string>;

/** Another bot in the guild. */
const OTHER_BOT = "400000000000000009";

/** Starts the fake Discord; its harness closes it. */
export async function discordHarness(): Promise<ChatPlatformHarness> {
  let clock = Date.now();
  const fake = await startFakeDiscord({ now: () => clock });
  const alice: Person = { id: "400000000000000001", userName: "alice" };
  const bob: Person = { id: "400000000000000002", userName: "bob" };
  const usernames = new Map([
    [alice.id, "alice"],
    [bob.id, "bob"],
  ]);
  const directChannels = new Map(
    [alice, bob].map((person) => [person.id, fake.openDirectChannel(person.id)]),
  );
  const directChat = (person: Person): string => {
    const channel = directChannels.get(person.id);
    if (channel === undefined) throw new Error(`no DM channel with ${person.userName}`);
    return channel;
  };
  let closed: Promise<void> | undefined;

  return {
    kind: "discord",
    token: fake.token,
    wrongToken: "MTAwMDAwMDAwMDAwMDAwMDAx.Wrong0.this-token-was-reset-long-ago",
    alice,
    bob,
    groupChat: fake.guildChannelId,
    platform: (options = {}) =>
      new DiscordPlatform({
        token: options.token ?? fake.token,
        apiBase: fake.restRoot,
        reconnectBaseMs: 10,
        ...(options.logger === undefined ? {} : { logger: options.logger }),
        ...(options.callTimeoutMs === undefined ? {} : { callTimeoutMs: options.callTimeoutMs }),
      }),
    directChat,

    async write({ from, in: where, text, mention }) {
      const author = { userId: from.id, username: usernames.get(from.id) ?? from.userName };
      const place =
        where === "direct"
          ? { channelId: directChat(from) }
          : { channelId: fake.guildChannelId, guildId: fake.guildId };
      await fake.sendUserMessage({
        ...author,
        ...place,
        content: text,
        mentionsBot: mention ?? false,
      });
    },
    async writeAsBot({ self, text }) {
      await fake.sendUserMessage({
        channelId: fake.guildChannelId,
        guildId: fake.guildId,
        userId: self ? fake.botUser.id : OTHER_BOT,
        content: text,
        mentionsBot: true,
        bot: true,
      });
    },
    async press({ from, chatId, messageId, choiceId }) {
      const username = usernames.get(from.id) ?? from.userName;
      const made = await fake.pressButton({
        channelId: chatId,
        messageId,
        customId: choiceId,
        userId: from.id,
        username,
      });
      return made.id;
    },
    expirePresses() {
      clock += 16_000;
    },

    shown: (chatId) =>
      fake.botMessagesOf(chatId).map(({ messageId, content, components }) => ({
        messageId,
        text: content,
        buttons: components.map((row) =>
          row.components.map((button) => ({ id: button.custom_id, label: button.label })),
        ),
      })),
    typings: (chatId) =>
      fake
        .callsTo(ROUTES.typing)
        .filter((call) => call.status === 204 && call.path === `/channels/${chatId}/typing`).length,
    answers: () =>
      fake.interactionResponses
        .filter((response) => response.status === 204)
        .map(({ interactionId, data }) => {
          const notice = (data as { content?: string } | undefined)?.content;
          return notice === undefined
            ? { pressId: interactionId }
            : { pressId: interactionId, notice };
        }),
    sendAttempts: () => fake.callsTo(ROUTES.send).length,
    files: (chatId) =>
      fake.filesOf(chatId).map((file) => ({
        messageId: file.messageId,
        name: file.filename,
        size: file.size,
        sha256: file.sha256,
        caption: file.content,
      })),
    fileAttempts: () =>
      fake.callsTo(ROUTES.send).filter((call) => Array.isArray(call.body?.files)).length,
    connections: () => fake.openGatewayConnections,
    logins: () => fake.callsTo("GET /gateway/bot").length,

    failNext(action, failure) {
      const injected =
        failure.status === 429
          ? { status: 429 as const, retryAfter: failure.retryAfterS }
          : failure;
      fake.failNext(ROUTES[action], injected);
    },
    hangNext: (action) => fake.hangNext(ROUTES[action]),
    goOffline: () => fake.goOffline(),
    goOnline: () => fake.goOnline(),
    close: () => {
      closed ??= fake.close();
      return closed;
    },
  };
}
