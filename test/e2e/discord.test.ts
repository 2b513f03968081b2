/**
 * `picklebot server` as a child process with its Discord bot on the real @discordjs/ws client,
 * talking to the fake Discord (REST + gateway) and the fake model.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { WELCOME_TEXT } from "../../src/storage/pairing-approval.js";
import { type FakeAnthropic, lastUserText, startFakeAnthropic } from "../fakes/anthropic.js";
import { type FakeDiscord, startFakeDiscord } from "../fakes/discord.js";
import { busWorkspace, discordYaml, healthz, startBusServer } from "../helpers/bus.js";
import { runCli } from "../helpers/cli.js";
import { killAllServers, startServer } from "../helpers/server.js";
import type { TempWorkspace } from "../helpers/workspace.js";

const OWNER = "400000000000000001";
const STRANGER = "400000000000000099";
const DM_CHANNEL = "300000000000000001";
const STRANGER_DM = "300000000000000099";

let anthropic: FakeAnthropic;
let discord: FakeDiscord;
let ws: TempWorkspace | undefined;

beforeEach(async () => {
  anthropic = await startFakeAnthropic({
    defaultReply: (request) => ({ text: `echo: ${lastUserText(request)}` }),
  });
  discord = await startFakeDiscord();
});

afterEach(async () => {
  await killAllServers();
  await discord.close();
  await anthropic.close();
  ws?.remove();
  ws = undefined;
});

/** Starts the server with the Discord bus enabled for OWNER, waiting until it is connected. */
async function startServerWithDiscord(options: { channelIds?: string[] } = {}) {
  ws = busWorkspace(anthropic.url, discordYaml(discord, { allowedUserIds: [OWNER], ...options }));
  return startBusServer(ws.dir, ["discord"]);
}

async function cli(...args: string[]): Promise<string> {
  const result = await runCli([...args, "--workspace", ws?.dir ?? ""]);
  if (result.code !== 0) throw new Error(`picklebot ${args.join(" ")}: ${result.stderr}`);
  return result.stdout;
}

function dm(content: string, userId = OWNER, channelId = DM_CHANNEL) {
  return discord.sendUserMessage({ channelId, userId, content });
}

/** Resolves once the bot's messages in a channel, joined, equal `text`. */
function replyIn(channelId: string, text: string): Promise<string[]> {
  return discord.waitFor(() => {
    const messages = discord.messages(channelId);
    return messages.join("") === text && messages;
  }, 15_000);
}

