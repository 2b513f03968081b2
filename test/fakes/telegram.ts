/**
 * A fake Telegram Bot API server on 127.0.0.1 for tests that drive the real telegraf client.
 *
 * It serves `POST|GET /bot<token>/<method>` with JSON, url-encoded, multipart or query
 * parameters (telegraf 4.16 sends JSON unless a file is attached, then multipart) and
 * answers like Telegram: `{ ok: true, result }` or `{ ok: false, error_code, description }`.
 *
 * Updates follow Telegram's rules: `getUpdates` returns every update with
 * `update_id >= offset`, drops (confirms) those below it, and holds the request open until
 * an update arrives or `timeout` seconds pass. A second poller ends the first with 409.
 * Formatted text (`parse_mode` MarkdownV2 or HTML) is parsed the way Telegram does, so a
 * bad escape fails with "can't parse entities" and lengths are counted after parsing, in
 * UTF-16 code units; a text holding half a surrogate pair fails as not UTF-8; the
 * legacy "Markdown" mode is taken as plain text. Bot messages to a chat the fake has not
 * seen fail with "chat not found", as in Telegram: use `openChat` for a chat with no update.
 *
 * Buttons: a message's inline keyboard is checked (`callback_data` of 1-64 bytes, else
 * BUTTON_DATA_INVALID) and kept (`buttonsOf`); editMessageText replaces it, and removes it
 * when the edit has no `reply_markup` or an empty one, as Telegram does. `pressButton`
 * queues a callback_query update; `answerCallbackQuery` takes each query once, within 15 s
 * by the fake's clock (`telegram-buttons.ts`). `getUpdates` honours `allowed_updates`: an
 * update of a kind the bot did not ask for is never handed out.
 *
 * Files: `sendPhoto`, `sendDocument` and `sendVoice` take a multipart upload and keep its
 * name, size, SHA-256 and caption (`filesOf`); an empty file is refused with 400 "file must
 * be non-empty", a photo over 10 MB or any file over 50 MB with 413 "Request Entity Too
 * Large", a caption over 1,024 characters with 400, as the Bot API does.
 */
import { createHash } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type {
  Chat,
  InlineKeyboardButton,
  Message,
  MessageEntity,
  Update,
  UserFromGetMe,
} from "telegraf/types";
import { waitFor } from "../helpers/wait.js";
import {
  BadRequest,
  type CallbackAnswer,
  CallbackQueries,
  hasCallbackButton,
  inlineKeyboardOf,
} from "./telegram-buttons.js";

/** Options for {@link startFakeTelegram}. */
export interface FakeTelegramOptions {
  /** Bot token the fake accepts; others get 401. (Default: "123456789:TEST-fake-telegram-token") */
  token?: string;
  /** The bot's @username, without "@". (Default: "picklebot_test_bot") */
  botUsername?: string;
  /** Port to listen on, e.g. one a server was configured with before the fake ran. (Default: a free one) */
  port?: number;
  /** The clock of the 15 s a callback query may be answered in, epoch ms. (Default: Date.now) */
  now?: () => number;
}

/** A button a test user presses, see {@link FakeTelegram.pressButton}. */
export interface ButtonPressInput {
  /** The chat of the bot's message. */
  chatId: number;
  /** The bot's message carrying the button. */
  messageId: number;
  /** The `callback_data` of the button; the message must show it. */
  data: string;
  /** Who presses. */
  userId: number;
  /** Their username, without "@". (Default: none) */
  username?: string;
}

/** One message a test user sends to the bot, see {@link FakeTelegram.sendUserMessage}. */
export interface UserMessageInput {
  /** Chat id: the user's id for a private chat, a negative id for a group. */
  chatId: number;
  /** Sender's Telegram user id. */
  userId: number;
  /** Message text; a leading "/command" gets a bot_command entity, as in Telegram. */
  text: string;
  /** Kind of chat. (Default: "group" for a negative chatId, else "private") */
  chatType?: "private" | "group" | "supergroup";
  /** Make the message a reply to the bot's latest message in this chat. (Default: false) */
  replyToBot?: boolean;
  /** Mention the bot: prefixes "@<botUsername> " unless the text already has it. (Default: false) */
  mention?: boolean;
  /** Sender's username, without "@". (Default: none) */
  username?: string;
}

/**
 * What a test user sends besides text, see {@link FakeTelegram.sendUserFile}: a file
 * (`photo`, `document`, `voice`, `audio`) with its bytes, or a kind picklebot cannot read.
 */
export type UserFileInput = {
  chatId: number;
  userId: number;
  /** The caption. (Default: none) */
  caption?: string;
  /**
   * The album the file is part of: Telegram sends each file of an album as a message of
   * its own, all with one `media_group_id` and the caption on the first. (Default: none)
   */
  mediaGroupId?: string;
} & (
  | {
      kind: "photo" | "voice" | "audio" | "document";
      bytes: Uint8Array;
      name?: string;
      mimeType?: string /** The size Telegram reports. (Default: the bytes') */;
      size?: number;
    }
  | { kind: "location" | "sticker" | "contact" | "video_note" | "dice" | "story" }
);

/** The largest file the Bot API lets a bot download with getFile. */
export const BOT_DOWNLOAD_LIMIT = 20 * 1024 * 1024;

/** A failure the fake answers instead of running a method, see {@link FakeTelegram.failNext}. */
export type TelegramFailure =
  | { status: 429; retryAfter: number }
  | { status: 400 | 401 | 403 | 404 | 409; description: string }
  | { status: 500 | 502 | 503 | 504 };

/** One request the bot made, in arrival order. */
export interface TelegramCall {
  /** Bot API method as called, e.g. "sendMessage". */
  method: string;
  /** Parameters from the query string and body; form values stay strings. */
  params: Record<string, unknown>;
  /** Epoch milliseconds (fractional) when the request arrived. */
  time: number;
  /** HTTP status the fake answered (a held getUpdates is recorded as 200). */
  status: number;
  /** The message a successful sendMessage created or an editMessageText changed. */
  messageId?: number;
}

