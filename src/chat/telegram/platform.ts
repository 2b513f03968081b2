/**
 * Telegram adapter of the {@link ChatPlatform} port, on telegraf 4.16 with long polling.
 *
 * Thin on purpose: it turns updates into {@link IncomingChatMessage}s (and button presses,
 * callback queries, into {@link IncomingChoice}s), sends, edits, shows "typing…" and
 * downloads the files people send (`getFile`, then the file URL; the Bot API refuses
 * files over 20 MB with "file is too big", which the core tells the person).
 * Allowlists, sessions, streaming, splitting and retries live in the core.
 *
 *   start(): getMe + deleteWebhook (retried) ─► connected ─► poll loop, and once, beside
 *            it, setMyCommands (the command menu; a failure is logged, never fatal)
 *   poll loop: getUpdates (held open, messages and callback queries) ─► each update
 *              through telegraf's middleware, whose two handlers (a text message, a
 *              button press) convert it and hand it over, until it is stored ─► the
 *              next getUpdates confirms it (an update that could not be stored is not
 *              confirmed: the poll fails and the update comes again after backoff)
 *              a failed poll ─► connecting, retried with backoff (1 s doubling to 60 s)
 *   stop():    abort the held poll ─► confirm the offset with one getUpdates ─► stopped
 *
 * We poll ourselves instead of `bot.launch()` so that the state is visible and the offset
 * is committed on every stop. The bot token appears in every API URL: every error this
 * file produces or logs has it replaced by `[redacted]` ({@link redactSecrets}).
 */
import { Telegraf, TelegramError } from "telegraf";
import { callbackQuery } from "telegraf/filters";
import type {
  CallbackQuery,
  InlineKeyboardMarkup,
  Message,
  MessageEntity,
  Opts,
  Telegram,
  Update,
  User,
  UserFromGetMe,
} from "telegraf/types";
import { type ReconnectOptions, reconnectWithBackoff } from "../../base/backoff.js";
import { ChatPlatformError, toError } from "../../base/errors.js";
import type { Logger } from "../../base/log.js";
import { checkNumberOptions } from "../../base/options.js";
import { redactSecrets } from "../../base/redact.js";
import { credentialRefused } from "../../config/index.js";
import {
  CHAT_COMMANDS,
  type ChatAttachment,
  type ChatCommand,
  type ChatPlatform,
  type ChatPlatformState,
  type Choice,
  type FileDownload,
  type IncomingChatMessage,
  type IncomingChoice,
  type OutgoingFile,
  type SentChatMessage,
  TELEGRAM_MAX_PHOTO_BYTES,
  type TextFormat,
} from "../../ports/index.js";
import { checkChoices } from "../choices.js";
import { ConnectFailures } from "../connect-failures.js";
import { checkOutgoingFile, downloadChunks } from "../files.js";
import { toTelegramMarkdownV2 } from "./markdown.js";

/** Options of {@link TelegramPlatform}. */
export interface TelegramPlatformOptions {
  /** The bot token from BotFather. */
  token: string;
  /** Bot API root, for a local Bot API server or a test fake. (Default: https://api.telegram.org) */
  apiRoot?: string;
  logger: Logger;
  /** How long one getUpdates is held open, in seconds. (Default: 50) */
  pollTimeoutS?: number;
  /** Delay before the first reconnect; doubles up to 60 s. (Default: 1000 ms, `RECONNECT_BACKOFF`) */
  reconnectBaseMs?: number;
  /**
   * How long a Bot API call may take before it is abandoned (and retried with backoff);
   * getUpdates gets its poll timeout plus this. (Default: 30 000 ms)
   */
  callTimeoutMs?: number;
  /** The command menu set with `setMyCommands` at start. (Default: {@link CHAT_COMMANDS}) */
  commands?: readonly ChatCommand[];
}

/** Default of {@link TelegramPlatformOptions.callTimeoutMs}. */
const CALL_TIMEOUT_MS = 30_000;

const NOT_MODIFIED = /message is not modified/i;
const PARSE_ERROR = /can't parse entities|can't find end/i;
/** The updates the poll asks for: text messages, and button presses. */
const ALLOWED_UPDATES = ["message", "callback_query"] as const;
/** What an edit sends as `reply_markup`: no buttons (leaving it out removes them too). */
const NO_BUTTONS: InlineKeyboardMarkup = { inline_keyboard: [] };