describe("picklebot server with a Discord bot", () => {
  it("answers a DM with a reply streamed by editing one message", async () => {
    let resume = (): void => {};
    const firstPartShown = new Promise((resolve) => {
      resume = () => resolve(undefined);
    });
    const answer = "Pickles are cucumbers that took a long bath in brine.";
    anthropic.script({ text: answer, chunks: 3, pauseAfterChunks: 1, resume: firstPartShown });
    await startServerWithDiscord();

    await dm("pickles?");
    const first = await discord.waitForCall("POST /channels/:id/messages", (call) =>
      call.path.includes(DM_CHANNEL),
    );
    resume();

    expect(await replyIn(DM_CHANNEL, answer)).toEqual([answer]);
    const firstText = String(first.body?.content);
    expect(firstText.length).toBeLessThan(answer.length);
    expect(answer.startsWith(firstText)).toBe(true);
    expect(discord.callsTo("PATCH /channels/:id/messages/:mid").length).toBeGreaterThan(0);
    expect(discord.callsTo("POST /channels/:id/typing").length).toBeGreaterThan(0);
    expect(anthropic.requests.map(lastUserText)).toEqual(["pickles?"]);
    const jobs = JSON.parse(await cli("jobs", "--json")) as { sessionKey: string }[];
    expect(jobs.map((job) => job.sessionKey)).toEqual([`discord:${DM_CHANNEL}`]);
  });

  it("answers a mention in an allowed guild channel, without the mention in the prompt", async () => {
    anthropic.script({ text: "Hello, server!" });
    await startServerWithDiscord({ channelIds: [discord.guildChannelId] });
    const inGuild = { channelId: discord.guildChannelId, guildId: discord.guildId, userId: OWNER };

    await discord.sendUserMessage({ ...inGuild, content: "not for the bot" });
    await discord.sendUserMessage({ ...inGuild, content: "say hello", mentionsBot: true });

    expect(await replyIn(discord.guildChannelId, "Hello, server!")).toHaveLength(1);
    expect(anthropic.requests.map(lastUserText)).toEqual(["say hello"]);
  });

  it("starts a fresh session of a guild channel on `@bot /new`", async () => {
    await startServerWithDiscord();
    const mention = { channelId: discord.guildChannelId, guildId: discord.guildId, userId: OWNER };
    const shown = (count: number) =>
      discord.waitFor(() => {
        const messages = discord.messages(discord.guildChannelId);
        return messages.length === count && messages;
      }, 15_000);

    await discord.sendUserMessage({ ...mention, content: "remember pickles", mentionsBot: true });
    await shown(1);
    await discord.sendUserMessage({ ...mention, content: "/new", mentionsBot: true });
    const [, started] = await shown(2);
    await discord.sendUserMessage({ ...mention, content: "what did I say?", mentionsBot: true });
    const [, , answer] = await shown(3);

    expect(started).toMatch(/^Started a new conversation/);
    expect(answer).toBe("echo: what did I say?");
    expect(anthropic.requests.map((request) => request.body.messages.length)).toEqual([1, 1]);
  });

  it("refuses an unknown user with their id and a pairing code, never calling the model", async () => {
    await startServerWithDiscord();

    await dm("hi", STRANGER, STRANGER_DM);
    const refusal = await discord.waitFor(() => discord.messages(STRANGER_DM)[0]);
    await dm("ping");
    await replyIn(DM_CHANNEL, "echo: ping");

    expect(refusal).toContain(`Your discord user id is ${STRANGER}`);
    expect(refusal).toMatch(/picklebot pairing approve [A-Z2-9]{8}/);
    expect(anthropic.requests.map(lastUserText)).toEqual(["ping"]);
  });

  it("admits a user approved with `picklebot pairing approve`, by their full snowflake id", async () => {
    await startServerWithDiscord();
    await dm("let me in", STRANGER, STRANGER_DM);
    const refusal = await discord.waitFor(() => discord.messages(STRANGER_DM)[0]);
    const code = /approve ([A-Z2-9]{8})/.exec(refusal)?.[1] ?? "";

    expect(await cli("pairing", "approve", code)).toContain(`approved discord user ${STRANGER}`);
    // The running server delivers the welcome the approval left in the outbox, in the DM.
    await replyIn(STRANGER_DM, `${refusal}${WELCOME_TEXT}`);
    await dm("now?", STRANGER, STRANGER_DM);

    expect(await replyIn(STRANGER_DM, `${refusal}${WELCOME_TEXT}echo: now?`)).toHaveLength(3);
  });

  it("splits a reply over 2000 characters at paragraph breaks", async () => {
    const paragraph = "All work and no pickles. ".repeat(30).trim();
    const answer = Array.from({ length: 6 }, () => paragraph).join("\n\n");
    anthropic.script({ text: answer, chunks: 4 });
    await startServerWithDiscord();

    await dm("long one");
    const messages = await discord.waitFor(() => {
      const sent = discord.messages(DM_CHANNEL);
      return sent.join("\n\n") === answer && sent;
    }, 15_000);

    expect(messages.map((message) => message.length)).toEqual([
      paragraph.length * 2 + 2,
      paragraph.length * 2 + 2,
      paragraph.length * 2 + 2,
    ]);
    expect(anthropic.requests).toHaveLength(1);
  });

  it("answers after the gateway dropped the connection, and never shows the token", async () => {
    const server = await startServerWithDiscord();

    discord.disconnect(4000);
    await server.waitForLog("discord connection resumed");
    await dm("still there?");
    await replyIn(DM_CHANNEL, "echo: still there?");

    expect(await healthz(server)).toMatchObject({
      buses: [{ platform: "discord", state: "connected" }],
    });
    expect(server.transcript()).not.toContain(discord.token);
  });

  it("keeps trying, and says where to enable the Message Content intent, when Discord refuses it", async () => {
    await discord.close();
    discord = await startFakeDiscord({ messageContentIntentEnabled: false });
    ws = busWorkspace(anthropic.url, discordYaml(discord, { allowedUserIds: [OWNER] }));
    const server = await startServer(ws.dir);

    await server.waitForLog((line) => JSON.stringify(line).includes("Message Content Intent"));
    const health = await server.fetch("/healthz");

    expect(health.status).toBe(503);
    expect(await health.json()).toMatchObject({
      buses: [{ platform: "discord", state: "connecting" }],
      workers: expect.arrayContaining([expect.objectContaining({ name: "bus", restarts: 0 })]),
    });
    expect(server.transcript()).not.toContain(discord.token);
  });

  it.each([
    // A 403 before the gateway; @discordjs/rest retries 5xx itself, not this.
    [
      "a lookup of the gateway",
      () => discord.failNext("GET /gateway/bot", { status: 403, code: 0, message: "flaky" }),
    ],
    ["an IDENTIFY", () => discord.closeNextIdentify(4014)],
  ])(
    "exits 0 on SIGTERM by itself after %s that failed and a retry that worked",
    async (_, fail) => {
      fail();
      const server = await startServerWithDiscord();
      expect(server.linesMatching("discord: could not connect")).toHaveLength(1);

      server.signal("SIGTERM");
      const exit = await server.exited;

      expect(exit.code).toBe(0);
      // The CLI's last resort exits after 2 s, saying what was still open: never needed here.
      expect(server.linesMatching("picklebot server stopped")).toHaveLength(1);
      expect(
        server.linesMatching("connections were still open after the stop; exiting anyway"),
      ).toEqual([]);
    },
  );
  it("exits 0 on SIGTERM by itself while a login waits for a gateway lookup never answered", async () => {
    discord.hangNext("GET /gateway/bot");
    ws = busWorkspace(anthropic.url, discordYaml(discord, { allowedUserIds: [OWNER] }));
    const server = await startServer(ws.dir);
    await discord.waitFor(() => discord.callsTo("GET /gateway/bot").length === 1);

    server.signal("SIGTERM");
    const exit = await server.exited;

    expect(exit.code).toBe(0);
    expect(
      server.linesMatching("connections were still open after the stop; exiting anyway"),
    ).toEqual([]);
  });
});
