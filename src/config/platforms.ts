/** Which chat platforms a picklebot.yaml enables, and whom it admits on each. */
import { CHAT_PLATFORM_KINDS } from "../base/chat-address.js";
import type { ChatPlatformKind } from "../ports/index.js";
import type { Config } from "./schema.js";

/** The platforms picklebot.yaml enables (`enabled: true`, whether or not a token is set). */
export function enabledPlatforms(config: Config): ChatPlatformKind[] {
  return CHAT_PLATFORM_KINDS.filter((kind) => config[kind].enabled);
}

/** The platforms that run: enabled, with their token (Slack: both of its tokens). */
export function runnablePlatforms(config: Config): ChatPlatformKind[] {
  return enabledPlatforms(config).filter(
    (kind) =>
      Boolean(config[kind].bot_token) && (kind !== "slack" || Boolean(config.slack.app_token)),
  );
}

/** The user ids picklebot.yaml admits on a platform, as strings. */
export function allowedUserIds(config: Config, platform: ChatPlatformKind): Set<string> {
  return new Set(config[platform].allowed_user_ids.map(String));
}
