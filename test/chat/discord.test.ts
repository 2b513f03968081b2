/**
 * DiscordPlatform with the real @discordjs/ws and @discordjs/rest clients against the fake Discord REST + gateway
 * on 127.0.0.1: what it passes on, what it ignores, what it sends, and how it fails.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { afterEach, describe, expect, it } from "vitest";
import { ChatPlatformError } from "../../src/base/errors.js";
import { DiscordPlatform, type DiscordPlatformOptions } from "../../src/chat/discord/platform.js";
import type { IncomingChatMessage } from "../../src/ports/index.js";
import { type FakeDiscord, type FakeDiscordOptions, startFakeDiscord } from "../fakes/discord.js";
import { recordingLogger } from "../helpers/log.js";
import { waitFor } from "../helpers/wait.js";

const MESSAGE_CONTENT_INTENT = 1 << 15;
const DM_CHANNEL = "300000000000000001";
const USER = "400000000000000001";
const OTHER_BOT = "400000000000000002";

let fake: FakeDiscord | undefined;
let platform: DiscordPlatform | undefined;

afterEach(async () => {
  await platform?.stop();
  await fake?.close();
  platform = undefined;
  fake = undefined;
});

interface Started {
  fake: FakeDiscord;
  platform: DiscordPlatform;
  received: IncomingChatMessage[];
  lines: ReturnType<typeof recordingLogger>["lines"];
}

interface StartOptions {
  /** Adapter options beyond token, REST root and logger, given the running fake. */
  options?: (fake: FakeDiscord) => Partial<DiscordPlatformOptions>;
  fakeOptions?: FakeDiscordOptions;
  /** Called after the message is recorded. */
  onMessage?: (message: IncomingChatMessage) => void;
  /** Runs once the fake is up, before the platform starts (e.g. to inject failures). */
  beforeStart?: (fake: FakeDiscord) => void;
  /** Wait until connected. (Default: true) */
  waitUntilStarted?: boolean;
}

/** Starts the fake and a connected platform that records what it passes on. */
async function startPlatform(start: StartOptions = {}): Promise<Started> {
  fake = await startFakeDiscord(start.fakeOptions);
  const { logger, lines } = recordingLogger();
  const options = { token: fake.token, apiBase: fake.restRoot, logger, reconnectBaseMs: 1 };
  platform = new DiscordPlatform({ ...options, ...start.options?.(fake) });
  start.beforeStart?.(fake);
  const received: IncomingChatMessage[] = [];
  const started = platform.start(async (message) => {
    received.push(message);
    start.onMessage?.(message);
  });
  if (start.waitUntilStarted ?? true) await started;
  return { fake, platform, received, lines };
}

/** Waits until `count` messages have arrived; the gateway delivers in order. */
async function receivedCount(received: IncomingChatMessage[], count: number): Promise<void> {
  await waitFor(() => received.length >= count, `${count} message(s) were received`);
}

/** The log lines of failed logins. */
function couldNotConnect(lines: Started["lines"]) {
  return lines.filter((line) => line.msg === "discord: could not connect");
}

function guildMessage(f: FakeDiscord, content: string, mentionsBot = true) {
  return { channelId: f.guildChannelId, guildId: f.guildId, userId: USER, content, mentionsBot };
}

