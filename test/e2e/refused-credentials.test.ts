/**
 * A credential the service refuses, seen by the owner: `picklebot server` as a child
 * process with a wrong bot token against the fake Telegram and Discord (which refuse it as
 * the real services do: Telegram's 401 "Unauthorized", Discord's REST 401 and gateway close
 * 4004), or a wrong model API key against the fake Anthropic API. The refusal is logged
 * once with the fix `picklebot doctor` gives, and shown on `/healthz`, the dashboard's
 * overview and `picklebot status`; an edit of picklebot.yaml says what needs a restart.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { CREDENTIAL_SERVICES } from "../../src/config/index.js";
import type { NewJob } from "../../src/ports/index.js";
import { type FakeAnthropic, startFakeAnthropic } from "../fakes/anthropic.js";
import { type FakeDiscord, startFakeDiscord } from "../fakes/discord.js";
import { type FakeTelegram, startFakeTelegram } from "../fakes/telegram.js";
import { discordYaml, telegramYaml, waitForBus } from "../helpers/bus.js";
import { runCli } from "../helpers/cli.js";
import { enqueueJob, killAllServers, type ServerProcess, startServer } from "../helpers/server.js";
import { waitFor } from "../helpers/wait.js";
import { fakeModelConfig, makeWorkspace, type TempWorkspace } from "../helpers/workspace.js";

const WRONG_TELEGRAM = "999:AAF-revoked-telegram-token";
const WRONG_DISCORD = "MTAwMDAwMDAwMDAwMDAwMDAx.Wrong0.revoked-discord-token";
const RIGHT_KEY = "sk-ant-the-right-key";
const WRONG_KEY = "sk-ant-revoked-key";

let model: FakeAnthropic;
let telegram: FakeTelegram;
let discord: FakeDiscord;
let ws: TempWorkspace;

beforeEach(async () => {
  model = await startFakeAnthropic({ apiKey: RIGHT_KEY });
  telegram = await startFakeTelegram();
  discord = await startFakeDiscord();
});

afterEach(async () => {
  await killAllServers();
  await Promise.all([telegram.close(), discord.close(), model.close()]);
  ws.remove();
});

/** Both chat platforms enabled, each with the token given. */
function chatYaml(tokens: { telegram: string; discord: string }): string {
  return (
    telegramYaml(telegram).replace(telegram.token, tokens.telegram) +
    discordYaml(discord).replace(discord.token, tokens.discord)
  );
}

/** picklebot.yaml with the model key and the sections given. */
function configWith(key: string, sections: string): string {
  return fakeModelConfig(model.url, sections).replace("api_key: test-key", `api_key: ${key}`);
}

async function healthOf(server: ServerProcess): Promise<{ status: number; unhealthy: string[] }> {
  const response = await server.fetch("/healthz");
  const body = (await response.json()) as { unhealthy?: string[] };
  return { status: response.status, unhealthy: body.unhealthy ?? [] };
}

async function statusText(): Promise<string> {
  const result = await runCli(["status", "--workspace", ws.dir]);
  expect(result.code).toBe(0);
  return result.stdout;
}

/** The fix `picklebot doctor` prints on the line of `check`. */
async function doctorFix(check: string): Promise<string | undefined> {
  const result = await runCli(["doctor", "--json", "--workspace", ws.dir]);
  const report = JSON.parse(result.stdout) as { checks: { check: string; fix?: string }[] };
  return report.checks.find((line) => line.check === check)?.fix;
}

