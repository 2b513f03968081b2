/**
 * Inline keyboards for the fake Telegram Bot API: the `reply_markup` checks Telegram
 * makes, and the callback queries a press creates and `answerCallbackQuery` answers.
 *
 * A callback query can be answered once, within {@link ANSWER_WINDOW_MS} of the press;
 * an unknown id, a second answer or a late one get the same 400 Telegram gives.
 */
import type { InlineKeyboardButton, InlineKeyboardMarkup } from "telegraf/types";

/** How long after a press its callback query can be answered. */
export const ANSWER_WINDOW_MS = 15_000;
/** Longest `callback_data` Telegram takes, in bytes. */
const MAX_CALLBACK_DATA_BYTES = 64;

export const BUTTON_DATA_INVALID = "Bad Request: BUTTON_DATA_INVALID";
export const QUERY_TOO_OLD =
  "Bad Request: query is too old and response timeout expired or query ID is invalid";

/** A Bot API refusal: the fake turns it into `{ ok: false, error_code: 400, description }`. */
export class BadRequest extends Error {}

/** One answerCallbackQuery the bot made, refused ones included. */
export interface CallbackAnswer {
  /** The `callback_query_id` it answered. */
  queryId: string;
  /** The notice shown to the person, if any. */
  text?: string;
  /** 200, or 400 when refused. */
  status: number;
}

/**
 * The inline keyboard of a sendMessage or editMessageText, checked as Telegram does;
 * undefined when there is none or it has no buttons (an empty keyboard removes them).
 */
export function inlineKeyboardOf(replyMarkup: unknown): InlineKeyboardMarkup | undefined {
  if (replyMarkup === undefined) return undefined;
  const markup = (typeof replyMarkup === "string" ? JSON.parse(replyMarkup) : replyMarkup) as {
    inline_keyboard?: unknown;
  };
  const rows = markup.inline_keyboard;
  if (!Array.isArray(rows) || !rows.every(Array.isArray)) {
    throw new BadRequest("Bad Request: can't parse inline keyboard markup JSON object");
  }
  for (const button of rows.flat() as Partial<InlineKeyboardButton.CallbackButton>[]) {
    if (typeof button.text !== "string" || button.text === "") {
      throw new BadRequest("Bad Request: can't parse inline keyboard button: Text is empty");
    }
    if ("callback_data" in button && !validCallbackData(button.callback_data)) {
      throw new BadRequest(BUTTON_DATA_INVALID);
    }
  }
  const buttons = rows as InlineKeyboardButton[][];
  return buttons.some((row) => row.length > 0) ? { inline_keyboard: buttons } : undefined;
}

function validCallbackData(data: unknown): boolean {
  if (typeof data !== "string") return false;
  const bytes = Buffer.byteLength(data, "utf8");
  return bytes > 0 && bytes <= MAX_CALLBACK_DATA_BYTES;
}

/** Whether a keyboard carries a callback button with this data. */
export function hasCallbackButton(markup: InlineKeyboardMarkup | undefined, data: string): boolean {
  return (markup?.inline_keyboard ?? [])
    .flat()
    .some((button) => "callback_data" in button && button.callback_data === data);
}

/** The callback queries made, and which of them may still be answered. */
export class CallbackQueries {
  /** Every answerCallbackQuery, in order. */
  readonly answers: CallbackAnswer[] = [];
  readonly #pressedAt = new Map<string, number>();
  readonly #answered = new Set<string>();
  readonly #now: () => number;
  #nextId = 1;

  constructor(now: () => number) {
    this.#now = now;
  }

  /** A new callback query id, pressed now. */
  press(): string {
    const id = `cbq${this.#nextId++}`;
    this.#pressedAt.set(id, this.#now());
    return id;
  }

  /** answerCallbackQuery: true, or a {@link BadRequest} for an unknown, answered or late query. */
  answer(params: Record<string, unknown>): true {
    const queryId = String(params.callback_query_id ?? "");
    const text = typeof params.text === "string" ? params.text : undefined;
    const pressedAt = this.#pressedAt.get(queryId);
    const answerable =
      pressedAt !== undefined &&
      !this.#answered.has(queryId) &&
      this.#now() - pressedAt <= ANSWER_WINDOW_MS;
    const status = answerable ? 200 : 400;
    this.answers.push({ queryId, ...(text === undefined ? {} : { text }), status });
    if (!answerable) throw new BadRequest(QUERY_TOO_OLD);
    this.#answered.add(queryId);
    return true;
  }
}