/** An update the fake queued, and when it went out in a getUpdates response. */
export interface QueuedUpdate {
  update: Update.MessageUpdate<Message.TextMessage> | Update.CallbackQueryUpdate;
  /** Epoch milliseconds (fractional) when the test queued it. */
  queuedAt: number;
  /** Each time it was returned by getUpdates (more than once if not confirmed in between). */
  deliveredAt: number[];
}

type Params = Record<string, unknown>;
type TextMessage = Message.TextMessage;
type UserChat = Exclude<Chat, Chat.ChannelChat>;
/** A new text message from a user, as `getUpdates` carries it. */
export type UserTextMessage = Update.MessageUpdate<TextMessage>["message"];

interface ChatState {
  chat: UserChat;
  nextMessageId: number;
  botMessages: Map<number, TextMessage>;
  /** Files the bot sent (sendPhoto, sendDocument, sendVoice), in order. */
  botFiles: BotFile[];
}

/** A file part of a multipart request, as the fake read it. */
export interface UploadedFile {
  filename: string;
  size: number;
  /** SHA-256 of the bytes, hex. */
  sha256: string;
}

/** A file the bot sent to a chat, see {@link FakeTelegram.filesOf}. */
export interface BotFile extends UploadedFile {
  messageId: number;
  /** How it was sent. */
  method: "sendPhoto" | "sendDocument" | "sendVoice";
  caption?: string;
}

/** The field each file method takes its upload in. */
const FILE_FIELDS = { sendphoto: "photo", senddocument: "document", sendvoice: "voice" } as const;
/** The Bot API's upload limits: 10 MB for a photo, 50 MB for any other file. */
const MAX_PHOTO_BYTES = 10_000_000;
const MAX_UPLOAD_BYTES = 50_000_000;
/** Telegram's longest caption, counted like a text. */
const MAX_CAPTION_LENGTH = 1024;

interface HeldPoll {
  offset: number;
  limit: number;
  response: ServerResponse;
  timer: NodeJS.Timeout;
}

const NOT_MODIFIED =
  "Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message";
/** Telegram counts a text's length in UTF-16 code units, as JavaScript's `length` does. */
const MAX_TEXT_LENGTH = 4096;
/** Half of a surrogate pair on its own: Telegram refuses such a text as not UTF-8. */
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;

/** An error response of the Bot API. */
class ApiFailure extends Error {
  constructor(
    readonly status: number,
    readonly description: string,
    readonly retryAfter?: number,
  ) {
    super(description);
  }

  get body(): object {
    return {
      ok: false,
      error_code: this.status,
      description: this.description,
      ...(this.retryAfter === undefined ? {} : { parameters: { retry_after: this.retryAfter } }),
    };
  }
}

/** Starts a fake Bot API server on 127.0.0.1 on a free port. Call `close()` when done. */
export async function startFakeTelegram(options: FakeTelegramOptions = {}): Promise<FakeTelegram> {
  const fake = new FakeTelegram(options);
  await fake.listen();
  return fake;
}

/** The running fake; see the file header for the protocol it follows. */
export class FakeTelegram {
  /** The token the fake accepts. */
  readonly token: string;
  /** What `getMe` returns. */
  readonly botUser: UserFromGetMe;
  /** Every request the bot made, in arrival order (including getUpdates and failures). */
  readonly sent: TelegramCall[] = [];
  /** Every update queued by the test, in order. */
  readonly updateLog: QueuedUpdate[] = [];
  /** The highest `offset` a getUpdates call confirmed (0 until one does). */
  confirmedOffset = 0;
  /** Every answerCallbackQuery, refused ones included, in order. */
  get callbackAnswers(): readonly CallbackAnswer[] {
    return this.callbackQueries.answers;
  }
  /** The update kinds of the latest getUpdates that named them; null: every kind. */
  allowedUpdates: string[] | null = null;
  /** Commands from the latest accepted setMyCommands. */
  commands: Array<{ command: string; description: string }> = [];
  /**
   * Called with each request as it is recorded, before the answer is written: a test can
   * act at the moment Telegram has accepted a send and the bot has not yet heard of it.
   */
  onCall: ((call: TelegramCall) => void) | null = null;

  private readonly server: Server;
  private readonly chats = new Map<number, ChatState>();
  private readonly failures = new Map<string, { failure: TelegramFailure; remaining: number }[]>();
  private readonly polls = new Set<HeldPoll>();
  private readonly hangs = new Map<string, number>();
  private pending: QueuedUpdate[] = [];
  private nextUpdateId = 1;
  private readonly port: number;
  private readonly callbackQueries: CallbackQueries;
  /** Set by {@link goOffline}: requests are cut as they arrive. */
  private offline = false;
  /** Files users sent, by file_id, with their reported size. */
  private readonly files = new Map<string, { bytes: Uint8Array; size: number }>();
  /** Every file download (GET /file/bot<token>/<path>), by file_id. */
  readonly downloads: string[] = [];
  /**
   * While true, a file download is held without an answer (a slow file server) until
   * {@link releaseDownloads}. (Default: false)
   */
  holdDownloads = false;
  /** Downloads held by {@link holdDownloads}, each answered when called. */
  private readonly heldDownloads: Array<() => void> = [];

  constructor(options: FakeTelegramOptions = {}) {
    this.token = options.token ?? "123456789:TEST-fake-telegram-token";
    this.callbackQueries = new CallbackQueries(options.now ?? Date.now);
    this.port = options.port ?? 0;
    this.botUser = {
      id: Number(this.token.split(":")[0]) || 123456789,
      is_bot: true,
      first_name: "Picklebot Test",
      username: options.botUsername ?? "picklebot_test_bot",
      can_join_groups: true,
      can_read_all_group_messages: false,
      supports_inline_queries: false,
    };
    this.server = createServer((request, response) => {
      this.handle(request, response).catch((error: unknown) => {
        response.writeHead(500).end(String(error));
      });
    });
  }

