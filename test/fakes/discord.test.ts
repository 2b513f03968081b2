import { once } from "node:events";
import {
  ChannelType,
  Client,
  DiscordAPIError,
  Events,
  GatewayIntentBits,
  HTTPError,
  type Message,
  Partials,
  REST,
  Routes,
} from "discord.js";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { type FakeDiscord, startFakeDiscord } from "./discord.js";

const INTENTS = [
  GatewayIntentBits.Guilds,
  GatewayIntentBits.GuildMessages,
  GatewayIntentBits.MessageContent,
  GatewayIntentBits.DirectMessages,
];

describe("fake Discord REST and gateway with the real discord.js client", () => {
  let fake: FakeDiscord;
  let client: Client;

  beforeEach(async () => {
    fake = await startFakeDiscord();
    client = new Client({
      intents: INTENTS,
      partials: [Partials.Channel],
      rest: { api: fake.restRoot },
    });
  });

  afterEach(async () => {
    await client.destroy();
    await fake.close();
  });

  async function loginAndWaitReady(): Promise<void> {
    const ready = once(client, Events.ClientReady);
    await client.login(fake.token);
    await ready;
  }

  async function receive(send: () => Promise<unknown>): Promise<Message> {
    const received = once(client, Events.MessageCreate) as Promise<[Message]>;
    await send();
    const [message] = await received;
    return message;
  }

  it("logs in over uncompressed JSON, identifies with the intents and sees the guild", async () => {
    await loginAndWaitReady();

    expect(client.user?.id).toBe(fake.botUser.id);
    expect(fake.gatewayQueries).toEqual(["?v=10&encoding=json"]);
    expect(fake.identifies[0]?.intents).toBe(INTENTS.reduce((bits, intent) => bits | intent, 0));
    const guild = client.guilds.cache.get(fake.guildId);
    expect(guild?.channels.cache.get(fake.guildChannelId)?.type).toBe(ChannelType.GuildText);
    expect(fake.callsTo("GET /gateway/bot")).toHaveLength(1);
  });

  it("delivers a DM, and the reply is sent, edited and preceded by typing", async () => {
    await loginAndWaitReady();

    const dm = await receive(() =>
      fake.sendUserMessage({ channelId: "300", userId: "400", content: "hello" }),
    );
    expect(dm.channel.type).toBe(ChannelType.DM);
    expect([dm.author.id, dm.content]).toEqual(["400", "hello"]);
    if (!dm.channel.isSendable()) throw new Error("DM channel is not sendable");
    await dm.channel.sendTyping();
    const reply = await dm.channel.send("Thinking");
    await reply.edit("Thinking… done");

    expect(fake.messages("300")).toEqual(["Thinking… done"]);
    const typing = fake.callsTo("POST /channels/:id/typing");
    expect(typing.map((call) => call.status)).toEqual([204]);
    expect(fake.sent.filter((call) => call.status >= 400)).toEqual([]);
  });

  it("delivers a guild message that mentions the bot, and a reply references it", async () => {
    await loginAndWaitReady();

    const message = await receive(() =>
      fake.sendUserMessage({
        channelId: fake.guildChannelId,
        guildId: fake.guildId,
        userId: "400",
        content: "hi",
        mentionsBot: true,
      }),
    );
    expect(message.guildId).toBe(fake.guildId);
    expect(message.mentions.has(client.user?.id ?? "")).toBe(true);
    await message.reply("hello back");

    expect(fake.messages(fake.guildChannelId)).toEqual(["hello back"]);
    const [post] = fake.callsTo("POST /channels/:id/messages");
    expect(post?.body?.message_reference).toMatchObject({ message_id: message.id });
  });

  it("fetches a channel by id and opens a DM with a user it has not met", async () => {
    await loginAndWaitReady();

    const guildChannel = await client.channels.fetch(fake.guildChannelId, { force: true });
    const dm = await client.users.createDM("555");
    await dm.send("a cron result");

    expect(guildChannel?.type).toBe(ChannelType.GuildText);
    expect(dm.type).toBe(ChannelType.DM);
    expect(fake.messages(dm.id)).toEqual(["a cron result"]);
  });

  it("waits out an injected 429 and then delivers the message", async () => {
    await loginAndWaitReady();
    fake.failNext("POST /channels/:id/messages", { status: 429, retryAfter: 0.2 });
    const channel = await client.channels.fetch(fake.guildChannelId);
    if (!channel?.isSendable()) throw new Error("guild channel is not sendable");

    await channel.send("after the rate limit");

    expect(fake.callsTo("POST /channels/:id/messages").map((call) => call.status)).toEqual([
      429, 200,
    ]);
    expect(fake.messages(fake.guildChannelId)).toEqual(["after the rate limit"]);
  });

  it("surfaces a persistent 500 as HTTPError once discord.js has retried, and a too-long message as 50035", async () => {
    await loginAndWaitReady();
    const channel = await client.channels.fetch(fake.guildChannelId);
    if (!channel?.isSendable()) throw new Error("guild channel is not sendable");
    fake.failNext("POST /channels/:id/messages", { status: 500 }, 4);

    await expect(channel.send("lost")).rejects.toBeInstanceOf(HTTPError);
    const tooLong = channel.send("x".repeat(2001));
    await expect(tooLong).rejects.toBeInstanceOf(DiscordAPIError);
    await expect(tooLong).rejects.toMatchObject({ code: 50035 });
    expect(fake.messages(fake.guildChannelId)).toEqual([]);
  });

  it("refuses a nonce longer than 25 characters, and returns the first message for a repeated one", async () => {
    const rest = new REST({ api: fake.restRoot }).setToken(fake.token);
    const route = Routes.channelMessages(fake.guildChannelId);
    const send = (nonce: string) =>
      rest.post(route, { body: { content: "once", nonce, enforce_nonce: true } }) as Promise<{
        id: string;
      }>;

    const tooLong = send("n".repeat(26));
    await expect(tooLong).rejects.toBeInstanceOf(DiscordAPIError);
    await expect(tooLong).rejects.toMatchObject({ code: 50035 });
    const first = await send("n".repeat(25));
    const again = await send("n".repeat(25));
    expect(again.id).toBe(first.id);
    expect(fake.messages(fake.guildChannelId)).toEqual(["once"]);
  });

  it("resumes after the gateway drops the connection and still receives messages", async () => {
    await loginAndWaitReady();

    fake.disconnect(4000);
    const message = await receive(() =>
      fake.sendUserMessage({ channelId: "300", userId: "400", content: "still there?" }),
    );

    expect(message.content).toBe("still there?");
    expect(fake.identifies).toHaveLength(1);
  });

  it("acknowledges heartbeats, so the client keeps its first session", async () => {
    await client.destroy();
    await fake.close();
    fake = await startFakeDiscord({ heartbeatIntervalMs: 50 });
    client = new Client({
      intents: INTENTS,
      partials: [Partials.Channel],
      rest: { api: fake.restRoot },
    });
    await loginAndWaitReady();

    await fake.waitFor(() => fake.heartbeats >= 3);

    expect(client.isReady()).toBe(true);
    expect(fake.identifies).toHaveLength(1);
    expect(fake.gatewayQueries).toHaveLength(1);
  });

  it("leaves a hung request unanswered until the client's timeout, then answers the next", async () => {
    const rest = new REST({ api: fake.restRoot, retries: 0, timeout: 200 }).setToken(fake.token);
    fake.hangNext("POST /channels/:id/typing");

    await expect(rest.post(Routes.channelTyping(fake.guildChannelId))).rejects.toMatchObject({
      name: "AbortError",
    });
    await rest.post(Routes.channelTyping(fake.guildChannelId));

    expect(fake.callsTo("POST /channels/:id/typing").map((call) => call.status)).toEqual([0, 204]);
  });

  it("closes an IDENTIFY with an injected code, and counts open gateway connections", async () => {
    fake.closeNextIdentify(4014);

    await expect(client.login(fake.token)).rejects.toThrow(/disallowed intents/i);
    await fake.waitFor(() => fake.openGatewayConnections === 0);
    const second = new Client({ intents: INTENTS, rest: { api: fake.restRoot } });
    await second.login(fake.token);
    await fake.waitFor(() => fake.openGatewayConnections === 1);
    await second.destroy();

    await fake.waitFor(() => fake.openGatewayConnections === 0);
    expect(fake.identifies).toHaveLength(2);
  });

  it("goes offline: the gateway connection and REST requests are cut until it is back", async () => {
    await loginAndWaitReady();
    const rest = new REST({ api: fake.restRoot, retries: 0 }).setToken(fake.token);
    fake.goOffline();
    await fake.waitFor(() => fake.openGatewayConnections === 0);
    await expect(rest.get(Routes.gatewayBot())).rejects.toThrow(/other side closed|ECONNRESET/);
    fake.goOnline();

    expect(await rest.get(Routes.gatewayBot())).toMatchObject({ url: fake.gatewayUrl });
    await fake.waitFor(() => fake.connectedSessions === 1, 20_000);
  });

  it("rejects a wrong token at login", async () => {
    await expect(client.login("wrong.token.value")).rejects.toMatchObject({ code: "TokenInvalid" });
  });
});

describe("fake Discord refuses a wrong bot token as Discord does", () => {
  let fake: FakeDiscord;
  beforeEach(async () => {
    fake = await startFakeDiscord();
  });
  afterEach(async () => {
    await fake.close();
  });

  it("answers a REST call with 401 and Discord's body", async () => {
    const response = await fetch(`${fake.restRoot}/v10/users/@me`, {
      headers: { authorization: "Bot wrong.token.value" },
    });
    expect(response.status).toBe(401);
    expect(await response.json()).toEqual({ message: "401: Unauthorized", code: 0 });
  });

  it("closes the gateway on an IDENTIFY with a wrong token: 4004, Authentication failed.", async () => {
    const socket = new WebSocket(`${fake.gatewayUrl}/?v=10&encoding=json`);
    await once(socket, "message"); // HELLO
    socket.send(JSON.stringify({ op: 2, d: { token: "wrong.token.value", intents: 0 } }));
    const [code, reason] = (await once(socket, "close")) as [number, Buffer];
    expect([code, String(reason)]).toEqual([4004, "Authentication failed."]);
  });
});
