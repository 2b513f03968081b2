/**
 * The chat-platform registry: how each platform of {@link CHAT_PLATFORMS} is built from its
 * `picklebot.yaml` section. The MessageBusWorker and the chat senders run what it builds.
 *
 * Each adapter is imported only when its platform is enabled: telegraf, the discord.js
 * project's gateway and REST clients and the Slack clients are the largest libraries picklebot has, and most commands (and most servers) need neither.
 */
import type { Logger } from "../base/log.js";
import { type Config, runnablePlatforms } from "../config/index.js";
import type { ChatPlatform, ChatPlatformKind } from "../ports/index.js";

/** What the registry needs to build one platform's adapter. */
interface ChatPlatformEntry {
  /** Imports the adapter; resolves a builder of fresh, unstarted instances. */
  load(config: Config, logger: Logger): Promise<() => ChatPlatform>;
}

/** One entry per platform; a platform without one does not compile. */
const chatPlatformAdapters = {
  telegram: {
    async load({ telegram }, logger) {
      const { TelegramPlatform } = await import("./telegram/platform.js");
      return () =>
        new TelegramPlatform({
          token: telegram.bot_token ?? "",
          apiRoot: telegram.api_root,
          logger,
        });
    },
  },
  discord: {
    async load({ discord }, logger) {
      const { DiscordPlatform } = await import("./discord/platform.js");
      return () =>
        new DiscordPlatform({
          token: discord.bot_token ?? "",
          apiBase: discord.api_base,
          channelIds: discord.channel_ids,
          callTimeoutMs: discord.call_timeout_s * 1000,
          logger,
        });
    },
  },
  slack: {
    async load({ slack }, logger) {
      const { SlackPlatform } = await import("./slack/platform.js");
      return () =>
        new SlackPlatform({
          botToken: slack.bot_token ?? "",
          appToken: slack.app_token ?? "",
          apiUrl: slack.api_url,
          callTimeoutMs: slack.call_timeout_s * 1000,
          logger,
        });
    },
  },
} satisfies Record<ChatPlatformKind, ChatPlatformEntry>;

/**
 * Imports the adapters of the runnable platforms and returns a factory that builds them,
 * fresh and not yet started, each time it is called (each run of the MessageBusWorker).
 */
export async function loadPlatformFactory(
  config: Config,
  logger: Logger,
): Promise<() => ChatPlatform[]> {
  const builders = await Promise.all(
    runnablePlatforms(config).map((kind) =>
      chatPlatformAdapters[kind].load(config, logger.child({ platform: kind })),
    ),
  );
  return () => builders.map((build) => build());
}