  /** Root URL for telegraf's `new Telegraf(token, { telegram: { apiRoot } })`. */
  get apiRoot(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** Listens on 127.0.0.1, port 0. */
  async listen(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(this.port, "127.0.0.1", resolve));
  }

  /** Ends held polls and open connections, then stops listening. */
  async close(): Promise<void> {
    for (const poll of this.polls) this.answerPoll(poll, []);
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeAllConnections();
    await closed;
  }

  /** Registers a chat the bot may write to without an update (a user who pressed Start earlier). */
  openChat(
    chatId: number,
    chatType: UserMessageInput["chatType"] = chatId < 0 ? "group" : "private",
  ): UserChat {
    const existing = this.chats.get(chatId);
    if (existing) return existing.chat;
    const chat: UserChat =
      chatType === "private"
        ? { id: chatId, type: "private", first_name: `User ${chatId}` }
        : { id: chatId, type: chatType, title: `Test group ${chatId}` };
    this.chats.set(chatId, { chat, nextMessageId: 1, botMessages: new Map(), botFiles: [] });
    return chat;
  }

  /** Queues a text message from a user; the bot receives it through getUpdates. */
  sendUserMessage(input: UserMessageInput): Update.MessageUpdate<TextMessage> {
    this.openChat(input.chatId, input.chatType);
    const state = this.chatState(input.chatId);
    const { text, entities } = this.userText(input);
    const message: UserTextMessage = {
      message_id: state.nextMessageId++,
      from: { id: input.userId, is_bot: false, first_name: `User ${input.userId}` },
      chat: state.chat,
      date: Math.floor(Date.now() / 1000),
      text,
      ...(entities.length > 0 ? { entities } : {}),
      ...(input.replyToBot ? { reply_to_message: this.latestBotMessage(input.chatId) } : {}),
    };
    if (input.username !== undefined) message.from.username = input.username;
    return this.queue({ update_id: this.nextUpdateId++, message });
  }

  /**
   * Queues a message carrying a file or another kind of content, as Telegram's apps send
   * them: a photo in several sizes, a document with its name and type, a voice note
   * (OGG/Opus), a location, a sticker. Files are served by getFile and the file URL.
   */
  sendUserFile(input: UserFileInput): Update.MessageUpdate<TextMessage> {
    this.openChat(input.chatId);
    const state = this.chatState(input.chatId);
    const message_id = state.nextMessageId++;
    const content = this.fileContent(input, message_id);
    const message = {
      message_id,
      from: { id: input.userId, is_bot: false, first_name: `User ${input.userId}` },
      chat: state.chat,
      date: Math.floor(Date.now() / 1000),
      ...content,
      ...(input.caption === undefined ? {} : { caption: input.caption }),
      ...(input.mediaGroupId === undefined ? {} : { media_group_id: input.mediaGroupId }),
    } as unknown as UserTextMessage;
    return this.queue({ update_id: this.nextUpdateId++, message });
  }

  private fileContent(input: UserFileInput, messageId: number): Record<string, unknown> {
    if (!("bytes" in input)) {
      const kinds = {
        location: { location: { latitude: 52.52, longitude: 13.4 } },
        sticker: {
          sticker: {
            file_id: `sticker-${messageId}`,
            file_unique_id: "s",
            type: "regular",
            width: 512,
            height: 512,
            is_animated: false,
            is_video: false,
          },
        },
        contact: { contact: { phone_number: "+100", first_name: "Ann" } },
        video_note: {
          video_note: { file_id: `vn-${messageId}`, file_unique_id: "v", length: 240, duration: 3 },
        },
        dice: { dice: { emoji: "🎲", value: 4 } },
        story: { story: { chat: this.chatState(input.chatId).chat, id: 7 } },
      };
      return kinds[input.kind];
    }
    const file_id = `${input.kind}-${messageId}-${this.files.size}`;
    const size = input.size ?? input.bytes.byteLength;
    this.files.set(file_id, { bytes: input.bytes, size });
    const file = { file_id, file_unique_id: `u${file_id}`, file_size: size };
    switch (input.kind) {
      case "photo":
        return {
          photo: [
            { ...file, file_id: `${file_id}-small`, width: 90, height: 90 },
            { ...file, width: 1280, height: 960 },
          ],
        };
      case "voice":
        return { voice: { ...file, duration: 2, mime_type: input.mimeType ?? "audio/ogg" } };
      case "audio":
        return {
          audio: {
            ...file,
            duration: 2,
            file_name: input.name,
            mime_type: input.mimeType ?? "audio/mpeg",
          },
        };
      case "document":
        return {
          document: {
            ...file,
            file_name: input.name ?? "file",
            mime_type: input.mimeType ?? "application/octet-stream",
          },
        };
    }
  }

  /** getFile: the file's path, or the Bot API's refusal of a file over 20 MB. */
  private getFile(params: Params): unknown {
    const fileId = String(params.file_id);
    const file = this.files.get(fileId) ?? this.files.get(fileId.replace(/-small$/, ""));
    if (!file) throw new ApiFailure(400, "Bad Request: invalid file_id");
    if (file.size > BOT_DOWNLOAD_LIMIT) throw new ApiFailure(400, "Bad Request: file is too big");
    return {
      file_id: fileId,
      file_unique_id: `u${fileId}`,
      file_size: file.size,
      file_path: `files/${fileId}`,
    };
  }