/** A Telegram bot: long polling in, Bot API calls out. */
export class TelegramPlatform implements ChatPlatform {
  readonly kind = "telegram";
  readonly maxMessageLength = 4096;
  readonly #options: TelegramPlatformOptions;
  readonly #bot: Telegraf;
  readonly #abort = new AbortController();
  readonly #failures: ConnectFailures;
  #state: ChatPlatformState = "stopped";
  #offset = 0;
  #polling: Promise<void> | null = null;
  #menu: Promise<void> | null = null;

  constructor(options: TelegramPlatformOptions) {
    checkNumberOptions("TelegramPlatform", options, {
      pollTimeoutS: "non-negative",
      reconnectBaseMs: "positive",
      callTimeoutMs: "positive",
    });
    this.#options = options;
    this.#failures = new ConnectFailures(options.logger);
    this.#bot = new Telegraf(options.token, {
      telegram: options.apiRoot ? { apiRoot: options.apiRoot } : {},
    });
  }

  get state(): ChatPlatformState {
    return this.#state;
  }

  get refusal(): string | null {
    return this.#failures.refusal;
  }

  async start(
    onMessage: (message: IncomingChatMessage) => Promise<void>,
    onChoice?: (press: IncomingChoice) => Promise<void>,
  ): Promise<void> {
    this.#state = "connecting";
    this.#bot.on("message", async (ctx) => {
      const incoming = toIncoming(ctx.message, ctx.update.update_id, ctx.botInfo);
      if (incoming) await onMessage(incoming);
    });
    this.#bot.on(callbackQuery("data"), async (ctx) => {
      const press = toIncomingChoice(ctx.callbackQuery);
      if (press && onChoice) await onChoice(press);
    });
    // Not stored: the poll fails, the offset stays before this update, and the next
    // getUpdates (after backoff) hands it over again.
    this.#bot.catch((error) => {
      throw error;
    });
    await this.#connect();
    if (this.#abort.signal.aborted) return;
    this.#polling = this.#pollLoop();
    this.#menu = this.#setCommandMenu();
  }

  async stop(): Promise<void> {
    this.#abort.abort();
    await Promise.all([this.#polling, this.#menu]);
    this.#polling = null;
    this.#menu = null;
    this.#state = "stopped";
  }

  async send(chatId: string, text: string, format: TextFormat): Promise<SentChatMessage> {
    return await this.#sendMessage(chatId, text, format);
  }

  /** Sends the choices as one row of inline keyboard buttons, `callback_data` = id. */
  async sendChoices(
    chatId: string,
    text: string,
    format: TextFormat,
    choices: readonly Choice[],
  ): Promise<SentChatMessage> {
    checkChoices(this.kind, choices);
    const row = choices.map(({ id, label }) => ({ text: label, callback_data: id }));
    return await this.#sendMessage(chatId, text, format, { inline_keyboard: [row] });
  }

  /** answerCallbackQuery: `notice` shows as a toast to the person who pressed. */
  async acknowledgeChoice(press: IncomingChoice, notice?: string): Promise<void> {
    await this.#call("answerCallbackQuery", {
      callback_query_id: press.pressId,
      ...(notice === undefined ? {} : { text: notice }),
    });
  }

  async edit(chatId: string, messageId: string, text: string, format: TextFormat): Promise<void> {
    try {
      await this.#call("editMessageText", {
        chat_id: chatId,
        message_id: Number(messageId),
        text: render(text, format),
        ...extra(format),
        reply_markup: NO_BUTTONS,
      });
    } catch (error) {
      if (error instanceof ChatPlatformError && NOT_MODIFIED.test(error.message)) return;
      throw error;
    }
  }

  async typing(chatId: string): Promise<void> {
    await this.#call("sendChatAction", { chat_id: chatId, action: "typing" });
  }

  /**
   * sendVoice for a voice message, sendPhoto for an image within Telegram's photo limit,
   * sendDocument otherwise (a multipart upload each); the caption is plain text. The call
   * may take a second per MB beyond the usual timeout: an upload is slow on a slow link.
   */
  async sendFile(chatId: string, file: OutgoingFile): Promise<SentChatMessage> {
    checkOutgoingFile(this.kind, file);
    const upload = { source: file.content, filename: file.name };
    const caption = file.caption ? { caption: file.caption } : {};
    const heldS = Math.ceil(file.content.length / 1_000_000);
    const sent =
      file.kind === "voice"
        ? await this.#call("sendVoice", { chat_id: chatId, voice: upload, ...caption }, { heldS })
        : file.kind === "photo" && file.content.length <= TELEGRAM_MAX_PHOTO_BYTES
          ? await this.#call("sendPhoto", { chat_id: chatId, photo: upload, ...caption }, { heldS })
          : await this.#call(
              "sendDocument",
              { chat_id: chatId, document: upload, ...caption },
              { heldS },
            );
    return { messageId: String(sent.message_id) };
  }

  async download(attachment: ChatAttachment, signal?: AbortSignal): Promise<FileDownload> {
    const file = await this.#call("getFile", { file_id: attachment.source }, { signal }).catch(
      (thrown: unknown) => {
        throw withDownloadLimit(thrown);
      },
    );
    if (!file.file_path)
      throw new ChatPlatformError("telegram: getFile gave no file path", { retryable: true });
    const root = this.#options.apiRoot ?? "https://api.telegram.org";
    const url = `${root}/file/bot${this.#options.token}/${file.file_path}`;
    const limitMs = this.#options.callTimeoutMs ?? CALL_TIMEOUT_MS;
    const timeout = AbortSignal.timeout(limitMs * 4);
    try {
      const response = await fetch(url, {
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      });
      if (!response.ok) {
        throw new ChatPlatformError(`telegram: the file download answered ${response.status}`, {
          retryable: response.status === 429 || response.status >= 500,
        });
      }
      return downloadChunks(response, (error) => this.#scrub(error));
    } catch (error) {
      throw this.#scrub(error);
    }
  }

  async #sendMessage(
    chatId: string,
    text: string,
    format: TextFormat,
    buttons?: InlineKeyboardMarkup,
  ): Promise<SentChatMessage> {
    const sent = await this.#call("sendMessage", {
      chat_id: chatId,
      text: render(text, format),
      ...extra(format),
      ...(buttons === undefined ? {} : { reply_markup: buttons }),
    });
    return { messageId: String(sent.message_id) };
  }

  /** getMe and deleteWebhook, retried until they succeed or the platform is stopped. */
  async #connect(): Promise<void> {
    await reconnectWithBackoff(async () => {
      this.#bot.botInfo = await this.#call("getMe", {});
      await this.#call("deleteWebhook", {});
      this.#state = "connected";
      this.#failures.connected();
      this.#options.logger.info({ bot: this.#bot.botInfo.username }, "telegram connected");
    }, this.#backoff("telegram: could not connect"));
  }

  /** The "/" menu of Telegram's apps; the commands work without it, so a failure only logs. */
  async #setCommandMenu(): Promise<void> {
    const commands = (this.#options.commands ?? CHAT_COMMANDS).map(({ command, description }) => ({
      command,
      description,
    }));
    try {
      await this.#call("setMyCommands", { commands }, { signal: this.#abort.signal });
    } catch (error) {
      if (this.#abort.signal.aborted) return;
      this.#options.logger.warn(
        { error: toError(error).message },
        "telegram: could not set the command menu; the commands still work when typed",
      );
    }
  }

  async #pollLoop(): Promise<void> {
    const signal = this.#abort.signal;
    let reconnecting = false;
    const backoff = this.#backoff("telegram: polling failed");
    await reconnectWithBackoff(
      async (healthy) => {
        while (!signal.aborted) {
          const pollTimeoutS = this.#options.pollTimeoutS ?? 50;
          const updates = await this.#call(
            "getUpdates",
            { timeout: pollTimeoutS, offset: this.#offset, allowed_updates: [...ALLOWED_UPDATES] },
            { heldS: pollTimeoutS, signal },
          );
          if (reconnecting) this.#options.logger.info("telegram reconnected");
          reconnecting = false;
          healthy();
          this.#state = "connected";
          this.#failures.connected();
          await this.#handle(updates);
        }
      },
      {
        ...backoff,
        onFailure: (error, failure) => {
          reconnecting = true;
          this.#state = "connecting";
          backoff.onFailure(error, failure);
        },
      },
    );
    await this.#commitOffset();
  }

  async #handle(updates: Update[]): Promise<void> {
    for (const update of updates) {
      // The handler resolves once the message is stored; it never waits for an agent.
      await this.#bot.handleUpdate(update);
      this.#offset = update.update_id + 1;
    }
  }

  /** Confirms every update taken so far, so a restart never receives them again. */
  async #commitOffset(): Promise<void> {
    if (this.#offset === 0) return;
    try {
      await this.#call("getUpdates", { offset: this.#offset, limit: 1, timeout: 0 });
    } catch (error) {
      this.#options.logger.warn(
        { error: toError(error).message },
        "telegram: could not confirm the update offset; the last updates may arrive again",
      );
    }
  }

  /** How a failed connect or poll is retried and logged (`what` names it). */
  #backoff(what: string): ReconnectOptions {
    return {
      signal: this.#abort.signal,
      ...(this.#options.reconnectBaseMs === undefined
        ? {}
        : { baseMs: this.#options.reconnectBaseMs }),
      retryAfterMs: (error) => (this.#scrub(error).retryAfterS ?? 0) * 1000,
      onFailure: (error, { retryInMs }) => {
        this.#failures.failed(this.#scrub(error), what, retryInMs);
      },
    };
  }

  /**
   * Runs one Bot API call, abandoned after `callTimeoutMs` (plus `heldS` for a long poll
   * the server holds open) or when `signal` aborts; every failure becomes a token-free
   * {@link ChatPlatformError}, a timeout a retryable one that says so.
   */
  async #call<M extends keyof Telegram>(
    method: M,
    payload: Opts<M>,
    { heldS = 0, signal }: { heldS?: number; signal?: AbortSignal } = {},
  ): Promise<ReturnType<Telegram[M]>> {
    const limitMs = (this.#options.callTimeoutMs ?? CALL_TIMEOUT_MS) + heldS * 1000;
    const timeout = AbortSignal.timeout(limitMs);
    const abort = signal ? AbortSignal.any([signal, timeout]) : timeout;
    try {
      // telegraf types the signal of the abort-controller polyfill; node-fetch takes either.
      return await this.#bot.telegram.callApi(method, payload, { signal: abort as never });
    } catch (error) {
      if (timeout.aborted && !signal?.aborted) {
        throw new ChatPlatformError(
          `telegram: ${method} did not answer within ${limitMs / 1000} s; abandoned`,
          { retryable: true },
        );
      }
      throw this.#scrub(error);
    }
  }

  #scrub(thrown: unknown): ChatPlatformError {
    if (thrown instanceof ChatPlatformError) return thrown;
    const token = this.#options.token;
    const clean = (text: string) => redactSecrets(text, [token]);
    if (thrown instanceof TelegramError) {
      const description = clean(thrown.description);
      const answer = `${thrown.code} ${description}`;
      const refused = thrown.code === 401;
      const message = refused ? credentialRefused("telegram", answer) : `telegram: ${answer}`;
      return new ChatPlatformError(message, {
        retryable: thrown.code === 429 || thrown.code >= 500,
        credentialRefused: refused,
        retryAfterS: thrown.parameters?.retry_after,
        formatRejected: thrown.code === 400 && PARSE_ERROR.test(description),
        context: { status: thrown.code },
      });
    }
    // Network errors (node-fetch) carry the request URL, token included.
    return new ChatPlatformError(`telegram: ${clean(toError(thrown).message)}`, {
      retryable: true,
    });
  }
}

