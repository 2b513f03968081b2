/**
 * What the chat chaos run checks, from the fake platform's record of every call and the
 * text each bot message shows in the end, and the outbox as the last server left it:
 *
 * - every user message got its final reply, every part of it shown in full in its chat,
 *   and its outbox entry is `delivered`; the replies of a chat began in its messages' order;
 * - no part of a final reply shows in full in two messages, except a copy sent in the
 *   window docs/guides/chat-platforms.md states ("Delivery you can trust"): the platform
 *   accepted the send and the process was killed before it stored the message id. A copy
 *   counts as such only when the process that sent it made no later call for that reply
 *   before it was killed (every later call of a reply follows the storing of the id it
 *   depends on).
 *
 * A message showing an earlier, shorter text of a reply (a stream cut by a kill, whose id
 * was not stored) is a stray partial message: allowed, and counted.
 */
import { splitMessage } from "../../src/chat/split.js";
import type { ChaosPlatform } from "./chat-platforms.js";
import { Random } from "./random.js";

/** One user message the run sent. */
export interface SentUserMessage {
  /** 1, 2, 3…: the number in its text and in every line of its reply. */
  number: number;
  chatId: string;
}

/** One server process: when it was spawned and when it was SIGKILLed (null: stopped cleanly). */
export interface Generation {
  startedAt: number;
  killedAt: number | null;
}

/** An outbox row as the last server left it. */
export interface OutboxRowSeen {
  text: string | null;
  state: string;
  messageIds: string[];
}

/** A part shown twice in full because its id was lost to a kill right after the send. */
export interface WindowCopy {
  reply: number;
  part: number;
  /** Milliseconds from the send reaching the platform to the SIGKILL (negative: it was on its way). */
  gapMs: number;
}

/** What the check found. */
export interface ChatVerdict {
  violations: string[];
  replies: number;
  parts: number;
  multiPartReplies: number;
  windowCopies: WindowCopy[];
  /** Messages left showing an earlier text of a reply, by whether their id was lost to a kill. */
  strayPartials: { lostIdGapsMs: number[]; otherwise: string[] };
}

/** The user message of number `n`. */
export function userText(n: number): string {
  return `m${n} asks for a long answer`;
}

/** The number a user message or a part of a reply belongs to, or null. */
export function numberOf(text: string): number | null {
  const match = /\bm(\d+) (?:asks|line)\b/.exec(text);
  return match ? Number(match[1]) : null;
}

/**
 * The final reply to message `n`: 80 to 13,000 characters (up to four Telegram messages,
 * one Slack message), plain words only so that the chat shows exactly what was sent. Every line names `n`,
 * so every part and every streamed prefix says which reply it belongs to.
 */
export function replyText(n: number, seed: number): string {
  const random = new Random(seed * 7919 + n);
  const size = random.pick<[number, number]>([
    [[80, 1500], 3],
    [[1500, 4000], 3],
    [[4200, 8000], 3],
    [[8200, 13000], 2],
  ]);
  const length = Math.floor(random.between(...size));
  const words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"];
  const lines: string[] = [];
  let total = 0;
  for (let line = 1; total < length; line += 1) {
    const count = 4 + random.integer(10);
    const body = Array.from({ length: count }, () => words[random.integer(words.length)]);
    const text = `m${n} line ${line} ${body.join(" ")}`;
    lines.push(line % 6 === 0 ? `${text}\n` : text);
    total += text.length + 1;
  }
  return lines.join("\n").trimEnd();
}