  /**
   * Queues a callback_query update, as when a user presses a button of a bot message; the
   * query can then be answered for 15 s. Throws when the message shows no such button.
   */
  pressButton(input: ButtonPressInput): Update.CallbackQueryUpdate {
    const message = this.chatState(input.chatId).botMessages.get(input.messageId);
    if (!hasCallbackButton(message?.reply_markup, input.data)) {
      throw new Error(
        `pressButton: message ${input.messageId} in chat ${input.chatId} shows no button "${input.data}"`,
      );
    }
    const from = { id: input.userId, is_bot: false, first_name: `User ${input.userId}` };
    const callback_query = {
      id: this.callbackQueries.press(),
      from: input.username === undefined ? from : { ...from, username: input.username },
      message: message as TextMessage,
      chat_instance: String(input.chatId),
      data: input.data,
    };
    return this.queue({ update_id: this.nextUpdateId++, callback_query });
  }

  /** The inline keyboard a bot message shows now, row by row; [] when it has none. */
  buttonsOf(chatId: number, messageId: number): InlineKeyboardButton[][] {
    const message = this.chats.get(chatId)?.botMessages.get(messageId);
    return message?.reply_markup?.inline_keyboard ?? [];
  }

  /** Number of getUpdates requests held open now, waiting for updates. */
  get heldPolls(): number {
    return this.polls.size;
  }

  /**
   * Cuts the network: every held getUpdates is dropped without an answer, and until
   * {@link goOnline} every new request is cut as it arrives. Updates stay queued.
   */
  goOffline(): void {
    this.offline = true;
    for (const poll of this.polls) {
      this.forgetPoll(poll);
      poll.response.socket?.destroy();
    }
  }

  /** Lets requests through again after {@link goOffline}. */
  goOnline(): void {
    this.offline = false;
  }

  /**
   * Makes the next `times` calls of `method` never answer, as over a half-open connection
   * (the request is recorded with status 0; a held getUpdates takes no update).
   */
  hangNext(method: string, times = 1): void {
    const key = method.toLowerCase();
    this.hangs.set(key, (this.hangs.get(key) ?? 0) + times);
  }

  /** Makes the next `times` calls of `method` fail with `failure` instead of running. */
  failNext(method: string, failure: TelegramFailure, times = 1): void {
    const queue = this.failures.get(method.toLowerCase()) ?? [];
    queue.push({ failure, remaining: times });
    this.failures.set(method.toLowerCase(), queue);
  }

  /** Drops every failure injected with {@link failNext} and not used yet: the API recovers. */
  clearFailures(): void {
    this.failures.clear();
  }

  /** Current text (after edits, without deleted ones) of each bot message in a chat, in order. */
  messages(chatId: number): string[] {
    return [...(this.chats.get(chatId)?.botMessages.values() ?? [])].map((message) => message.text);
  }

  /** Each bot message in a chat (not deleted) with its id and current text, in order. */
  botMessagesOf(chatId: number): { messageId: number; text: string }[] {
    const messages = this.chats.get(chatId)?.botMessages.values() ?? [];
    return [...messages].map((message) => ({ messageId: message.message_id, text: message.text }));
  }

  /** The files the bot sent to a chat, in order (refused ones are not among them). */
  filesOf(chatId: number): BotFile[] {
    return [...(this.chats.get(chatId)?.botFiles ?? [])];
  }

  /** Calls of one method, in order. */
  callsOf(method: string): TelegramCall[] {
    return this.sent.filter((call) => call.method === method);
  }

  /**
   * Resolves with the first truthy value of `check` (the shared {@link waitFor}); rejects
   * after `timeoutMs` with the latest calls in the message.
   */
  waitFor<T>(check: () => T | false | null | undefined, timeoutMs = 5000): Promise<T> {
    const recent = () => this.sent.slice(-8).map((call) => `${call.method} ${call.status}`);
    return waitFor(
      check,
      () => `a change of the fake; last calls: ${recent()}`,
      timeoutMs,
    ) as Promise<T>;
  }

  /** Waits for a successful call of `method` matching `match`, and returns it. */
  waitForCall(
    method: string,
    match: (call: TelegramCall) => boolean = () => true,
    timeoutMs = 5000,
  ): Promise<TelegramCall> {
    return this.waitFor(
      () => this.sent.find((c) => c.method === method && c.status === 200 && match(c)),
      timeoutMs,
    );
  }

  private queue<U extends QueuedUpdate["update"]>(update: U): U {
    const queued = { update, queuedAt: epochNow(), deliveredAt: [] };
    this.updateLog.push(queued);
    this.pending.push(queued);
    this.flushPolls();
    return update;
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    if (this.offline) return void request.socket.destroy();
    const url = new URL(request.url ?? "/", "http://127.0.0.1");
    const download = /^\/file\/bot([^/]+)\/files\/(.+)$/.exec(url.pathname);
    if (download) return this.serveFile(download[1] ?? "", download[2] ?? "", response);
    const route = /^\/bot([^/]+)\/(\w+)$/.exec(url.pathname);
    const params = await readParams(request, url);
    if (!route) return void reply(response, new ApiFailure(404, "Not Found"));
    const [, token, method = ""] = route;
    const call: TelegramCall = { method, params, time: epochNow(), status: 200 };
    try {
      if (token !== this.token) throw new ApiFailure(401, "Unauthorized");
      const hangs = this.hangs.get(method.toLowerCase()) ?? 0;
      if (hangs > 0) {
        this.hangs.set(method.toLowerCase(), hangs - 1);
        this.record({ ...call, status: 0 });
        return;
      }
      this.throwInjectedFailure(method);
      if (method.toLowerCase() === "getupdates") {
        this.record(call);
        return this.getUpdates(params, response);
      }
      const result = this.runMethod(method, params);
      if (isTextMessage(result)) call.messageId = result.message_id;
      this.record(call);
      reply(response, result);
    } catch (thrown) {
      const error = thrown instanceof BadRequest ? new ApiFailure(400, thrown.message) : thrown;
      if (!(error instanceof ApiFailure)) throw error;
      call.status = error.status;
      this.record(call);
      reply(response, error);
    }
  }

