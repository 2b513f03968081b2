/**
 * The Slack adapter: Socket Mode (`@slack/socket-mode`, a WebSocket the bot opens, so no
 * public URL) for incoming messages and button presses, the Web API (`@slack/web-api`)
 * for everything it sends. It converts and filters, nothing more; allowlists, sessions,
 * streaming, splitting and retries live in the core.
 *
 *   start():  `connecting` ─► auth.test (bot token: who the bot is) ─► a fresh Socket Mode
 *             client: apps.connections.open (app token) ─► WebSocket ─► `hello` ─► `connected`
 *             a failure ─► that client is dropped, the failure told (a refused token once,
 *             with its fix) and tried again with backoff (1 s doubling to 60 s) until it
 *             works or stop() is called
 *   dropped:  Slack's `disconnect` (refresh_requested, warning) or a lost socket ─►
 *             `connecting`, the client dropped, and a new one as in start()
 *   stop():   ignore further events ─► close the current socket ─► `stopped`
 *
 * Each envelope is acked once its message or press is stored: one whose handler rejected
 * is not acked, and Slack sends it again (up to three times, `retry_attempt`), with the
 * same `messageId` / `pressId`. Messages are handed over one at a time, in arrival order.
 *
 * What reaches the core: DMs (`message` events of channel_type `im`) and mentions of the
 * bot in channels (`app_mention`), from people (not bots), new messages only (no edits or
 * deletions; `file_share`, a message with files, is a new message). Its files become
 * attachments (`files.ts`), downloaded by the job, not here. A message in a thread
 * replies into the thread (chat id `<channel>/<thread_ts>`, see `chat-id.ts`). Slack's
 * own client takes a text starting with `/` as a slash command, so the chat commands are
 * typed with `!` (`!new`), which becomes `/new` here; no slash command is registered.
 *
 * Files go out with Slack's external upload (`files.getUploadURLExternal`, the bytes to
 * the upload URL, `files.completeUploadExternal` into the chat), as @slack/web-api's
 * `filesUploadV2` does (`files.upload` is retired); the message id is the file id.
 *
 * Slack has no typing indicator for bots outside its assistant threads: {@link typing}
 * does nothing. Every Web API call has a time limit (`callTimeoutMs`) and no retry of
 * the library's own: retries and rate-limit waits belong to the core.
 */
import { LogLevel, type Logger as SlackLogger, SocketModeClient } from "@slack/socket-mode";
import { WebClient, type WebClientOptions } from "@slack/web-api";
import { RECONNECT_BACKOFF, reconnectWithBackoff } from "../../base/backoff.js";
import { systemClock } from "../../base/clock.js";
import { ChatPlatformError, toError } from "../../base/errors.js";
import { type Logger, silentLogger } from "../../base/log.js";
import { checkNumberOptions } from "../../base/options.js";
import {
  CHAT_COMMANDS,
  type ChatAttachment,
  type ChatPlatform,
  type ChatPlatformState,
  type Choice,
  type Clock,
  DEFAULT_SLACK_CALL_TIMEOUT_MS,
  type IncomingChatMessage,
  type IncomingChoice,
  type OutgoingFile,
  type SentChatMessage,
  type TextFormat,
} from "../../ports/index.js";
import { checkChoices } from "../choices.js";
import { ConnectFailures } from "../connect-failures.js";
import { checkOutgoingFile } from "../files.js";
import { CallBudget } from "./call-budget.js";
import { formatSlackChatId, parseSlackChatId } from "./chat-id.js";
import { type BlockActions, choiceBlocks, PressUrls, toIncomingChoice } from "./choices.js";
import { slackError } from "./errors.js";
import { downloadSlackFile, type SlackFile, slackFilesOf } from "./files.js";
import { escapeSlackText, toSlackMrkdwn, unescapeSlackText } from "./mrkdwn.js";