/** The Bot API's limit of a file a bot downloads (getFile). */
const TELEGRAM_MAX_DOWNLOAD_MB = 20;

/** A getFile refusal of a file over the download limit, with the limit said; else as thrown. */
function withDownloadLimit(thrown: unknown): unknown {
  if (!(thrown instanceof ChatPlatformError) || !/file is too big/i.test(thrown.message)) {
    return thrown;
  }
  return new ChatPlatformError(
    `${thrown.message} (Telegram lets bots download files up to ${TELEGRAM_MAX_DOWNLOAD_MB} MB; send it as a link, or a smaller file)`,
    { context: { status: 400 } },
  );
}

function render(text: string, format: TextFormat): string {
  return format === "markdown" ? toTelegramMarkdownV2(text) : text;
}

function extra(format: TextFormat) {
  return {
    ...(format === "markdown" ? { parse_mode: "MarkdownV2" as const } : {}),
    link_preview_options: { is_disabled: true },
  };
}

/**
 * The message as the core sees it, or null when the bot should ignore it: in groups, only
 * messages that mention the bot, reply to it, or name it in a command (`/new@bot`); and
 * service messages (someone joined, a title changed), which no person wrote to the bot.
 */
function toIncoming(
  msg: Message,
  updateId: number,
  bot: UserFromGetMe,
): IncomingChatMessage | null {
  const direct = msg.chat.type === "private";
  const handle = `@${bot.username}`;
  const said = wordsOf(msg);
  const mentioned = said.entities.some(
    (entity) =>
      (entity.type === "mention" || entity.type === "bot_command") &&
      said.text.slice(entity.offset, entity.offset + entity.length).endsWith(handle),
  );
  const repliedTo = "reply_to_message" in msg && msg.reply_to_message?.from?.id === bot.id;
  if (!direct && !mentioned && !repliedTo) return null;
  if (!msg.from || msg.from.is_bot) return null;
  const { attachments, unreadable } = filesOf(msg);
  if (said.text === "" && attachments.length === 0 && unreadable.length === 0) return null;
  const text = said.text.startsWith(handle) ? said.text.slice(handle.length).trim() : said.text;
  return {
    platform: "telegram",
    chatId: String(msg.chat.id),
    userId: String(msg.from.id),
    userName: displayName(msg.from),
    text: text.replace(new RegExp(`^(/\\w+)${handle}\\b`), "$1"),
    ...(attachments.length > 0 ? { attachments } : {}),
    ...(unreadable.length > 0 ? { unreadable } : {}),
    direct,
    messageId: String(updateId),
  };
}