  private serveFile(token: string, fileId: string, response: ServerResponse): void {
    const file = this.files.get(fileId);
    if (token !== this.token || !file) return void response.writeHead(404).end("Not Found");
    this.downloads.push(fileId);
    const answer = () =>
      response.writeHead(200, { "content-type": "application/octet-stream" }).end(file.bytes);
    if (this.holdDownloads) this.heldDownloads.push(answer);
    else answer();
  }

  /** Number of file downloads held now by {@link holdDownloads}. */
  get heldDownloadCount(): number {
    return this.heldDownloads.length;
  }

  /** Stops holding downloads, and answers those held. */
  releaseDownloads(): void {
    this.holdDownloads = false;
    for (const answer of this.heldDownloads.splice(0)) answer();
  }

  private record(call: TelegramCall): void {
    this.sent.push(call);
    this.onCall?.(call);
  }

  private throwInjectedFailure(method: string): void {
    const queue = this.failures.get(method.toLowerCase());
    const next = queue?.[0];
    if (!queue || !next) return;
    next.remaining -= 1;
    if (next.remaining <= 0) queue.shift();
    const { failure } = next;
    if (failure.status === 429) {
      const description = `Too Many Requests: retry after ${failure.retryAfter}`;
      throw new ApiFailure(429, description, failure.retryAfter);
    }
    throw new ApiFailure(failure.status, "description" in failure ? failure.description : "");
  }

  private runMethod(method: string, params: Params): unknown {
    switch (method.toLowerCase()) {
      case "getme":
        return this.botUser;
      case "getfile":
        return this.getFile(params);
      case "deletewebhook":
      case "close":
        return true;
      case "getwebhookinfo":
        return {
          url: "",
          has_custom_certificate: false,
          pending_update_count: this.pending.length,
        };
      case "sendmessage":
        return this.sendMessage(params);
      case "sendphoto":
      case "senddocument":
      case "sendvoice":
        return this.sendFile(method.toLowerCase() as keyof typeof FILE_FIELDS, params);
      case "editmessagetext":
        return this.editMessageText(params);
      case "deletemessage":
        return this.deleteMessage(params);
      case "answercallbackquery":
        return this.callbackQueries.answer(params);
      case "sendchataction":
        this.chatState(params.chat_id);
        return true;
      case "setmycommands":
        this.commands = checkBotCommands(parseJsonField(params.commands));
        return true;
      case "getmycommands":
        return this.commands;
      case "deletemycommands":
        this.commands = [];
        return true;
      default:
        throw new ApiFailure(404, "Not Found");
    }
  }

  private sendMessage(params: Params): TextMessage {
    const state = this.chatState(params.chat_id);
    const { text, entities } = parseFormatted(params);
    const keyboard = inlineKeyboardOf(params.reply_markup);
    const replyTo = state.botMessages.get(Number(params.reply_to_message_id));
    const message: TextMessage = {
      message_id: state.nextMessageId++,
      from: this.botUser,
      chat: state.chat,
      date: Math.floor(Date.now() / 1000),
      text,
      ...(entities.length > 0 ? { entities } : {}),
      ...(replyTo ? { reply_to_message: { ...replyTo, reply_to_message: undefined } } : {}),
      ...(keyboard ? { reply_markup: keyboard } : {}),
    };
    state.botMessages.set(message.message_id, message);
    return message;
  }

  /**
   * A file upload, refused as the Bot API refuses it: no file, an empty one ("file must be
   * non-empty"), one over the upload limit (413 "Request Entity Too Large"), a caption
   * over 1024 characters. Answers a message with the file's id, not its bytes.
   */
  private sendFile(method: keyof typeof FILE_FIELDS, params: Params): Message {
    const state = this.chatState(params.chat_id);
    const field = FILE_FIELDS[method];
    const upload = params[field] as UploadedFile | string | undefined;
    if (typeof upload !== "object") {
      throw new ApiFailure(400, `Bad Request: there is no ${field} in the request`);
    }
    if (upload.size === 0) throw new ApiFailure(400, "Bad Request: file must be non-empty");
    const limit = field === "photo" ? MAX_PHOTO_BYTES : MAX_UPLOAD_BYTES;
    if (upload.size > limit) throw new ApiFailure(413, "Request Entity Too Large");
    const caption = typeof params.caption === "string" ? params.caption : undefined;
    if (caption !== undefined && caption.length > MAX_CAPTION_LENGTH) {
      throw new ApiFailure(400, "Bad Request: message caption is too long");
    }
    const messageId = state.nextMessageId++;
    const name = `send${field[0]?.toUpperCase()}${field.slice(1)}` as BotFile["method"];
    state.botFiles.push({
      ...upload,
      messageId,
      method: name,
      ...(caption ? { caption } : {}),
    });
    const file = { file_id: upload.sha256, file_unique_id: upload.sha256.slice(0, 16) };
    return {
      message_id: messageId,
      from: this.botUser,
      chat: state.chat,
      date: Math.floor(Date.now() / 1000),
      ...(caption ? { caption } : {}),
      [field]: field === "photo" ? [{ ...file, width: 1, height: 1 }] : file,
    } as unknown as Message;
  }

  private editMessageText(params: Params): TextMessage {
    const state = this.chatState(params.chat_id);
    const message = state.botMessages.get(Number(params.message_id));
    if (!message) throw new ApiFailure(400, "Bad Request: message to edit not found");
    const { text, entities } = parseFormatted(params);
    // No reply_markup, or an empty one, removes the keyboard.
    const keyboard = inlineKeyboardOf(params.reply_markup);
    const sameEntities = JSON.stringify(entities) === JSON.stringify(message.entities ?? []);
    const sameKeyboard = JSON.stringify(keyboard) === JSON.stringify(message.reply_markup);
    if (message.text === text && sameEntities && sameKeyboard) {
      throw new ApiFailure(400, NOT_MODIFIED);
    }
    const edited: TextMessage = { ...message, text, edit_date: Math.floor(Date.now() / 1000) };
    setOrDelete(edited, "entities", entities.length > 0 ? entities : undefined);
    setOrDelete(edited, "reply_markup", keyboard);
    state.botMessages.set(message.message_id, edited);
    return edited;
  }