/** Options of {@link SlackPlatform}. */
export interface SlackPlatformOptions {
  /** The bot token (`xoxb-…`, `slack.bot_token`): the Web API. */
  botToken: string;
  /** The app-level token (`xapp-…`, `slack.app_token`, scope connections:write): Socket Mode. */
  appToken: string;
  /** Web API root, for a test fake. (Default: https://slack.com/api/) */
  apiUrl?: string;
  /** Where connection changes and dropped handler errors go. (Default: silent) */
  logger?: Logger;
  /**
   * Milliseconds a Web API call (or the socket's `hello`) may go unanswered before it is
   * abandoned as a retryable failure. (Default: {@link DEFAULT_SLACK_CALL_TIMEOUT_MS})
   */
  callTimeoutMs?: number;
  /** Wait after the first failed connect; doubles up to a minute. (Default: 1000) */
  reconnectBaseMs?: number;
  /** The time the app-wide budget of `chat.update` is kept by. (Default: the system's) */
  clock?: Clock;
}

type MessageHandler = (message: IncomingChatMessage) => Promise<void>;
type ChoiceHandler = (press: IncomingChoice) => Promise<void>;

/**
 * The longest text the core may send in one message. Slack refuses a text of more than
 * 40,000 characters as it arrives (`msg_too_long`), escaping included, and escaping makes
 * one character as many as five (`&` ─► `&amp;`): 8,000 is the longest that always fits,
 * whatever the text (Slack itself advises at most 4,000 for reading).
 */
const MAX_MESSAGE_LENGTH = 8000;

/**
 * Shortest time between two streaming edits of one chat: chat.update is Slack's tier 3,
 * about 50 calls a minute.
 */
const EDIT_INTERVAL_MS = 1200;

/** `chat.update` calls the whole app may make at once before they are paced. */
const UPDATE_BURST = 10;

/** The command names `!name` stands for. */
const COMMAND_NAMES = new Set<string>([...CHAT_COMMANDS.map((c) => c.command), "start"]);

/**
 * A chat command named in the bot's text (`/new: Start…`, `send /forget confirm`): a
 * known name after `/`, standing alone (not `/usr/bin/status`, `/help/x` or `/newer`).
 */
const COMMAND_MENTION = new RegExp(
  `(^|[\\s(\`"])/(${[...COMMAND_NAMES].join("|")})(?=$|[\\s,;:!?)\`"]|\\.(?:\\s|$))`,
  "gm",
);

/** `text` with the chat commands it names written as Slack's people type them: `!new`. */
function commandsAsTyped(text: string): string {
  return text.replace(COMMAND_MENTION, "$1!$2");
}

/** A @slack/logger that forwards the library's warnings and errors, at debug level. */
function libraryLogger(logger: Logger): SlackLogger {
  const forward = (...args: unknown[]) => logger.debug({ slack: args.map(String).join(" ") });
  return {
    debug() {},
    info() {},
    warn: forward,
    error: forward,
    setLevel() {},
    getLevel: () => LogLevel.ERROR,
    setName() {},
  };
}

/** An `events_api` event the adapter reads. */
interface SlackEvent {
  type: string;
  subtype?: string;
  channel?: string;
  channel_type?: string;
  user?: string;
  bot_id?: string;
  text?: string;
  ts?: string;
  thread_ts?: string;
  files?: SlackFile[];
}

/** The subtypes of a new message a person wrote: none, or one that shares files. */
const NEW_MESSAGE_SUBTYPES = new Set([undefined, "file_share"]);

/**
 * How many uploads whose completion was sent but not confirmed are remembered (by their
 * key), so that a retry checks whether Slack shared the file after all.
 */
const UNCONFIRMED_UPLOADS = 256;

/** What the Socket Mode client emits for every envelope. */
interface Envelope {
  ack: () => Promise<void>;
  type: string;
  body: { event?: SlackEvent } & Partial<BlockActions>;
}

