/**
 * The platform factory: which {@link ChatPlatform}s the MessageBusWorker runs, built from
 * picklebot.yaml. Adding a platform is one case in {@link createPlatforms} (and its
 * `allowed_user_ids` in {@link allowedUserIds}).
 */
import type { Config } from "../../config/index.js";
import { DiscordPlatform } from "../../frontends/discord.js";
import { TelegramPlatform } from "../../frontends/telegram.js";
import type { Logger } from "../../log.js";
import type { ChatPlatform, ChatPlatformKind } from "../../ports.js";

/** What the factory may hand to a platform besides its config section. */
export interface PlatformFactoryOptions {
  logger: Logger;
}

/** The enabled chat platforms, not yet started. */
export function createPlatforms(config: Config, options: PlatformFactoryOptions): ChatPlatform[] {
  const platforms: ChatPlatform[] = [];
  const { telegram } = config;
  if (telegram.enabled && telegram.bot_token) {
    platforms.push(
      new TelegramPlatform({
        token: telegram.bot_token,
        apiRoot: telegram.api_root,
        logger: options.logger.child({ platform: "telegram" }),
      }),
    );
  }
  const { discord } = config;
  if (discord.enabled && discord.bot_token) {
    platforms.push(
      new DiscordPlatform({
        token: discord.bot_token,
        apiBase: discord.api_base,
        channelIds: discord.channel_ids,
        logger: options.logger.child({ platform: "discord" }),
      }),
    );
  }
  return platforms;
}

/** The user ids picklebot.yaml admits on a platform, as strings. */
export function allowedUserIds(config: Config, platform: ChatPlatformKind): Set<string> {
  return new Set(config[platform].allowed_user_ids.map(String));
}