  private deleteMessage(params: Params): true {
    const state = this.chatState(params.chat_id);
    if (!state.botMessages.delete(Number(params.message_id))) {
      throw new ApiFailure(400, "Bad Request: message to delete not found");
    }
    return true;
  }

  private chatState(chatId: unknown): ChatState {
    if (chatId === undefined || chatId === "")
      throw new ApiFailure(400, "Bad Request: chat_id is empty");
    const state = this.chats.get(Number(chatId));
    if (!state) throw new ApiFailure(400, "Bad Request: chat not found");
    return state;
  }

  private latestBotMessage(chatId: number): TextMessage & { reply_to_message: undefined } {
    const latest = [...this.chatState(chatId).botMessages.values()].at(-1);
    if (!latest) throw new Error(`replyToBot: the bot has not written in chat ${chatId} yet`);
    // Telegram does not nest replies: the quoted message carries no reply_to_message.
    return { ...latest, reply_to_message: undefined };
  }

  private userText(input: UserMessageInput): { text: string; entities: MessageEntity[] } {
    const handle = `@${this.botUser.username}`;
    const text =
      input.mention && !input.text.includes(handle) ? `${handle} ${input.text}` : input.text;
    const entities: MessageEntity[] = [];
    const command = /^\/\w+(@\w+)?/.exec(text);
    if (command) entities.push({ type: "bot_command", offset: 0, length: command[0].length });
    const mentionAt = text.indexOf(handle);
    if (mentionAt >= 0 && !command?.[0].includes(handle)) {
      entities.push({ type: "mention", offset: mentionAt, length: handle.length });
    }
    return { text, entities };
  }

  private getUpdates(params: Params, response: ServerResponse): void {
    const offset = Number(params.offset ?? 0);
    const limit = Math.min(Math.max(Number(params.limit ?? 100), 1), 100);
    const timeoutS = Number(params.timeout ?? 0);
    const allowed = parseJsonField(params.allowed_updates) as string[] | undefined;
    if (allowed !== undefined) this.allowedUpdates = allowed.length > 0 ? allowed : null;
    if (offset > 0) {
      this.pending = this.pending.filter((queued) => queued.update.update_id >= offset);
      this.confirmedOffset = Math.max(this.confirmedOffset, offset);
    }
    for (const poll of this.polls) {
      const conflict =
        "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running";
      this.answerPoll(poll, new ApiFailure(409, conflict));
    }
    const poll: HeldPoll = {
      offset,
      limit,
      response,
      timer: setTimeout(() => this.answerPoll(poll, []), timeoutS * 1000),
    };
    this.polls.add(poll);
    response.on("close", () => this.forgetPoll(poll));
    if (timeoutS <= 0 || this.available(poll).length > 0)
      this.answerPoll(poll, this.available(poll));
  }

  private available(poll: HeldPoll): QueuedUpdate[] {
    return this.pending
      .filter((queued) => queued.update.update_id >= poll.offset && this.allowed(queued.update))
      .slice(0, poll.limit);
  }

  private allowed(update: QueuedUpdate["update"]): boolean {
    const kind = "message" in update ? "message" : "callback_query";
    return this.allowedUpdates === null || this.allowedUpdates.includes(kind);
  }

  private flushPolls(): void {
    for (const poll of this.polls) {
      const ready = this.available(poll);
      if (ready.length > 0) this.answerPoll(poll, ready);
    }
  }

  private answerPoll(poll: HeldPoll, result: QueuedUpdate[] | ApiFailure): void {
    this.forgetPoll(poll);
    if (poll.response.writableEnded || poll.response.destroyed) return;
    if (Array.isArray(result)) {
      const time = epochNow();
      for (const queued of result) queued.deliveredAt.push(time);
      reply(
        poll.response,
        result.map((queued) => queued.update),
      );
    } else {
      reply(poll.response, result);
    }
  }

  private forgetPoll(poll: HeldPoll): void {
    clearTimeout(poll.timer);
    this.polls.delete(poll);
  }
}

/** Sets `key` of `message` to `value`, or removes it when undefined. */
function setOrDelete<K extends "entities" | "reply_markup">(
  message: TextMessage,
  key: K,
  value: TextMessage[K] | undefined,
): void {
  if (value === undefined) delete message[key];
  else message[key] = value;
}

function isTextMessage(result: unknown): result is TextMessage {
  return typeof result === "object" && result !== null && "message_id" in result;
}

function sha256Of(content: Buffer): string {
  return createHash("sha256").update(content).digest("hex");
}

function epochNow(): number {
  return performance.timeOrigin + performance.now();
}

function reply(response: ServerResponse, result: unknown): void {
  const failure = result instanceof ApiFailure ? result : undefined;
  const body = JSON.stringify(failure ? failure.body : { ok: true, result });
  response.writeHead(failure?.status ?? 200, { "content-type": "application/json" }).end(body);
}

function parseJsonField(value: unknown): unknown {
  return typeof value === "string" ? JSON.parse(value) : value;
}

async function readParams(request: IncomingMessage, url: URL): Promise<Params> {
  const params: Params = Object.fromEntries(url.searchParams);
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  const body = Buffer.concat(chunks);
  const type = request.headers["content-type"] ?? "";
  if (body.length === 0) return params;
  if (type.startsWith("application/json")) return { ...params, ...JSON.parse(body.toString()) };
  if (type.startsWith("application/x-www-form-urlencoded")) {
    return { ...params, ...Object.fromEntries(new URLSearchParams(body.toString())) };
  }
  const boundary = /boundary=(.+)$/.exec(type)?.[1];
  return boundary ? { ...params, ...readMultipart(body, boundary) } : params;
}