describe("DiscordPlatform receiving", () => {
  it("connects with the four intents and passes a DM on", async () => {
    const { fake, platform, received } = await startPlatform();

    const sent = await fake.sendUserMessage({
      channelId: DM_CHANNEL,
      userId: USER,
      username: "ada",
      content: "  hello there ",
    });
    await receivedCount(received, 1);

    expect(platform.state).toBe("connected");
    expect(platform.maxMessageLength).toBe(2000);
    expect(Number(fake.identifies[0]?.intents)).toBe(
      (1 << 0) | (1 << 9) | MESSAGE_CONTENT_INTENT | (1 << 12),
    );
    expect(received).toEqual([
      {
        platform: "discord",
        chatId: DM_CHANNEL,
        userId: USER,
        userName: "ada",
        text: "hello there",
        direct: true,
        messageId: sent.id,
      },
    ]);
  });

  it("passes on guild messages that mention the bot, without the mention (a bare one too)", async () => {
    const { fake, received } = await startPlatform({ options: () => ({ channelIds: [] }) });

    await fake.sendUserMessage(guildMessage(fake, "what is the weather?"));
    await fake.sendUserMessage(
      guildMessage(fake, `tell <@!${fake.botUser.id}> a joke <@${fake.botUser.id}>`),
    );
    await receivedCount(received, 2);

    await fake.sendUserMessage(guildMessage(fake, ""));
    await receivedCount(received, 3);

    expect(received.map((m) => [m.chatId, m.text, m.direct])).toEqual([
      [fake.guildChannelId, "what is the weather?", false],
      [fake.guildChannelId, "tell a joke", false],
      [fake.guildChannelId, "", false],
    ]);
  });

  it("ignores guild messages without a mention, messages without text, from bots and itself", async () => {
    const { fake, received } = await startPlatform();

    await fake.sendUserMessage(guildMessage(fake, "just chatting", false));
    await fake.sendUserMessage({
      ...guildMessage(fake, "I am a bot"),
      userId: OTHER_BOT,
      bot: true,
    });
    await fake.sendUserMessage({
      channelId: DM_CHANNEL,
      userId: OTHER_BOT,
      content: "x",
      bot: true,
    });
    await fake.sendUserMessage({ channelId: DM_CHANNEL, userId: fake.botUser.id, content: "me" });
    await fake.sendUserMessage({ channelId: DM_CHANNEL, userId: USER, content: "" });
    await fake.sendUserMessage({ channelId: DM_CHANNEL, userId: USER, content: "the only one" });
    await receivedCount(received, 1);

    expect(received.map((m) => m.text)).toEqual(["the only one"]);
  });

  it("ignores mentions outside channel_ids but still takes DMs", async () => {
    const { fake, received } = await startPlatform({
      options: () => ({ channelIds: ["999999999999999999"] }),
    });

    await fake.sendUserMessage(guildMessage(fake, "outside the filter"));
    await fake.sendUserMessage({ channelId: DM_CHANNEL, userId: USER, content: "a DM" });
    await receivedCount(received, 1);

    expect(received.map((m) => m.text)).toEqual(["a DM"]);
  });

  it("takes mentions in a channel listed in channel_ids", async () => {
    const { fake, received } = await startPlatform({
      options: (f) => ({ channelIds: ["999999999999999999", f.guildChannelId] }),
    });

    await fake.sendUserMessage(guildMessage(fake, "inside the filter"));
    await receivedCount(received, 1);

    expect(received.map((m) => m.text)).toEqual(["inside the filter"]);
  });

  it("keeps receiving when a handler throws, and logs it", async () => {
    const { fake, received, lines } = await startPlatform({
      onMessage: (message) => {
        if (message.text === "first") throw new Error("handler broke");
      },
    });

    await fake.sendUserMessage({ channelId: DM_CHANNEL, userId: USER, content: "first" });
    await fake.sendUserMessage({ channelId: DM_CHANNEL, userId: USER, content: "second" });
    await receivedCount(received, 2);

    expect(received.map((m) => m.text)).toEqual(["first", "second"]);
    expect(lines.some((line) => line.msg.includes("handler failed"))).toBe(true);
  });
});