/** Checks the run; see the file header. */
export function verifyChat(
  platform: ChaosPlatform,
  sent: readonly SentUserMessage[],
  outbox: readonly OutboxRowSeen[],
  generations: readonly Generation[],
  seed: number,
): ChatVerdict {
  const verdict: ChatVerdict = {
    violations: [],
    replies: sent.length,
    parts: 0,
    multiPartReplies: 0,
    windowCopies: [],
    strayPartials: { lostIdGapsMs: [], otherwise: [] },
  };
  const entries = new Map<number, OutboxRowSeen>();
  for (const row of outbox) {
    const n = row.text === null ? null : numberOf(row.text);
    if (n !== null) entries.set(n, row);
  }
  const byChat = new Map<string, SentUserMessage[]>();
  for (const message of sent) {
    byChat.set(message.chatId, [...(byChat.get(message.chatId) ?? []), message]);
  }
  for (const [chatId, messages] of byChat) {
    const shown = platform.shown(chatId);
    for (const message of messages) {
      const parts = splitMessage(replyText(message.number, seed), platform.maxMessageLength);
      verdict.parts += parts.length;
      if (parts.length > 1) verdict.multiPartReplies += 1;
      const entry = entries.get(message.number);
      if (!entry) verdict.violations.push(`m${message.number}: no reply in the outbox`);
      else if (entry.state !== "delivered") {
        verdict.violations.push(`m${message.number}: its reply is ${entry.state}, not delivered`);
      }
      const context = { platform, generations, verdict, chatId, entry };
      for (const [index, part] of parts.entries()) {
        const copies = shown.filter((bot) => bot.text === part).map((bot) => bot.messageId);
        checkPart(context, message.number, index, copies);
      }
      const mine = shown.filter((bot) => numberOf(bot.text) === message.number);
      for (const stray of mine.filter((bot) => !parts.includes(bot.text))) {
        const gap = lostIdGap(context, message.number, stray.messageId);
        if (gap !== null) verdict.strayPartials.lostIdGapsMs.push(gap);
        else {
          const stored = entry?.messageIds.includes(stray.messageId) ? "stored" : "not stored";
          verdict.strayPartials.otherwise.push(
            `m${message.number}: message ${stray.messageId} (${stored}) shows ${stray.text.length} of ${parts.join("").length} characters`,
          );
        }
      }
    }
    checkOrder(verdict, chatId, shown);
    for (const bot of shown) {
      if (numberOf(bot.text) === null) {
        verdict.violations.push(`chat ${chatId}: unexpected message ${bot.text.slice(0, 120)}`);
      }
    }
  }
  return verdict;
}

/**
 * The replies of a chat began in the order of its messages: the first message showing
 * each reply (oldest first, as the chat lists them) goes up in number.
 */
function checkOrder(
  verdict: ChatVerdict,
  chatId: string,
  shown: readonly { text: string }[],
): void {
  const firsts: number[] = [];
  for (const bot of shown) {
    const n = numberOf(bot.text);
    if (n !== null && !firsts.includes(n)) firsts.push(n);
  }
  const outOfOrder = firsts.findIndex((n, i) => i > 0 && n < (firsts[i - 1] ?? 0));
  if (outOfOrder > 0) {
    verdict.violations.push(
      `chat ${chatId}: replies out of order: m${firsts[outOfOrder]} after m${firsts[outOfOrder - 1]}`,
    );
  }
}

interface PartContext {
  platform: ChaosPlatform;
  generations: readonly Generation[];
  verdict: ChatVerdict;
  chatId: string;
  entry: OutboxRowSeen | undefined;
}

function checkPart(context: PartContext, n: number, index: number, copies: string[]): void {
  const { verdict, entry } = context;
  if (copies.length === 0) {
    verdict.violations.push(`m${n}: part ${index + 1} is not shown in full in any message`);
    return;
  }
  if (copies.length === 1) return;
  const stored = entry?.messageIds[index];
  const extra = copies.filter((id) => id !== stored);
  if (extra.length === copies.length) extra.shift();
  for (const messageId of extra) {
    const gapMs = lostIdGap(context, n, messageId);
    if (gapMs === null) {
      verdict.violations.push(
        `m${n}: part ${index + 1} shown in full twice (messages ${copies.join(", ")}); the id of ${messageId} was not lost to a kill right after its send`,
      );
    } else {
      verdict.windowCopies.push({ reply: n, part: index, gapMs });
    }
  }
}

/**
 * When message `messageId` was sent by a process that was killed before it made any other
 * call for reply `n` (the id cannot have been stored): the time from the send to the kill.
 * Null otherwise.
 */
function lostIdGap(context: PartContext, n: number, messageId: string): number | null {
  const { platform, generations, chatId } = context;
  const calls = platform.calls().filter((call) => call.ok && call.chatId === chatId);
  const send = calls.find((call) => call.kind === "send" && call.messageId === messageId);
  if (!send) return null;
  // A request sent just before the SIGKILL may reach the fake just after it was decided:
  // a call belongs to the last process started before it, up to the next one's start.
  const index = generations.findLastIndex((g) => g.startedAt <= send.time);
  const killedAt = generations[index]?.killedAt ?? null;
  if (killedAt === null) return null;
  const nextStart = generations[index + 1]?.startedAt ?? Number.POSITIVE_INFINITY;
  const later = calls.some(
    (call) =>
      call.time > send.time &&
      call.time < nextStart &&
      (call.messageId === messageId || numberOf(call.text) === n),
  );
  return later ? null : killedAt - send.time;
}
