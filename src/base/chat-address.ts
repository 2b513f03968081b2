/**
 * Chat addresses, for every platform of {@link CHAT_PLATFORMS} alike: a chat as plain data
 * (`{ platform, chatId }`), as a job's reply target, and as text (`telegram:<chat_id>`, the
 * form of a cron's `deliver_to`).
 */
import {
  CHAT_PLATFORMS,
  type ChatPlatformKind,
  type ChatReplyTarget,
  type ReplyTarget,
} from "../ports/index.js";

/** One chat on one platform. */
export interface ChatAddress {
  platform: ChatPlatformKind;
  /** Telegram chat id, Discord channel id, … */
  chatId: string;
}

/** Every chat platform, in the order of {@link CHAT_PLATFORMS}. */
export const CHAT_PLATFORM_KINDS = Object.keys(CHAT_PLATFORMS) as ChatPlatformKind[];

/** The address forms, for messages: `telegram:<chat_id> or discord:<channel_id>`. */
export const CHAT_ADDRESS_FORMS = CHAT_PLATFORM_KINDS.map(
  (kind) => `${kind}:${CHAT_PLATFORMS[kind].chatIdHint}`,
).join(" or ");

/** True when `kind` names a chat platform. */
export function isChatPlatform(kind: unknown): kind is ChatPlatformKind {
  return typeof kind === "string" && Object.hasOwn(CHAT_PLATFORMS, kind);
}

/** The reply target of a chat. */
export function chatReplyTarget({ platform, chatId }: ChatAddress): ChatReplyTarget {
  return { kind: platform, chatId };
}

/** The chat a reply target names, or null for a target that is no chat (console, silent). */
export function chatAddressOf(target: ReplyTarget): ChatAddress | null {
  switch (target.kind) {
    case "console":
    case "silent":
      return null;
    default:
      return { platform: target.kind, chatId: target.chatId };
  }
}

/** `telegram:<chat_id>`: the text form of an address. */
export function formatChatAddress({ platform, chatId }: ChatAddress): string {
  return `${platform}:${chatId}`;
}

/** Parses `telegram:<chat_id>` and the like; null when no platform or chat id fits. */
export function parseChatAddress(text: string): ChatAddress | null {
  const separator = text.indexOf(":");
  const platform = text.slice(0, separator);
  const chatId = text.slice(separator + 1);
  if (separator < 0 || !isChatPlatform(platform)) return null;
  return CHAT_PLATFORMS[platform].chatId.test(chatId) ? { platform, chatId } : null;
}

/** A reply target as `deliver_to` writes it: `telegram:<chat_id>`, or `silent`, `console`. */
export function formatReplyTarget(target: ReplyTarget): string {
  const address = chatAddressOf(target);
  return address ? formatChatAddress(address) : target.kind;
}
