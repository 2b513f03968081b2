/**
 * Person keys: the text that names someone an agent talks to, under which its memory of
 * them is kept (`src/ports/memory.ts`). Built and read only here:
 *
 * - `telegram:<user id>`, `discord:<user id>`, `slack:<member id>`: a chat platform's user
 *   (the sender's id, never a chat's: in a group chat every sender is a person of their
 *   own), its syntax the platform's `userId` of {@link CHAT_PLATFORMS}.
 * - `owner`: whoever talks through the terminal (`picklebot chat`) or the dashboard's
 *   chat; both need the workspace or the dashboard's login, so both are the owner.
 */
import { CHAT_PLATFORMS, type ChatPlatformKind, type JobSender } from "../ports/index.js";
import { CHAT_PLATFORM_KINDS, isChatPlatform } from "./chat-address.js";
import { parseSessionKey } from "./session-key.js";

/** The person key of the owner: the terminal and the dashboard. */
export const OWNER_PERSON = "owner";

/** The person key of a chat platform's user: `telegram:<user id>`. */
export function chatPersonKey(platform: ChatPlatformKind, userId: string): string {
  return `${platform}:${userId}`;
}

/** True when `text` is a person key of the forms of the file header. */
export function isPersonKey(text: string): boolean {
  if (text === OWNER_PERSON) return true;
  const separator = text.indexOf(":");
  const platform = text.slice(0, separator);
  return (
    isChatPlatform(platform) && CHAT_PLATFORMS[platform].userId.test(text.slice(separator + 1))
  );
}

/**
 * The forms a person key takes, for messages:
 * `telegram:<user id>, discord:<user id>, slack:<member id> or owner`.
 */
export const PERSON_KEY_FORMS = `${CHAT_PLATFORM_KINDS.map(
  (kind) => `${kind}:${CHAT_PLATFORMS[kind].userIdHint}`,
).join(", ")} or ${OWNER_PERSON}`;

/**
 * Who the conversation of a session key is with when no job names a sender: the owner
 * in the terminal and the dashboard, alone; nobody for any other key.
 */
export function senderOfSessionKey(sessionKey: string): JobSender | null {
  const key = parseSessionKey(sessionKey);
  return key?.kind === "console" || key?.kind === "web"
    ? { person: OWNER_PERSON, direct: true }
    : null;
}