describe("a bot token the platform refuses", () => {
  it("is logged once per platform with doctor's fix, and shown on /healthz, the overview and status", async () => {
    const chats = chatYaml({ telegram: WRONG_TELEGRAM, discord: WRONG_DISCORD });
    ws = makeWorkspace({ "picklebot.yaml": configWith(RIGHT_KEY, chats) });
    const server = await startServer(ws.dir);
    await waitFor(() => telegram.callsOf("getMe").length >= 4, "three retries of Telegram's getMe");
    await waitFor(
      () => discord.callsTo("GET /gateway/bot").length >= 4,
      "three retries of Discord's login",
    );

    const telegramRefusal = `Telegram refused the bot token (401 Unauthorized); ${CREDENTIAL_SERVICES.telegram.fix}`;
    const discordRefusal = `Discord refused the bot token (HTTP 401, TokenInvalid); ${CREDENTIAL_SERVICES.discord.fix}`;
    expect(server.linesMatching("telegram: could not connect")).toEqual([
      expect.objectContaining({ level: 50, error: telegramRefusal }),
    ]);
    expect(server.linesMatching("discord: could not connect")).toEqual([
      expect.objectContaining({ level: 50, error: discordRefusal }),
    ]);
    expect(await doctorFix("telegram")).toBe(CREDENTIAL_SERVICES.telegram.fix);
    expect(await doctorFix("discord")).toBe(CREDENTIAL_SERVICES.discord.fix);

    expect(await healthOf(server)).toEqual({
      status: 503,
      unhealthy: [telegramRefusal, discordRefusal],
    });
    const overview = await (await server.fetch("/")).text();
    expect(overview).toContain("Telegram refused the bot token (401 Unauthorized); ");
    expect(overview).toContain("into DISCORD_BOT_TOKEN");
    const status = await statusText();
    expect(status).toContain(`  unhealthy  ${telegramRefusal}\n`);
    expect(status).toContain(`  unhealthy  ${discordRefusal}\n`);
    expect(server.transcript()).not.toContain(WRONG_TELEGRAM);
    expect(server.transcript()).not.toContain("revoked-discord-token");
  });

  it("is told the same way when the Discord gateway closes the login with 4004", async () => {
    const chats = chatYaml({ telegram: telegram.token, discord: discord.token });
    ws = makeWorkspace({ "picklebot.yaml": configWith(RIGHT_KEY, chats) });
    discord.closeNextIdentify(4004);
    const server = await startServer(ws.dir);
    await waitForBus(server, ["telegram", "discord"]);
    const [refused] = server.linesMatching("discord: could not connect");
    expect(refused).toMatchObject({ level: 50 });
    expect(refused?.error).toContain("Discord refused the bot token (gateway close 4004");
    expect(refused?.error).toContain(CREDENTIAL_SERVICES.discord.fix);
    expect(await healthOf(server)).toEqual({ status: 200, unhealthy: [] });
  });
});

describe("a model API key the API refuses", () => {
  it("fails each job at once, logs the refusal once with doctor's fix, and shows it on /healthz and status", async () => {
    ws = makeWorkspace({ "picklebot.yaml": configWith(WRONG_KEY, "") });
    const server = await startServer(ws.dir);
    for (const n of [1, 2]) {
      const job: NewJob = {
        agentId: "pickle",
        sessionKey: `console:refused-${n}`,
        message: `hello ${n}`,
        mode: "job",
        replyTo: { kind: "silent" },
        maxAttempts: 3,
      };
      const enqueued = await enqueueJob(ws.dir, job);
      expect(await server.jobOutcomes(enqueued.id)).toMatchObject([{ outcome: "failed" }]);
    }
    const refusal = `The Anthropic API refused the API key (status 401, authentication_error: invalid x-api-key); ${CREDENTIAL_SERVICES.anthropic.fix}`;
    expect(
      server.linesMatching(
        "the model API refused the key; every model call fails until it is fixed",
      ),
    ).toEqual([expect.objectContaining({ level: 50, error: refusal })]);
    expect(await doctorFix("model key")).toBe(CREDENTIAL_SERVICES.anthropic.fix);
    expect(await healthOf(server)).toEqual({ status: 503, unhealthy: [refusal] });
    expect(await statusText()).toContain(`  unhealthy  ${refusal}\n`);
    expect(server.transcript()).not.toContain(WRONG_KEY);
  });
});

describe("picklebot.yaml edited while the server runs", () => {
  it("names the keys that need a restart, and reloads mcp_servers", async () => {
    const chats = chatYaml({ telegram: telegram.token, discord: discord.token });
    ws = makeWorkspace({ "picklebot.yaml": configWith(RIGHT_KEY, chats) });
    const server = await startServer(ws.dir);
    await waitForBus(server, ["telegram", "discord"]);
    const edited = chats
      .replace(telegram.token, "111:AAF-the-new-telegram-token")
      .replace("allowed_user_ids: []", "allowed_user_ids: [42]");
    const mcp = "mcp_servers:\n  web:\n    url: http://127.0.0.1:9/mcp\n";
    const moved = configWith(RIGHT_KEY, edited + mcp).replace(
      "  port: 0\n",
      "  port: 0\n  host: 127.0.0.2\n",
    );
    ws.write("picklebot.yaml", moved);
    const line = await server.waitForLog((entry) => entry.msg.startsWith("picklebot.yaml changed"));
    expect(line.msg).toBe(
      "picklebot.yaml changed: http.host, telegram.allowed_user_ids, telegram.bot_token need a restart; mcp_servers reloaded",
    );
    expect(line.level).toBe(40);
    expect(server.transcript()).not.toContain("AAF-the-new-telegram-token");
  });
});