/** Text fields as strings; file parts as {@link UploadedFile}. */
function readMultipart(body: Buffer, boundary: string): Params {
  const params: Params = {};
  for (const part of body.toString("latin1").split(`--${boundary}`)) {
    const split = part.indexOf("\r\n\r\n");
    if (split < 0) continue;
    const headers = part.slice(0, split);
    const content = Buffer.from(part.slice(split + 4).replace(/\r\n$/, ""), "latin1");
    const name = /name="([^"]*)"/.exec(headers)?.[1];
    const filename = /filename="([^"]*)"/.exec(headers)?.[1];
    if (name === undefined) continue;
    params[name] =
      filename === undefined
        ? content.toString("utf8")
        : { filename, size: content.length, sha256: sha256Of(content) };
  }
  return params;
}

/** Applies `parse_mode` like Telegram: returns the plain text and entities, or a 400. */
function parseFormatted(params: Params): { text: string; entities: MessageEntity[] } {
  const source = typeof params.text === "string" ? params.text : String(params.text ?? "");
  if (LONE_SURROGATE.test(source))
    throw new ApiFailure(400, "Bad Request: text must be encoded in UTF-8");
  const mode = String(params.parse_mode ?? "");
  const parsed =
    mode === "MarkdownV2"
      ? parseMarkdownV2(source)
      : mode === "HTML"
        ? parseHtml(source)
        : { text: source, entities: (parseJsonField(params.entities) as MessageEntity[]) ?? [] };
  if (parsed.text.trim() === "") throw new ApiFailure(400, "Bad Request: message text is empty");
  if (parsed.text.length > MAX_TEXT_LENGTH)
    throw new ApiFailure(400, "Bad Request: message is too long");
  parsed.entities.sort((a, b) => a.offset - b.offset || b.length - a.length);
  return parsed;
}

/** At most this many commands per menu; longer lists fail with BOT_COMMANDS_TOO_MUCH. */
const MAX_BOT_COMMANDS = 100;

/**
 * The command list as setMyCommands stores it, or the Bot API's refusal: a command of 1-32
 * lowercase letters, digits and `_`; a description of 1-256 characters once trimmed.
 */
function checkBotCommands(value: unknown): Array<{ command: string; description: string }> {
  if (value === undefined) return [];
  if (!Array.isArray(value))
    throw new ApiFailure(400, "Bad Request: can't parse commands JSON object");
  if (value.length > MAX_BOT_COMMANDS)
    throw new ApiFailure(400, "Bad Request: BOT_COMMANDS_TOO_MUCH");
  return value.map((entry: unknown) => {
    const { command, description } = (entry ?? {}) as Record<string, unknown>;
    if (typeof command !== "string")
      throw new ApiFailure(400, `Bad Request: can't parse BotCommand: Can't find field "command"`);
    if (typeof description !== "string")
      throw new ApiFailure(
        400,
        `Bad Request: can't parse BotCommand: Can't find field "description"`,
      );
    const text = description.trim();
    if (command === "") throw new ApiFailure(400, "Bad Request: command must be non-empty");
    if (command.length > 32)
      throw new ApiFailure(400, "Bad Request: command length must not exceed 32");
    if (!/^[a-z0-9_]+$/.test(command))
      throw new ApiFailure(400, "Bad Request: BOT_COMMAND_INVALID");
    if (text === "")
      throw new ApiFailure(400, "Bad Request: command description must be non-empty");
    if ([...text].length > 256)
      throw new ApiFailure(400, "Bad Request: command description length must not exceed 256");
    return { command, description: text };
  });
}

const MARKDOWN_V2_RESERVED = new Set("_*[]()~`>#+-=|{}.!");
const ENTITY_NAMES: Record<string, string> = {
  bold: "Bold",
  italic: "Italic",
  underline: "Underline",
  strikethrough: "Strikethrough",
  spoiler: "Spoiler",
  text_link: "TextUrl",
};

function entityError(reason: string): ApiFailure {
  return new ApiFailure(400, `Bad Request: can't parse entities: ${reason}`);
}

