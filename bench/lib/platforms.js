/**
 * How the chat bus benchmark drives each fake platform: one object per platform with the
 * same shape, so `bench/bus.js` measures Telegram and Discord with the same loop.
 *
 *   yaml             the platform's picklebot.yaml section, admitting every chat's user
 *   send(chat, text) a user message; resolves with the epoch ms the bot got it
 *   firstCallAt      epoch ms of the bot's first typing or message call to a chat after `since`
 *   replies(chat)    how many messages the bot has in a chat
 *   waitFor          the fake's waitFor(check, timeoutMs)
 */

const epochNow = () => performance.timeOrigin + performance.now();

/** Telegram: private chats whose chat id is the user id; delivery = the held getUpdates. */
export function telegramDriver(telegram, chatCount) {
  const chats = Array.from({ length: chatCount }, (_, i) => 1000 + i);
  return {
    name: "Telegram",
    chats,
    yaml:
      `telegram:\n  enabled: true\n  bot_token: "${telegram.token}"\n  api_root: ${telegram.apiRoot}\n` +
      `  allowed_user_ids: [${chats.join(", ")}]\n`,
    async send(chatId, text) {
      const update = telegram.sendUserMessage({ chatId, userId: chatId, text });
      const queued = telegram.updateLog.find((entry) => entry.update === update);
      await telegram.waitFor(() => queued.deliveredAt.length > 0, 15_000);
      return queued.deliveredAt[0];
    },
    async firstCallAt(chatId, since) {
      const call = await telegram.waitFor(
        () =>
          telegram.sent.find(
            (c) =>
              (c.method === "sendChatAction" || c.method === "sendMessage") &&
              Number(c.params.chat_id) === chatId &&
              c.time >= since,
          ),
        15_000,
      );
      return call.time;
    },
    replies: (chatId) => telegram.messages(chatId).length,
    waitFor: (check, timeoutMs) => telegram.waitFor(check, timeoutMs),
  };
}

/** Discord: one DM channel per user; delivery = the MESSAGE_CREATE sent on the gateway. */
export function discordDriver(discord, chatCount) {
  const chats = Array.from({ length: chatCount }, (_, i) =>
    String(300000000000000000n + BigInt(i)),
  );
  const userOf = (channelId) => String(BigInt(channelId) + 100000000000000000n);
  return {
    name: "Discord",
    chats,
    yaml:
      `discord:\n  enabled: true\n  bot_token: "${discord.token}"\n  api_base: ${discord.restRoot}\n` +
      `  allowed_user_ids: ${JSON.stringify(chats.map(userOf))}\n`,
    async send(channelId, content) {
      await discord.sendUserMessage({ channelId, userId: userOf(channelId), content });
      return epochNow();
    },
    async firstCallAt(channelId, since) {
      const call = await discord.waitFor(
        () =>
          discord.sent.find(
            (c) =>
              c.method === "POST" &&
              (c.path === `/channels/${channelId}/typing` ||
                c.path === `/channels/${channelId}/messages`) &&
              c.status < 300 &&
              c.time >= since,
          ),
        15_000,
      );
      return call.time;
    },
    replies: (channelId) => discord.messages(channelId).length,
    waitFor: (check, timeoutMs) => discord.waitFor(check, timeoutMs),
  };
}