/** A Slack bot: DMs, and channel messages that mention it. */
export class SlackPlatform implements ChatPlatform {
  readonly kind = "slack";
  readonly maxMessageLength = MAX_MESSAGE_LENGTH;
  readonly editIntervalMs = EDIT_INTERVAL_MS;
  readonly #options: SlackPlatformOptions;
  readonly #logger: Logger;
  readonly #callTimeoutMs: number;
  readonly #web: WebClient;
  readonly #failures: ConnectFailures;
  readonly #pressUrls = new PressUrls();
  readonly #updates: CallBudget;
  readonly #names = new Map<string, string>();
  /** File ids of uploads whose completion was not confirmed, by the send's key. */
  readonly #unconfirmed = new Map<string, string>();
  #state: ChatPlatformState = "stopped";
  #abort = new AbortController();
  #socket: SocketModeClient | undefined;
  #botUserId = "";
  #onMessage: MessageHandler = async () => {};
  #onChoice: ChoiceHandler | undefined;
  /** Envelopes are handled one after another, in arrival order. */
  #handling: Promise<void> = Promise.resolve();

  constructor(options: SlackPlatformOptions) {
    checkNumberOptions("SlackPlatform", options, {
      callTimeoutMs: "positive",
      reconnectBaseMs: "positive",
    });
    this.#options = options;
    this.#logger = options.logger ?? silentLogger();
    this.#failures = new ConnectFailures(this.#logger);
    this.#callTimeoutMs = options.callTimeoutMs ?? DEFAULT_SLACK_CALL_TIMEOUT_MS;
    this.#web = new WebClient(options.botToken, this.#clientOptions());
    this.#updates = new CallBudget({
      burst: UPDATE_BURST,
      intervalMs: EDIT_INTERVAL_MS,
      clock: options.clock ?? systemClock,
    });
  }

  get state(): ChatPlatformState {
    return this.#state;
  }

  get refusal(): string | null {
    return this.#failures.refusal;
  }

  async start(onMessage: MessageHandler, onChoice?: ChoiceHandler): Promise<void> {
    this.#abort = new AbortController();
    this.#onMessage = onMessage;
    this.#onChoice = onChoice;
    this.#state = "connecting";
    await this.#connect(this.#abort.signal);
  }

  async stop(): Promise<void> {
    this.#abort.abort();
    await this.#drop(this.#socket);
    this.#state = "stopped";
  }

  async send(chatId: string, text: string, format: TextFormat): Promise<SentChatMessage> {
    return await this.#post(chatId, text, this.#textFields(text, format));
  }

  /** A file a person sent, from its `url_private_download`, with the bot token (see `files.ts`). */
  async download(attachment: ChatAttachment, signal?: AbortSignal): Promise<Uint8Array> {
    const timeoutMs = this.#callTimeoutMs * 4;
    const timeout = AbortSignal.timeout(timeoutMs);
    const apiUrl = this.#options.apiUrl;
    return await downloadSlackFile(attachment, {
      botToken: this.#options.botToken,
      ...(apiUrl === undefined ? {} : { extraOrigin: new URL(apiUrl).origin }),
      signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      failed: (error) =>
        slackError(error, {
          method: `download of "${attachment.name ?? "a file"}"`,
          key: "slack.bot_token",
          tokens: this.#tokens(),
          timeoutMs,
        }),
    });
  }

  /**
   * Uploads the file and shares it into the chat (its thread too), the caption as the
   * message introducing it; a voice message goes as an audio file. The message id is the
   * file's id. A retry with the same `key` after a completion whose answer was lost (a
   * timeout, in this process) asks Slack first whether the file was shared, and does not
   * share it again.
   */
  async sendFile(chatId: string, file: OutgoingFile, key?: string): Promise<SentChatMessage> {
    checkOutgoingFile(this.kind, file);
    const { channel, threadTs } = parseSlackChatId(chatId);
    const forget = () => (key === undefined ? undefined : this.#unconfirmed.delete(key));
    const earlier = key === undefined ? undefined : this.#unconfirmed.get(key);
    if (earlier !== undefined && (await this.#isShared(earlier, channel, chatId))) {
      forget();
      return { messageId: earlier };
    }
    const ticket = await this.#call("files.getUploadURLExternal", chatId, () =>
      this.#web.files.getUploadURLExternal({ filename: file.name, length: file.content.length }),
    );
    const fileId = String(ticket.file_id);
    await this.#upload(String(ticket.upload_url), file, chatId);
    if (key !== undefined) this.#remember(key, fileId);
    try {
      await this.#call("files.completeUploadExternal", chatId, () =>
        this.#web.files.completeUploadExternal({
          files: [{ id: fileId, title: file.name }],
          channel_id: channel,
          ...(threadTs === undefined ? {} : { thread_ts: threadTs }),
          ...(file.caption ? { initial_comment: escapeSlackText(file.caption) } : {}),
        }),
      );
    } catch (error) {
      if (error instanceof ChatPlatformError && !error.retryable) forget();
      throw error;
    }
    forget();
    return { messageId: fileId };
  }

  /** Posts the text in a section block with the choices as buttons under it. */
  async sendChoices(
    chatId: string,
    text: string,
    format: TextFormat,
    choices: readonly Choice[],
  ): Promise<SentChatMessage> {
    checkChoices(this.kind, choices);
    const blocks = choiceBlocks(text, format === "markdown", choices);
    return await this.#post(chatId, text, { ...this.#textFields(text, format), blocks });
  }

  /**
   * The press was answered when its envelope was acked; a notice goes to the person alone
   * through the press's `response_url`, which works once per press here.
   */
  async acknowledgeChoice(press: IncomingChoice, notice?: string): Promise<void> {
    const url = this.#pressUrls.take(press.pressId);
    if (url === undefined) {
      throw new ChatPlatformError(
        `slack: could not acknowledge button press ${press.pressId}: it was already acknowledged, or is unknown or older than 30 minutes`,
        { context: { platform: "slack", chatId: press.chatId } },
      );
    }
    if (notice === undefined) return;
    await this.#respond(url, press.chatId, {
      response_type: "ephemeral",
      replace_original: false,
      text: escapeSlackText(notice),
    });
  }

  /** chat.update with the new text and no blocks: an answered question keeps no buttons. */
  async edit(chatId: string, messageId: string, text: string, format: TextFormat): Promise<void> {
    this.#checkLength(text, chatId);
    this.#takeUpdate(chatId);
    const { channel } = parseSlackChatId(chatId);
    await this.#call("chat.update", chatId, () =>
      this.#web.chat.update({
        channel,
        ts: messageId,
        ...this.#textFields(text, format),
        blocks: [],
      }),
    );
  }

  /** Slack shows no typing indicator for a bot outside assistant threads: nothing to do. */
  async typing(_chatId: string): Promise<void> {}

  #textFields(text: string, format: TextFormat) {
    const markdown = format === "markdown";
    const typed = commandsAsTyped(text);
    return {
      text: markdown ? toSlackMrkdwn(typed) : escapeSlackText(typed),
      mrkdwn: markdown,
      unfurl_links: false,
      unfurl_media: false,
    };
  }

  async #post(chatId: string, text: string, fields: object): Promise<SentChatMessage> {
    this.#checkLength(text, chatId);
    const { channel, threadTs } = parseSlackChatId(chatId);
    const posted = await this.#call("chat.postMessage", chatId, () =>
      this.#web.chat.postMessage({
        channel,
        ...(threadTs === undefined ? {} : { thread_ts: threadTs }),
        ...(fields as { text: string }),
      }),
    );
    return { messageId: String(posted.ts) };
  }

  /** Takes a `chat.update` from the app's budget; past it, a retryable wait as Slack's 429. */
  #takeUpdate(chatId: string): void {
    const waitS = this.#updates.take();
    if (waitS === null) return;
    throw new ChatPlatformError(
      `slack: chat.update in ${chatId}: Slack takes about 50 chat.update a minute from the whole app; retry after ${waitS} s`,
      { context: { platform: "slack", chatId }, retryable: true, retryAfterS: waitS },
    );
  }

  /** Refuses for good a text the core should have split: Slack would refuse it too. */
  #checkLength(text: string, chatId: string): void {
    if (text.length <= MAX_MESSAGE_LENGTH) return;
    throw new ChatPlatformError(
      `slack: a message of ${text.length} characters for ${chatId}; at most ${MAX_MESSAGE_LENGTH} are sent in one`,
      { context: { platform: "slack", chatId } },
    );
  }

  /** Sends the bytes to the upload URL `files.getUploadURLExternal` gave. */
  async #upload(url: string, file: OutgoingFile, chatId: string): Promise<void> {
    const failure = {
      method: "file upload",
      key: "slack.bot_token",
      chatId,
      tokens: this.#tokens(),
      timeoutMs: this.#callTimeoutMs,
    } as const;
    const form = new FormData();
    form.append("filename", new Blob([new Uint8Array(file.content)]), file.name);
    let response: Response;
    try {
      // An upload may take a second per MB beyond the usual limit, on a slow link.
      const heldMs = Math.ceil(file.content.length / 1_000_000) * 1000;
      // The upload URL is signed by Slack: it takes no token.
      response = await fetch(url, {
        method: "POST",
        body: form,
        redirect: "error",
        signal: AbortSignal.timeout(this.#callTimeoutMs + heldMs),
      });
    } catch (error) {
      throw slackError(error, failure);
    }
    await response.body?.cancel();
    if (response.ok) return;
    throw new ChatPlatformError(
      `slack: file upload of "${file.name}" in ${chatId}: HTTP ${response.status}`,
      { context: { platform: "slack", chatId }, retryable: response.status >= 500 },
    );
  }

  /**
   * Whether Slack shows the file in the channel (files.info): a transient failure throws,
   * any other answer is taken as not shared.
   */
  async #isShared(fileId: string, channel: string, chatId: string): Promise<boolean> {
    try {
      const { file } = await this.#call("files.info", chatId, () =>
        this.#web.files.info({ file: fileId }),
      );
      const where = [...(file?.channels ?? []), ...(file?.groups ?? []), ...(file?.ims ?? [])];
      return where.includes(channel);
    } catch (error) {
      if (error instanceof ChatPlatformError && error.retryable) throw error;
      return false;
    }
  }

  /** Remembers an unconfirmed upload, forgetting the oldest past {@link UNCONFIRMED_UPLOADS}. */
  #remember(key: string, fileId: string): void {
    this.#unconfirmed.set(key, fileId);
    const oldest = this.#unconfirmed.keys().next().value;
    if (this.#unconfirmed.size > UNCONFIRMED_UPLOADS && oldest !== undefined) {
      this.#unconfirmed.delete(oldest);
    }
  }

  async #respond(url: string, chatId: string, body: object): Promise<void> {
    const failure = { method: "response_url", key: "slack.bot_token", chatId } as const;
    let response: Response;
    try {
      response = await fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(this.#callTimeoutMs),
      });
    } catch (error) {
      throw slackError(error, {
        ...failure,
        tokens: this.#tokens(),
        timeoutMs: this.#callTimeoutMs,
      });
    }
    if (response.ok) return;
    const answer = await response.text().catch(() => "");
    throw new ChatPlatformError(
      `slack: could not answer button press in ${chatId}: HTTP ${response.status} ${answer.slice(0, 200)}`,
      { context: { platform: "slack", chatId }, retryable: response.status >= 500 },
    );
  }

  /** One Web API call, its failure made a {@link ChatPlatformError}. */
  async #call<T>(method: string, chatId: string | undefined, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      throw slackError(error, {
        method,
        key: "slack.bot_token",
        tokens: this.#tokens(),
        timeoutMs: this.#callTimeoutMs,
        ...(chatId === undefined ? {} : { chatId }),
      });
    }
  }

  #tokens(): string[] {
    return [this.#options.botToken, this.#options.appToken];
  }

  #clientOptions(): WebClientOptions {
    return {
      ...(this.#options.apiUrl === undefined ? {} : { slackApiUrl: this.#options.apiUrl }),
      timeout: this.#callTimeoutMs,
      retryConfig: { retries: 0 },
      rejectRateLimitedCalls: true,
      logger: libraryLogger(this.#logger),
    };
  }

  async #connect(signal: AbortSignal): Promise<void> {
    await reconnectWithBackoff(
      async () => {
        const auth = await this.#call("auth.test", undefined, () => this.#web.auth.test());
        this.#botUserId = String(auth.user_id ?? "");
        const socket = this.#createSocket();
        try {
          await this.#open(socket, signal);
        } catch (error) {
          await this.#drop(socket);
          throw error;
        }
        if (signal.aborted) return;
        this.#state = "connected";
        this.#failures.connected();
        this.#logger.info({ bot: auth.user }, "slack connected");
      },
      {
        signal,
        baseMs: this.#options.reconnectBaseMs ?? RECONNECT_BACKOFF.baseMs,
        retryAfterMs: (error) =>
          error instanceof ChatPlatformError ? (error.retryAfterS ?? 0) * 1000 : 0,
        onFailure: (error, { retryInMs }) => {
          this.#failures.failed(error, "slack: could not connect", retryInMs);
        },
      },
    );
  }

  /** A Socket Mode client for one connection, made current, with its listeners attached. */
  #createSocket(): SocketModeClient {
    const socket = new SocketModeClient({
      appToken: this.#options.appToken,
      autoReconnectEnabled: false,
      clientOptions: this.#clientOptions(),
      logger: libraryLogger(this.#logger),
    });
    this.#socket = socket;
    socket.on("slack_event", (envelope: Envelope) => {
      if (!this.#isCurrent(socket)) return;
      this.#handling = this.#handling.then(() => this.#receive(envelope));
    });
    socket.on("disconnected", () => {
      if (!this.#isCurrent(socket) || this.#state !== "connected") return;
      this.#state = "connecting";
      this.#logger.warn("slack connection lost; reconnecting");
      this.#reconnect(socket).catch((error: unknown) => {
        this.#logger.error({ error: toError(error).message }, "slack: could not reconnect");
      });
    });
    socket.on("error", () => {}); // the library logs it; a lost socket ends in "disconnected"
    return socket;
  }

  /** Opens the socket and waits for `hello`, within the call timeout, unless stopped first. */
  async #open(socket: SocketModeClient, signal: AbortSignal): Promise<void> {
    const limit = AbortSignal.timeout(this.#callTimeoutMs * 2);
    const abandon = AbortSignal.any([signal, limit]);
    const opened = socket.start();
    opened.catch(() => {});
    try {
      await new Promise<void>((resolve, reject) => {
        const onAbort = () =>
          reject(
            new ChatPlatformError(
              `slack: the Socket Mode connection did not say hello within ${(this.#callTimeoutMs * 2) / 1000} s; abandoned`,
              { retryable: true },
            ),
          );
        if (abandon.aborted) return onAbort();
        abandon.addEventListener("abort", onAbort, { once: true });
        opened.then(() => resolve(), reject);
      });
    } catch (error) {
      throw slackError(error, {
        method: "apps.connections.open",
        key: "slack.app_token",
        tokens: this.#tokens(),
        timeoutMs: this.#callTimeoutMs,
      });
    }
  }

  async #reconnect(socket: SocketModeClient): Promise<void> {
    await this.#drop(socket);
    await this.#connect(this.#abort.signal);
  }

  #isCurrent(socket: SocketModeClient): boolean {
    return socket === this.#socket && !this.#abort.signal.aborted;
  }

  /** Drops the socket if it is the current one, closes it and forgets its listeners. */
  async #drop(socket: SocketModeClient | undefined): Promise<void> {
    if (socket === undefined || socket !== this.#socket) return;
    this.#socket = undefined;
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, 2000);
    });
    await Promise.race([socket.disconnect().catch(() => {}), waited]);
    clearTimeout(timer);
    socket.removeAllListeners();
    socket.on("error", () => {});
  }

  /** Hands one envelope over; acks it once handled, so Slack sends it again otherwise. */
  async #receive(envelope: Envelope): Promise<void> {
    try {
      await this.#handOver(envelope);
      await envelope.ack();
    } catch (error) {
      this.#logger.warn(
        { error: toError(error).message },
        "slack: an event was not stored or not acknowledged; Slack sends it again",
      );
    }
  }

  /**
   * Runs the handler an envelope is for (none: an event the bot does not read); rejects
   * when the handler did, so the envelope is not acked.
   */
  async #handOver({ type, body }: Envelope): Promise<void> {
    if (type === "events_api" && body.event) {
      const message = await this.#accept(body.event);
      if (message) await this.#onMessage(message);
    } else if (type === "interactive" && body.type === "block_actions") {
      const press = toIncomingChoice(body as BlockActions);
      if (press && this.#onChoice) {
        if (body.response_url) this.#pressUrls.keep(press.pressId, body.response_url);
        await this.#onChoice(press);
      }
    }
  }

  /** Applies the platform's rules: DMs and mentions, from people, as plain new messages. */
  async #accept(event: SlackEvent): Promise<IncomingChatMessage | null> {
    const direct = event.type === "message" && event.channel_type === "im";
    if (!direct && event.type !== "app_mention") return null;
    if (!NEW_MESSAGE_SUBTYPES.has(event.subtype) || event.bot_id !== undefined) return null;
    const { user, channel, ts } = event;
    if (!user || !channel || !ts || user === this.#botUserId) return null;
    const text = this.#textOf(event.text ?? "");
    const { attachments, unreadable } = slackFilesOf(event.files ?? []);
    if (text === "" && attachments.length === 0 && unreadable.length === 0) return null;
    return {
      platform: "slack",
      chatId: formatSlackChatId(channel, event.thread_ts),
      userId: user,
      userName: await this.#nameOf(user),
      text,
      ...(attachments.length > 0 ? { attachments } : {}),
      ...(unreadable.length > 0 ? { unreadable } : {}),
      direct,
      messageId: `${channel}/${ts}`,
    };
  }

  /** The text without the bot's mentions, unescaped, with `!command` as `/command`. */
  #textOf(raw: string): string {
    const text = unescapeSlackText(
      raw
        .replace(new RegExp(`\\s*<@${this.#botUserId}(\\|[^>]*)?>\\s*`, "g"), " ")
        .replace(/<(https?:\/\/[^|>]+)\|([^>]+)>/g, "$2 ($1)")
        .replace(/<(https?:\/\/[^>]+)>/g, "$1"),
    ).trim();
    const command = /^!(\w+)/.exec(text);
    return command && COMMAND_NAMES.has(command[1] ?? "") ? `/${text.slice(1)}` : text;
  }

  /** The person's Slack name (users.info, kept), or their id when Slack will not say. */
  async #nameOf(userId: string): Promise<string> {
    const known = this.#names.get(userId);
    if (known !== undefined) return known;
    try {
      const { user } = await this.#call("users.info", undefined, () =>
        this.#web.users.info({ user: userId }),
      );
      const name = user?.name ?? userId;
      this.#names.set(userId, name);
      return name;
    } catch (error) {
      this.#logger.debug(
        { user: userId, error: toError(error).message },
        "slack: users.info failed",
      );
      return userId;
    }
  }
}