describe("DiscordPlatform sending", () => {
  it("sends, edits and shows typing through REST, never pinging anyone", async () => {
    const { fake, platform } = await startPlatform();
    const channel = fake.guildChannelId;

    await platform.typing(channel);
    const sent = await platform.send(
      channel,
      "**Thinking** about <@123> and @everyone",
      "markdown",
    );
    await platform.edit(channel, sent.messageId, "**Done**.", "markdown");

    expect(fake.messages(channel)).toEqual(["**Done**."]);
    expect(fake.callsTo("POST /channels/:id/typing").map((call) => call.status)).toEqual([204]);
    const [post] = fake.callsTo("POST /channels/:id/messages");
    expect(post?.body).toMatchObject({ allowed_mentions: { parse: [] } });
    expect(fake.callsTo("PATCH /channels/:id/messages/:mid")).toHaveLength(1);
  });

  it("escapes Markdown in plain text so it shows literally", async () => {
    const { fake, platform } = await startPlatform();

    await platform.send(fake.guildChannelId, "code_AB_12 *not bold*", "plain");

    expect(fake.messages(fake.guildChannelId)).toEqual(["code\\_AB\\_12 \\*not bold\\*"]);
  });
});

describe("DiscordPlatform errors", () => {
  it("surfaces a 429 at once as a retryable error with the wait Discord asked for", async () => {
    const { fake, platform } = await startPlatform();
    fake.failNext("POST /channels/:id/messages", { status: 429, retryAfter: 3 });

    const error = await platform.send(fake.guildChannelId, "hi", "markdown").catch((e) => e);

    expect(error).toBeInstanceOf(ChatPlatformError);
    expect(error).toMatchObject({ retryable: true });
    expect(error.retryAfterS).toBeGreaterThanOrEqual(3);
    expect(error.message).toMatch(/rate limited/);
    expect(fake.callsTo("POST /channels/:id/messages").map((call) => call.status)).toEqual([429]);
  });

  it("paces a burst beyond Discord's 50 requests a second itself, without errors", async () => {
    const { fake, platform } = await startPlatform();
    const texts = Array.from({ length: 60 }, (_, i) => `message ${i}`);

    await Promise.all(texts.map((text) => platform.send(fake.guildChannelId, text, "markdown")));

    expect(fake.messages(fake.guildChannelId).sort()).toEqual([...texts].sort());
    expect(fake.sent.filter((call) => call.status >= 400)).toEqual([]);
  });

  it("surfaces a 500 at once as retryable, leaving retries to the core", async () => {
    const { fake, platform } = await startPlatform();
    fake.failNext("PATCH /channels/:id/messages/:mid", { status: 500 });
    const sent = await platform.send(fake.guildChannelId, "one", "markdown");

    const error = await platform
      .edit(fake.guildChannelId, sent.messageId, "two", "markdown")
      .catch((e) => e);

    expect(error).toBeInstanceOf(ChatPlatformError);
    expect(error).toMatchObject({ retryable: true });
    expect(error.message).toMatch(/could not edit a message in channel \d+: .*HTTP 500/);
    expect(fake.callsTo("PATCH /channels/:id/messages/:mid")).toHaveLength(1);
  });

  it("sends again after a 401, which @discordjs/rest answers by forgetting the token", async () => {
    const { fake, platform } = await startPlatform();
    fake.failNext("POST /channels/:id/messages", {
      status: 401,
      code: 0,
      message: "401: Unauthorized",
    });

    const refused = await platform.send(fake.guildChannelId, "one", "markdown").catch((e) => e);
    await platform.send(fake.guildChannelId, "two", "markdown");

    expect(refused).toMatchObject({ retryable: false });
    expect(fake.callsTo("POST /channels/:id/messages")).toHaveLength(2);
  });

  it("reports a refused or too long message as not retryable, naming Discord's reason", async () => {
    const { fake, platform } = await startPlatform();
    fake.failNext("POST /channels/:id/typing", {
      status: 403,
      code: 50013,
      message: "Missing Permissions",
    });

    const refused = await platform.typing(fake.guildChannelId).catch((e) => e);
    const tooLong = await platform
      .send(fake.guildChannelId, "x".repeat(2001), "markdown")
      .catch((e) => e);
    const unknown = await platform.send("123", "hi", "markdown").catch((e) => e);

    expect(refused).toMatchObject({ retryable: false });
    expect(refused.message).toMatch(/Missing Permissions \(HTTP 403, code 50013\)/);
    expect(tooLong).toMatchObject({ retryable: false });
    expect(tooLong.message).toMatch(/code 50035/);
    expect(unknown.message).toMatch(/Unknown Channel/);
  });

  it("abandons a call Discord leaves unanswered after call_timeout_s, as retryable", async () => {
    const { fake, platform } = await startPlatform({ options: () => ({ callTimeoutMs: 300 }) });
    fake.hangNext("POST /channels/:id/messages");
    const began = Date.now();

    const error = await platform.send(fake.guildChannelId, "hello?", "markdown").catch((e) => e);
    const waitedMs = Date.now() - began;
    // A slow host only makes this longer; a call that waited for its answer never returns.
    await platform.send(fake.guildChannelId, "again", "markdown");

    expect(error).toBeInstanceOf(ChatPlatformError);
    expect(error).toMatchObject({ retryable: true });
    expect(error.message).toMatch(
      /could not send a message in channel \d+: no answer within 0.3 s/,
    );
    expect(waitedMs).toBeGreaterThanOrEqual(250);
    expect(fake.messages(fake.guildChannelId)).toEqual(["again"]);
  });

  it("keeps retrying a wrong token, logging once what to fix but never the token", async () => {
    const discord = await startFakeDiscord();
    fake = discord;
    const token = "MTAwMDAwMDAwMDAwMDAwMDAx.Wrong0.this-token-is-secret";
    const { logger, lines } = recordingLogger();
    platform = new DiscordPlatform({ token, apiBase: fake.restRoot, logger, reconnectBaseMs: 1 });

    const started = platform.start(async () => {});
    await waitFor(() => discord.callsTo("GET /gateway/bot").length >= 3, "three refused logins");

    expect(platform.state).toBe("connecting");
    expect(couldNotConnect(lines)).toEqual([
      expect.objectContaining({
        level: 50,
        error: expect.stringContaining("Discord refused the bot token (HTTP 401, TokenInvalid)"),
      }),
    ]);
    expect(couldNotConnect(lines)[0]?.error).toContain("into DISCORD_BOT_TOKEN");
    await platform.stop();
    await started;
    expect(platform.state).toBe("stopped");
    expect(JSON.stringify(lines)).not.toContain(token);
  });

  it("says how to enable the Message Content intent when Discord refuses it", async () => {
    const { fake, lines } = await startPlatform({
      fakeOptions: { messageContentIntentEnabled: false },
      waitUntilStarted: false,
    });

    await waitFor(() => couldNotConnect(lines).length > 0, "a failed login was logged");

    expect(couldNotConnect(lines)[0]?.error).toMatch(/Message Content Intent/);
    expect(JSON.stringify(lines)).not.toContain(fake.token);
  });
});

