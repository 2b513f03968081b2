/**
 * The platform factory: which {@link ChatPlatform}s the MessageBusWorker runs, built from
 * picklebot.yaml. Adding a platform is one case in {@link loadPlatformFactory} and
 * {@link enabledPlatforms} (and its `allowed_user_ids` in {@link allowedUserIds}).
 *
 * Each adapter is imported only when its platform is enabled: telegraf and discord.js are
 * the largest libraries picklebot has, and most commands (and most servers) need neither.
 */

import type { Logger } from "../../base/log.js";
import type { Config } from "../../config/index.js";
import type { ChatPlatform, ChatPlatformKind } from "../../ports/index.js";

/** What the factory may hand to a platform besides its config section. */
export interface PlatformFactoryOptions {
  logger: Logger;
}

/** The platforms picklebot.yaml enables with a token. */
export function enabledPlatforms(config: Config): ChatPlatformKind[] {
  const kinds: ChatPlatformKind[] = ["telegram", "discord"];
  return kinds.filter((kind) => config[kind].enabled && Boolean(config[kind].bot_token));
}

/**
 * Imports the adapters of the enabled platforms and returns a factory that builds them,
 * fresh and not yet started, each time it is called (each run of the MessageBusWorker).
 */
export async function loadPlatformFactory(
  config: Config,
  options: PlatformFactoryOptions,
): Promise<() => ChatPlatform[]> {
  const kinds = enabledPlatforms(config);
  const { telegram, discord } = config;
  const builders: Array<() => ChatPlatform> = [];
  if (kinds.includes("telegram")) {
    const { TelegramPlatform } = await import("../../frontends/telegram.js");
    builders.push(
      () =>
        new TelegramPlatform({
          token: telegram.bot_token ?? "",
          apiRoot: telegram.api_root,
          logger: options.logger.child({ platform: "telegram" }),
        }),
    );
  }
  if (kinds.includes("discord")) {
    const { DiscordPlatform } = await import("../../frontends/discord.js");
    builders.push(
      () =>
        new DiscordPlatform({
          token: discord.bot_token ?? "",
          apiBase: discord.api_base,
          channelIds: discord.channel_ids,
          logger: options.logger.child({ platform: "discord" }),
        }),
    );
  }
  return () => builders.map((build) => build());
}

/** The user ids picklebot.yaml admits on a platform, as strings. */
export function allowedUserIds(config: Config, platform: ChatPlatformKind): Set<string> {
  return new Set(config[platform].allowed_user_ids.map(String));
}
