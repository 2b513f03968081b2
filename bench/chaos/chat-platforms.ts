/**
 * The fake chat platforms the chat chaos run drives (`--platform telegram|slack`), behind
 * one shape, so that chat.ts, chat-kills.ts and chat-verify.ts work alike on each:
 *
 *   yaml(chats)      the platform's picklebot.yaml section, admitting each chat's person
 *   write(chat, t)   the chat's person writes `t` (also while the server is down)
 *   shown(chat)      the bot's messages in the chat as it shows them now
 *   calls()          every send and edit the bot made, answered or refused, in order
 *   onCall           called with each send or edit once the fake answered it
 */
import { type FakeSlack, type SlackCall, startFakeSlack } from "../../test/fakes/slack.js";
import {
  type FakeTelegram,
  startFakeTelegram,
  type TelegramCall,
} from "../../test/fakes/telegram.js";
import { slackYaml, telegramYaml } from "../../test/helpers/bus.js";

/** One send or edit of the bot. */
export interface ChaosCall {
  kind: "send" | "edit";
  /** The platform accepted it. */
  ok: boolean;
  chatId: string;
  /** The message it created or edited ("" when refused). */
  messageId: string;
  /** The text it sent, as the chat shows it. */
  text: string;
  /** Epoch ms when the request reached the fake. */
  time: number;
}

/** A fake platform as the chaos run uses it; see the file header. */
export interface ChaosPlatform {
  readonly name: string;
  /** The longest message the server sends on it (its adapter's maxMessageLength). */
  readonly maxMessageLength: number;
  /** `count` chat ids. */
  chats(count: number): string[];
  yaml(chats: readonly string[]): string;
  write(chatId: string, text: string): void;
  /** The chat's person sends a photo with `caption` (absent: the platform's media is not built). */
  writePhoto?(chatId: string, bytes: Buffer, caption: string): void;
  shown(chatId: string): { messageId: string; text: string }[];
  calls(): ChaosCall[];
  onCall: ((call: ChaosCall) => void) | null;
  /** What to keep in the record of a failed run. */
  record(): unknown;
  /** One line for the summary: how many sends and edits it accepted. */
  summary(): string;
  close(): Promise<void>;
}

/** The platforms `--platform` takes. */
export const CHAOS_PLATFORMS = ["telegram", "slack"] as const;
export type ChaosPlatformName = (typeof CHAOS_PLATFORMS)[number];

export async function startChaosPlatform(name: ChaosPlatformName): Promise<ChaosPlatform> {
  return name === "slack"
    ? slackPlatform(await startFakeSlack())
    : telegramPlatform(await startFakeTelegram());
}

/** Telegram: private chats whose chat id is the person's user id. */
function telegramPlatform(telegram: FakeTelegram): ChaosPlatform {
  const toCall = (call: TelegramCall): ChaosCall | null => {
    const kind =
      call.method === "sendMessage" ? "send" : call.method === "editMessageText" ? "edit" : null;
    if (kind === null) return null;
    return {
      kind,
      ok: call.status === 200,
      chatId: String(call.params.chat_id),
      messageId: String(call.messageId ?? ""),
      // Replies are plain words: without MarkdownV2's escapes, the text as shown.
      text: String(call.params.text ?? "").replaceAll("\\", ""),
      time: call.time,
    };
  };
  const platform: ChaosPlatform = {
    name: "telegram",
    maxMessageLength: 4096,
    chats: (count) => Array.from({ length: count }, (_, i) => String(1001 + i)),
    yaml: (chats) => telegramYaml(telegram, { allowedUserIds: chats.map(Number) }),
    write(chatId, text) {
      telegram.sendUserMessage({ chatId: Number(chatId), userId: Number(chatId), text });
    },
    writePhoto(chatId, bytes, caption) {
      const person = Number(chatId);
      telegram.sendUserFile({ chatId: person, userId: person, kind: "photo", bytes, caption });
    },
    shown: (chatId) =>
      telegram
        .botMessagesOf(Number(chatId))
        .map(({ messageId, text }) => ({ messageId: String(messageId), text })),
    calls: () => telegram.sent.map(toCall).filter((call) => call !== null),
    onCall: null,
    record: () => telegram.sent,
    summary() {
      const ok = (method: string) =>
        telegram.callsOf(method).filter((c) => c.status === 200).length;
      return `${ok("sendMessage")} sendMessage, ${ok("editMessageText")} editMessageText`;
    },
    close: () => telegram.close(),
  };
  telegram.onCall = (call) => {
    const seen = toCall(call);
    if (seen) platform.onCall?.(seen);
  };
  return platform;
}

/** Slack: one DM per person (`D…`), the person's id `U…` of the same digits. */
function slackPlatform(slack: FakeSlack): ChaosPlatform {
  const userOf = (chatId: string) => `U${chatId.slice(1)}`;
  const toCall = (call: SlackCall): ChaosCall | null => {
    const kind =
      call.method === "chat.postMessage" ? "send" : call.method === "chat.update" ? "edit" : null;
    if (kind === null) return null;
    return {
      kind,
      ok: call.outcome === "ok",
      chatId: String(call.body.channel),
      messageId: call.ts ?? "",
      text: String(call.body.text ?? ""),
      time: call.time,
    };
  };
  const platform: ChaosPlatform = {
    name: "slack",
    maxMessageLength: 8000,
    chats(count) {
      return Array.from({ length: count }, (_, i) => {
        const user = `U0CHAOS${String(i).padStart(3, "0")}`;
        return slack.addPerson(user, `person${i}`);
      });
    },
    yaml: (chats) => slackYaml(slack, { allowedUserIds: chats.map(userOf) }),
    write(chatId, text) {
      slack.write({ userId: userOf(chatId), channelId: chatId, text });
    },
    writePhoto(chatId, bytes, caption) {
      const files = [{ name: "photo.jpg", mimetype: "image/jpeg", bytes }];
      slack.write({ userId: userOf(chatId), channelId: chatId, text: caption, files });
    },
    shown: (chatId) => slack.messages(chatId).map(({ ts, text }) => ({ messageId: ts, text })),
    calls: () => slack.calls.map(toCall).filter((call) => call !== null),
    onCall: null,
    record: () => slack.calls,
    summary() {
      const ok = (method: string) => slack.callsTo(method).filter((c) => c.outcome === "ok").length;
      const redelivered = slack.envelopes.filter((e) => e.sends > 1).length;
      return `${ok("chat.postMessage")} chat.postMessage, ${ok("chat.update")} chat.update, ${redelivered} events sent again (not acked before a kill)`;
    },
    close: () => slack.close(),
  };
  slack.onCall = (call) => {
    const seen = toCall(call);
    if (seen) platform.onCall?.(seen);
  };
  return platform;
}