/** MarkdownV2 as documented in the Bot API "Formatting options" section. */
function parseMarkdownV2(source: string): { text: string; entities: MessageEntity[] } {
  const entities: MessageEntity[] = [];
  const open: { type: MessageEntity["type"]; offset: number; at: number }[] = [];
  const byteOffset = (index: number): number => Buffer.byteLength(source.slice(0, index));
  let text = "";
  let quoteStart: number | undefined;
  let i = 0;
  const toggle = (type: MessageEntity["type"], width: number): void => {
    const top = open.at(-1);
    if (top?.type === type) {
      open.pop();
      if (text.length > top.offset)
        entities.push({
          type,
          offset: top.offset,
          length: text.length - top.offset,
        } as MessageEntity);
    } else if (open.some((entity) => entity.type === type) && top) {
      throw entityError(
        `Can't find end of ${ENTITY_NAMES[top.type]} entity at byte offset ${byteOffset(top.at)}`,
      );
    } else {
      open.push({ type, offset: text.length, at: i });
    }
    i += width;
  };
  const closeQuote = (): void => {
    if (quoteStart !== undefined)
      entities.push({ type: "blockquote", offset: quoteStart, length: text.length - quoteStart });
    quoteStart = undefined;
  };
  while (i < source.length) {
    const char = source[i] ?? "";
    const next = source[i + 1];
    const lineStart = i === 0 || source[i - 1] === "\n";
    if (lineStart && (char === ">" || source.startsWith("**>", i))) {
      quoteStart ??= text.length;
      i += char === ">" ? 1 : 3;
    } else if (lineStart && quoteStart !== undefined) {
      closeQuote();
    } else if (char === "\\") {
      if (next === undefined)
        throw entityError(`Character '\\' is reserved and must be escaped with the preceding '\\'`);
      text += next;
      i += 2;
    } else if (char === "`") {
      const code = readCode(source, i, byteOffset);
      if (code.text.length > 0)
        entities.push({
          ...code.entity,
          offset: text.length,
          length: code.text.length,
        } as MessageEntity);
      text += code.text;
      i = code.end;
    } else if (char === "*") toggle("bold", 1);
    else if (char === "_") toggle(next === "_" ? "underline" : "italic", next === "_" ? 2 : 1);
    else if (char === "~") toggle("strikethrough", 1);
    else if (char === "|" && next === "|") toggle("spoiler", 2);
    else if (char === "[") {
      open.push({ type: "text_link", offset: text.length, at: i });
      i += 1;
    } else if (char === "]" && open.at(-1)?.type === "text_link") {
      const link = open.pop() as { offset: number; at: number };
      const url = readUntilUnescaped(source, i + 2, ")");
      if (next !== "(" || url === undefined)
        throw entityError(`Can't find end of a URL at byte offset ${byteOffset(i + 1)}`);
      entities.push({
        type: "text_link",
        offset: link.offset,
        length: text.length - link.offset,
        url: url.value,
      });
      i = url.end + 1;
    } else if (MARKDOWN_V2_RESERVED.has(char)) {
      throw entityError(
        `Character '${char}' is reserved and must be escaped with the preceding '\\'`,
      );
    } else {
      text += char;
      i += 1;
    }
  }
  closeQuote();
  const unclosed = open[0];
  if (unclosed)
    throw entityError(
      `Can't find end of ${ENTITY_NAMES[unclosed.type]} entity at byte offset ${byteOffset(unclosed.at)}`,
    );
  return { text, entities };
}

function readUntilUnescaped(
  source: string,
  from: number,
  terminator: string,
): { value: string; end: number } | undefined {
  let value = "";
  for (let i = from; i < source.length; i += 1) {
    const char = source[i];
    if (char === "\\") {
      value += source[i + 1] ?? "";
      i += 1;
    } else if (source.startsWith(terminator, i)) {
      return { value, end: i };
    } else {
      value += char;
    }
  }
  return undefined;
}

/** Reads `inline code` or a ```pre block``` starting at `at`. */
function readCode(
  source: string,
  at: number,
  byteOffset: (index: number) => number,
): { text: string; end: number; entity: { type: "code" } | { type: "pre"; language?: string } } {
  const fence = source.startsWith("```", at) ? "```" : "`";
  const body = readUntilUnescaped(source, at + fence.length, fence);
  const name = fence === "```" ? "Pre" : "Code";
  if (!body) throw entityError(`Can't find end of ${name} entity at byte offset ${byteOffset(at)}`);
  const end = body.end + fence.length;
  if (fence === "`") return { text: body.value, end, entity: { type: "code" } };
  const firstLine = /^([\w+#-]+)?\n/.exec(body.value);
  const language = firstLine?.[1];
  const text = firstLine ? body.value.slice(firstLine[0].length) : body.value;
  return { text, end, entity: language ? { type: "pre", language } : { type: "pre" } };
}

const HTML_TAGS: Record<string, MessageEntity["type"]> = {
  b: "bold",
  strong: "bold",
  i: "italic",
  em: "italic",
  u: "underline",
  ins: "underline",
  s: "strikethrough",
  strike: "strikethrough",
  del: "strikethrough",
  "tg-spoiler": "spoiler",
  span: "spoiler",
  a: "text_link",
  code: "code",
  pre: "pre",
  blockquote: "blockquote",
};
const HTML_ESCAPES: Record<string, string> = { lt: "<", gt: ">", amp: "&", quot: '"' };

/** Telegram's HTML subset: known tags only, balanced, with &lt; &gt; &amp; &quot; escapes. */
function parseHtml(source: string): { text: string; entities: MessageEntity[] } {
  const entities: MessageEntity[] = [];
  const open: { tag: string; offset: number; href?: string }[] = [];
  const byteOffset = (index: number): number => Buffer.byteLength(source.slice(0, index));
  let text = "";
  let i = 0;
  while (i < source.length) {
    const tag = /^<(\/?)([a-zA-Z][\w-]*)([^>]*)>/.exec(source.slice(i));
    const htmlEscape = /^&(lt|gt|amp|quot);/.exec(source.slice(i));
    if (tag) {
      const [whole, closing, rawName = "", attributes = ""] = tag;
      const name = rawName.toLowerCase();
      const type = HTML_TAGS[name];
      if (!type)
        throw entityError(`Unsupported start tag "${name}" at byte offset ${byteOffset(i)}`);
      if (closing) {
        const top = open.pop();
        if (top?.tag !== name)
          throw entityError(
            `Unmatched end tag at byte offset ${byteOffset(i)}, expected "</${top?.tag}>", found "</${name}>"`,
          );
        const entity = { type, offset: top.offset, length: text.length - top.offset };
        if (entity.length > 0)
          entities.push((top.href ? { ...entity, url: top.href } : entity) as MessageEntity);
      } else {
        const href = /href\s*=\s*"([^"]*)"/.exec(attributes)?.[1];
        open.push(
          href === undefined
            ? { tag: name, offset: text.length }
            : { tag: name, offset: text.length, href },
        );
      }
      i += whole.length;
    } else if (htmlEscape) {
      text += HTML_ESCAPES[htmlEscape[1] ?? ""];
      i += htmlEscape[0].length;
    } else if (source[i] === "<") {
      throw entityError(`Unsupported start tag "" at byte offset ${byteOffset(i)}`);
    } else {
      text += source[i];
      i += 1;
    }
  }
  const unclosed = open.at(-1);
  if (unclosed)
    throw entityError(`Can't find end tag corresponding to start tag "${unclosed.tag}"`);
  return { text, entities };
}
