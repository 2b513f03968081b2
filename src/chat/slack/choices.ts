/**
 * Buttons on Slack: choices as Block Kit (a section with the text, an actions block with
 * one button per choice, `action_id` = choice id), a press (a `block_actions` payload of
 * an interactive envelope) as an {@link IncomingChoice}, and the presses not answered yet.
 *
 * Slack takes the envelope's ack as the press's answer (the button stops spinning), and
 * the adapter acks once the press is stored; a notice for the person alone goes to the
 * press's `response_url` as an ephemeral message. That URL stands for the bot for 30
 * minutes, so it stays in {@link PressUrls}, inside the adapter, and is used once.
 */
import type { Choice, ChoiceStyle, IncomingChoice } from "../../ports/index.js";
import { formatSlackChatId } from "./chat-id.js";
import { escapeSlackText, toSlackMrkdwn } from "./mrkdwn.js";

/** Slack's button styles; Slack has no "secondary" (a button without a style is one). */
const BUTTON_STYLES = {
  primary: "primary",
  danger: "danger",
  secondary: undefined,
} as const satisfies Record<ChoiceStyle, string | undefined>;

/** The longest text of a section block; a longer one is cut (the full text is `text`). */
const SECTION_TEXT_MAX = 3000;

/** How long Slack honours a press's `response_url`. */
export const RESPONSE_URL_TTL_MS = 30 * 60 * 1000;

/** One block of Block Kit, as sent. */
export type SlackBlock = Record<string, unknown>;

/** The message's text in a section, and the choices as buttons under it. */
export function choiceBlocks(
  text: string,
  markdown: boolean,
  choices: readonly Choice[],
): SlackBlock[] {
  const rendered = markdown ? toSlackMrkdwn(text) : escapeSlackText(text);
  const shown =
    rendered.length <= SECTION_TEXT_MAX ? rendered : `${rendered.slice(0, SECTION_TEXT_MAX - 1)}…`;
  const buttons = choices.map(({ id, label, style }) => {
    const slackStyle = BUTTON_STYLES[style ?? "secondary"];
    return {
      type: "button",
      action_id: id,
      value: id,
      text: { type: "plain_text", text: label, emoji: true },
      ...(slackStyle === undefined ? {} : { style: slackStyle }),
    };
  });
  return [
    { type: "section", text: { type: markdown ? "mrkdwn" : "plain_text", text: shown } },
    { type: "actions", block_id: "choices", elements: buttons },
  ];
}

/** The part of a `block_actions` payload the adapter reads. */
export interface BlockActions {
  type: "block_actions";
  trigger_id: string;
  response_url?: string;
  user: { id: string; username?: string; name?: string };
  channel?: { id: string };
  container?: { message_ts?: string; channel_id?: string; thread_ts?: string };
  message?: { ts: string; thread_ts?: string };
  actions: { action_id: string }[];
}

/** A press as the core sees it; null for a payload without a message or an action. */
export function toIncomingChoice(payload: BlockActions): IncomingChoice | null {
  const channel = payload.channel?.id ?? payload.container?.channel_id;
  const ts = payload.message?.ts ?? payload.container?.message_ts;
  const action = payload.actions[0];
  if (channel === undefined || ts === undefined || action === undefined) return null;
  const threadTs = payload.message?.thread_ts ?? payload.container?.thread_ts;
  return {
    platform: "slack",
    chatId: formatSlackChatId(channel, threadTs),
    userId: payload.user.id,
    userName: payload.user.username ?? payload.user.name ?? payload.user.id,
    direct: channel.startsWith("D"),
    messageId: ts,
    choiceId: action.action_id,
    pressId: payload.trigger_id,
  };
}

/**
 * The `response_url`s of presses not answered yet, by press id: each handed out once
 * ({@link take}) and forgotten after {@link RESPONSE_URL_TTL_MS}.
 */
export class PressUrls {
  readonly #urls = new Map<string, { url: string; at: number }>();
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /** Keeps the URL of a press that just arrived (not again for a redelivered one). */
  keep(pressId: string, url: string): void {
    const now = this.#now();
    for (const [id, kept] of this.#urls) {
      if (now - kept.at > RESPONSE_URL_TTL_MS) this.#urls.delete(id);
    }
    if (!this.#urls.has(pressId)) this.#urls.set(pressId, { url, at: now });
  }

  /** The press's URL, forgotten from now on; undefined when unknown, used or expired. */
  take(pressId: string): string | undefined {
    const kept = this.#urls.get(pressId);
    this.#urls.delete(pressId);
    if (!kept || this.#now() - kept.at > RESPONSE_URL_TTL_MS) return undefined;
    return kept.url;
  }
}