/** The text of a message, or the caption of a file, with its entities. */
function wordsOf(msg: Message): { text: string; entities: MessageEntity[] } {
  if ("text" in msg) return { text: msg.text, entities: msg.entities ?? [] };
  if ("caption" in msg && msg.caption !== undefined) {
    return { text: msg.caption, entities: msg.caption_entities ?? [] };
  }
  return { text: "", entities: [] };
}

/** The files a message carries, and what it holds that picklebot cannot read. */
function filesOf(msg: Message): { attachments: ChatAttachment[]; unreadable: string[] } {
  const file = (
    kind: ChatAttachment["kind"],
    media: TelegramFile,
    name: string,
    mime?: string,
  ) => ({
    attachments: [
      {
        kind,
        source: media.file_id,
        name: media.file_name ?? name,
        ...((mime ?? media.mime_type) ? { mimeType: mime ?? media.mime_type } : {}),
        ...(media.file_size === undefined ? {} : { size: media.file_size }),
        ...(media.duration === undefined ? {} : { durationS: media.duration }),
      },
    ],
    unreadable: [],
  });
  const cannot = (what: string) => ({ attachments: [], unreadable: [what] });
  if ("photo" in msg) {
    const largest = msg.photo.reduce((a, b) => (b.width * b.height > a.width * a.height ? b : a));
    return file("image", largest, `photo-${msg.message_id}.jpg`, "image/jpeg");
  }
  if ("animation" in msg) return cannot("an animation");
  if ("document" in msg) {
    const kind = msg.document.mime_type?.startsWith("image/") ? "image" : "document";
    return file(kind, msg.document, `file-${msg.message_id}`);
  }
  if ("voice" in msg)
    return file(
      "voice",
      msg.voice,
      `voice-${msg.message_id}.ogg`,
      msg.voice.mime_type ?? "audio/ogg",
    );
  if ("audio" in msg) return file("audio", msg.audio, `audio-${msg.message_id}`);
  if ("video_note" in msg) return cannot("a video note");
  if ("video" in msg) return cannot("a video");
  if ("sticker" in msg) return cannot("a sticker");
  if ("location" in msg) return cannot("a location");
  if ("contact" in msg) return cannot("a contact");
  if ("poll" in msg) return cannot("a poll");
  if ("dice" in msg) return cannot(`a ${msg.dice.emoji} roll`);
  if ("game" in msg) return cannot("a game");
  if ("story" in msg) return cannot("a story");
  return { attachments: [], unreadable: [] };
}

/** The fields every Bot API file object has, and those some have. */
interface TelegramFile {
  file_id: string;
  file_size?: number;
  /** Seconds, for a voice note or an audio file. */
  duration?: number;
  file_name?: string;
  mime_type?: string;
}

/**
 * The press as the core sees it, or null for a button of a message sent in inline mode
 * (it has no chat), which the bot never sends.
 */
function toIncomingChoice(query: CallbackQuery.DataQuery): IncomingChoice | null {
  const msg = query.message;
  if (!msg) return null;
  return {
    platform: "telegram",
    chatId: String(msg.chat.id),
    userId: String(query.from.id),
    userName: displayName(query.from),
    direct: msg.chat.type === "private",
    messageId: String(msg.message_id),
    choiceId: query.data,
    pressId: query.id,
  };
}

/** `@username`, or the first name of a user without one. */
function displayName(user: User): string {
  return user.username ? `@${user.username}` : user.first_name;
}