describe("DiscordPlatform connection", () => {
  it("reconnects after the gateway drops the connection and keeps receiving", async () => {
    const { fake, platform, received, lines } = await startPlatform();

    fake.disconnect(4000);
    await waitFor(() => lines.some((l) => l.msg.includes("resumed")), "the session resumed");
    await fake.sendUserMessage({ channelId: DM_CHANNEL, userId: USER, content: "still there?" });
    await receivedCount(received, 1);

    expect(received.map((m) => m.text)).toEqual(["still there?"]);
    expect(platform.state).toBe("connected");
    expect(lines.map((l) => l.msg)).toContain("discord connection lost; reconnecting");
    expect(fake.identifies).toHaveLength(1);
    expect(JSON.stringify(lines)).not.toContain(fake.token);
  });

  it("keeps logging in with backoff while Discord answers 500, then connects", async () => {
    const { fake, platform, received, lines } = await startPlatform({
      beforeStart: (f) => f.failNext("GET /gateway/bot", { status: 500 }, 2),
    });
    await fake.sendUserMessage({ channelId: DM_CHANNEL, userId: USER, content: "once" });
    await receivedCount(received, 1);

    expect(platform.state).toBe("connected");
    expect(couldNotConnect(lines).map((line) => line.level)).toEqual([40, 40]);
    expect(received.map((m) => m.text)).toEqual(["once"]);
    expect(fake.identifies).toHaveLength(1);
  });

  it("logs in again when Discord ends the session for good, and keeps receiving", async () => {
    const { fake, platform, received, lines } = await startPlatform();

    fake.disconnect(4004);
    // @discordjs/ws spaces IDENTIFYs five seconds apart, as Discord demands.
    await fake.waitFor(() => fake.identifies.length === 2 && fake.connectedSessions === 1, 20_000);
    await fake.sendUserMessage({ channelId: DM_CHANNEL, userId: USER, content: "back" });
    await receivedCount(received, 1);

    expect(received.map((m) => m.text)).toEqual(["back"]);
    await waitFor(() => platform.state === "connected", "the platform is connected again");
    expect(lines.some((line) => line.msg.includes("discord gave up on the session"))).toBe(true);
  });

  it("destroys the client of a login that failed before the gateway; stop closes the retry's", async () => {
    const { fake, platform, received, lines } = await startPlatform({
      beforeStart: (f) => f.failNext("GET /gateway/bot", { status: 403, code: 0, message: "x" }),
    });
    await fake.sendUserMessage({ channelId: DM_CHANNEL, userId: USER, content: "in" });
    await receivedCount(received, 1);

    expect(couldNotConnect(lines)).toHaveLength(1);
    expect(platform.state).toBe("connected");
    expect(fake.openGatewayConnections).toBe(1);
    await platform.stop();
    await fake.waitFor(() => fake.openGatewayConnections === 0);
  });

  it("destroys the client whose IDENTIFY was refused; only the retry's connection stays", async () => {
    const { fake, platform, received, lines } = await startPlatform({
      beforeStart: (f) => f.closeNextIdentify(4014),
    });
    await fake.sendUserMessage({ channelId: DM_CHANNEL, userId: USER, content: "once" });
    await receivedCount(received, 1);

    expect(couldNotConnect(lines)[0]?.error).toMatch(/Message Content Intent/);
    expect(fake.identifies).toHaveLength(2);
    expect(fake.openGatewayConnections).toBe(1);
    expect(received.map((m) => m.text)).toEqual(["once"]);
    expect(platform.state).toBe("connected");
    await platform.stop();
    expect(platform.state).toBe("stopped");
    await fake.waitFor(() => fake.openGatewayConnections === 0);
  });

  it("abandons a login whose gateway lookup hangs when stopped, without waiting it out", async () => {
    const discord = await startFakeDiscord();
    fake = discord;
    discord.hangNext("GET /gateway/bot");
    // Waiting the lookup out would outlast the test's own limit.
    platform = new DiscordPlatform({
      token: discord.token,
      apiBase: discord.restRoot,
      callTimeoutMs: 600_000,
    });
    const started = platform.start(async () => {});
    await discord.waitFor(() => discord.callsTo("GET /gateway/bot").length === 1);

    await platform.stop();
    await started;

    expect(platform.state).toBe("stopped");
  });

  it("closes a login stopped between IDENTIFY and READY for good, with no reconnect after", async () => {
    const discord = await startFakeDiscord({ readyDelayMs: 300 });
    fake = discord;
    platform = new DiscordPlatform({ token: discord.token, apiBase: discord.restRoot });
    const started = platform.start(async () => {});
    await discord.waitFor(() => discord.identifies.length === 1);

    await platform.stop();
    await started;
    await discord.waitFor(() => discord.openGatewayConnections === 0);
    // @discordjs/ws connects a shard destroyed mid-login again after 500 ms.
    await sleep(1000);

    expect(discord.openGatewayConnections).toBe(0);
    expect(discord.gatewayQueries).toHaveLength(1);
    expect(platform.state).toBe("stopped");
  });
});
