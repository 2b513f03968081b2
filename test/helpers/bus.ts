/**
 * End-to-end helpers for the chat buses: a workspace whose picklebot.yaml points the model
 * at the fake Anthropic API and enables a bus against a fake platform, and a server start
 * that waits until the bus is connected.
 *
 *   const ws = busWorkspace(anthropic.url, telegramYaml(telegram, { allowedUserIds: [42] }));
 *   const server = await startBusServer(ws.dir, ["telegram"]);
 */
import type { ChatPlatformKind } from "../../src/ports/index.js";
import type { FakeDiscord } from "../fakes/discord.js";
import type { FakeSlack } from "../fakes/slack.js";
import type { FakeTelegram } from "../fakes/telegram.js";
import { type ServerProcess, type StartServerOptions, startServer } from "./server.js";
import { fakeModelConfig, makeWorkspace, type TempWorkspace } from "./workspace.js";

/** The log line the MessageBusWorker writes once a platform is connected (`platform` field). */
export const BUS_CONNECTED = "chat platform connected";

/** The `telegram:` section of picklebot.yaml for a fake Bot API server. */
export function telegramYaml(
  fake: FakeTelegram,
  options: { allowedUserIds?: number[] } = {},
): string {
  const allowed = JSON.stringify(options.allowedUserIds ?? []);
  return `telegram:\n  enabled: true\n  bot_token: "${fake.token}"\n  api_root: ${fake.apiRoot}\n  allowed_user_ids: ${allowed}\n`;
}

/** The `discord:` section of picklebot.yaml for a fake Discord (REST root and gateway). */
export function discordYaml(
  fake: FakeDiscord,
  options: { allowedUserIds?: string[]; channelIds?: string[] } = {},
): string {
  const allowed = JSON.stringify(options.allowedUserIds ?? []);
  const channels = JSON.stringify(options.channelIds ?? []);
  return `discord:\n  enabled: true\n  bot_token: "${fake.token}"\n  api_base: ${fake.restRoot}\n  allowed_user_ids: ${allowed}\n  channel_ids: ${channels}\n`;
}

/** The `slack:` section of picklebot.yaml for a fake Slack (Web API root and Socket Mode). */
export function slackYaml(fake: FakeSlack, options: { allowedUserIds?: string[] } = {}): string {
  const allowed = JSON.stringify(options.allowedUserIds ?? []);
  return `slack:\n  enabled: true\n  bot_token: "${fake.botToken}"\n  app_token: "${fake.appToken}"\n  api_url: ${fake.apiUrl}\n  allowed_user_ids: ${allowed}\n`;
}

/** A temp workspace: the fake model, plus the bus sections (`telegramYaml`, a discord one…). */
export function busWorkspace(
  modelUrl: string,
  busYaml: string,
  files: Record<string, string> = {},
): TempWorkspace {
  return makeWorkspace({ "picklebot.yaml": fakeModelConfig(modelUrl, busYaml), ...files });
}

/** Starts `picklebot server` and waits until each named platform reports it is connected. */
export async function startBusServer(
  workspace: string,
  platforms: ChatPlatformKind[],
  options: StartServerOptions = {},
): Promise<ServerProcess> {
  const server = await startServer(workspace, options);
  await waitForBus(server, platforms);
  return server;
}

/**
 * Waits for the "connected" line of each platform on a running server (it may come before
 * or after the "started" line).
 */
export async function waitForBus(
  server: ServerProcess,
  platforms: ChatPlatformKind[],
  timeoutMs = 15_000,
): Promise<void> {
  for (const platform of platforms) {
    await server.waitForLog(
      (line) => line.msg === BUS_CONNECTED && line.platform === platform,
      timeoutMs,
    );
  }
}

/** The server's `/healthz` report. */
export async function healthz(server: ServerProcess): Promise<Record<string, unknown>> {
  const response = await server.fetch("/healthz");
  return (await response.json()) as Record<string, unknown>;
}

/**
 * Sends `/stop` in a private Telegram chat (user id = chat id) and waits until the bot
 * acknowledges it and its first message, the reply in progress, ends with "Stopped.".
 */
export async function stopTelegramReply(telegram: FakeTelegram, chatId: number): Promise<void> {
  telegram.sendUserMessage({ chatId, userId: chatId, text: "/stop" });
  await telegram.waitFor(() =>
    telegram.messages(chatId).includes("Stopping the reply in progress."),
  );
  await telegram.waitFor(() => telegram.messages(chatId)[0]?.endsWith("Stopped."), 10_000);
}

/** Waits until the bot has sent `count` messages into Telegram chat `chatId`; returns the last. */
export async function nthTelegramReply(
  telegram: FakeTelegram,
  chatId: number,
  count: number,
): Promise<string> {
  await telegram.waitFor(() => telegram.messages(chatId).length >= count, 20_000);
  return telegram.messages(chatId)[count - 1] ?? "";
}
