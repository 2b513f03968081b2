/**
 * The Discord adapter: the discord.js project's gateway client (@discordjs/ws) for incoming
 * messages and button presses, its REST client (@discordjs/rest) for sending, editing,
 * typing and answering presses; raw gateway payloads, without discord.js's `Client` and
 * its caches, which cost about 10 MiB of an idle server for nothing the adapter reads
 * (bench/RESULTS.md, footprint). It converts and filters, nothing more; allowlists,
 * sessions, streaming, splitting and retries live in the core.
 *
 *   start():  `connecting` ─► a fresh gateway client logs in (GET /gateway/bot, IDENTIFY)
 *             ─► READY ─► `connected`
 *             a failed login ─► that client is destroyed, the failure logged with its fix,
 *             and a new client tries again with backoff (1 s doubling to 60 s) until one
 *             works or stop() is called
 *   dropped:  @discordjs/ws reconnects and resumes by itself; its shard events move the
 *             state to `connecting` (a recoverable close) and back to `connected` (RESUMED
 *             or READY)
 *   given up: a close @discordjs/ws will not recover from (token reset, intent switched
 *             off) ─► `connecting`, destroy the client and log in again as in start()
 *   stop():   ignore further messages ─► destroy the current client ─► `stopped`
 *
 * A gateway client lives for one login, with its own session store: a WebSocketManager,
 * once destroyed, never closes the connections of a later login on the same manager, and
 * @discordjs/ws's default store is shared by the whole process. A discarded client is no
 * longer current, so nothing it still emits reaches the state; its REST calls in flight
 * (a hung `GET /gateway/bot`) are aborted, then it is destroyed and loses every listener.
 * The REST client for sending is separate and keeps its token throughout, so sends work
 * before start, while the gateway is away, and after stop.
 *
 * Formatting: Discord renders Markdown itself and never rejects a message for it, so
 * `markdown` text passes through unchanged. `plain` text is sent with Markdown escaped so
 * it shows literally, unless escaping would push it past 2000 characters (then as is).
 * Mentions in the bot's text never ping anyone (`allowed_mentions: { parse: [] }`).
 *
 * Buttons: choices go out as one action row (`discord-choices.ts`); a press arrives as an
 * INTERACTION_CREATE (no intent needed) and is answered over REST with the interaction's
 * token, which the adapter keeps to itself and uses once.
 */
import { escapeMarkdown } from "@discordjs/formatters";
import { DefaultRestOptions, REST, type RESTOptions } from "@discordjs/rest";
import { type SessionInfo, WebSocketManager, WebSocketShardEvents } from "@discordjs/ws";
import {
  type APIAttachment,
  type APIInteraction,
  type APIMessageComponentInteraction,
  ComponentType,
  GatewayCloseCodes,
  GatewayDispatchEvents,
  type GatewayDispatchPayload,
  GatewayIntentBits,
  type GatewayMessageCreateDispatchData,
  InteractionType,
  MessageFlags,
  Routes,
} from "discord-api-types/v10";
import { RECONNECT_BACKOFF, reconnectWithBackoff } from "../../base/backoff.js";
import { ChatPlatformError } from "../../base/errors.js";
import { type Logger, silentLogger } from "../../base/log.js";
import { checkNumberOptions } from "../../base/options.js";
import {
  type ChatAttachment,
  type ChatPlatform,
  type ChatPlatformState,
  type Choice,
  DEFAULT_DISCORD_CALL_TIMEOUT_MS,
  type FileDownload,
  type IncomingChatMessage,
  type IncomingChoice,
  type OutgoingFile,
  type SentChatMessage,
  type TextFormat,
} from "../../ports/index.js";
import { checkChoices } from "../choices.js";
import { ConnectFailures } from "../connect-failures.js";
import { checkOutgoingFile, downloadChunks } from "../files.js";
import { acknowledgement, choiceComponents, PressTokens, toIncomingChoice } from "./choices.js";
import { loginError, requestError, scrubError, unrecoverableFix } from "./errors.js";
import { ThreadParents } from "./threads.js";

/** Options of {@link DiscordPlatform}. */
export interface DiscordPlatformOptions {
  /** The bot token from the Developer Portal (`discord.bot_token`). */
  token: string;
  /** REST root; the gateway URL comes from `GET /gateway/bot`. (Default: https://discord.com/api) */
  apiBase?: string;
  /** Guild channels the bot answers in; DMs are always passed on. (Default: [] = any channel) */
  channelIds?: readonly string[];
  /** Where connection changes and dropped handler errors go. (Default: silent) */
  logger?: Logger;
  /**
   * Milliseconds a REST call may go unanswered before it is abandoned.
   * (Default: {@link DEFAULT_DISCORD_CALL_TIMEOUT_MS}, 15 000)
   */
  callTimeoutMs?: number;
  /** Wait after the first failed login; doubles up to a minute. (Default: 1000) */
  reconnectBaseMs?: number;
}

/** What the adapter hands an incoming message to. */
type MessageHandler = (message: IncomingChatMessage) => Promise<void>;
/** What the adapter hands a button press to. */
type ChoiceHandler = (press: IncomingChoice) => Promise<void>;

const DEFAULT_API_BASE = "https://discord.com/api";
const MAX_MESSAGE_LENGTH = 2000;
/** The longest wait for the global limit that @discordjs/rest does itself (it paces in seconds). */
const GLOBAL_PACING_MS = 2000;

/** The REST options of the sending client and of every gateway client's own REST. */
function restOptions(apiBase: string, timeoutMs: number): Partial<RESTOptions> {
  return {
    api: apiBase,
    // Retries and rate-limit waits belong to the core, which knows whether to wait; only
    // @discordjs/rest's own pacing to Discord's 50 requests a second stays inside it.
    retries: 0,
    rejectOnRateLimit: (limit) =>
      limit.route.startsWith("/channels") &&
      !(limit.global && limit.timeToReset <= GLOBAL_PACING_MS),
    timeout: timeoutMs,
  };
}

/** REST options whose every request is also aborted when `abandon` aborts. */
function abandonableRest(
  options: Partial<RESTOptions>,
  abandon: AbortSignal,
): Partial<RESTOptions> {
  return {
    ...options,
    makeRequest: (url, init) =>
      DefaultRestOptions.makeRequest(url, {
        ...init,
        signal: init.signal ? AbortSignal.any([init.signal, abandon]) : abandon,
      }),
  };
}

/** What the bot asks the gateway for: guilds, their messages and DMs, with their text. */
const INTENTS =
  GatewayIntentBits.Guilds |
  GatewayIntentBits.GuildMessages |
  GatewayIntentBits.MessageContent |
  GatewayIntentBits.DirectMessages;

/**
 * Gateway closes @discordjs/ws does not recover from: the session is over and only a new
 * login (with a fixed token or intents) can help.
 */
const UNRECOVERABLE_CLOSE_CODES: ReadonlySet<number> = new Set([
  GatewayCloseCodes.AuthenticationFailed,
  GatewayCloseCodes.InvalidShard,
  GatewayCloseCodes.ShardingRequired,
  GatewayCloseCodes.InvalidAPIVersion,
  GatewayCloseCodes.InvalidIntents,
  GatewayCloseCodes.DisallowedIntents,
]);

/** The gateway client of one login, and what aborts its REST calls when it is discarded. */
interface GatewayClient {
  client: WebSocketManager;
  abandon: AbortController;
  /** The bot's own user id, from READY; undefined until then. */
  botId?: string;
  /** Settles (never rejects) when its login does; undefined before login. */
  loggingIn?: Promise<void>;
}

/**
 * How long a discarded client's login may take to settle before the client is destroyed,
 * and how long that destroy may take before it is left to finish on its own.
 */
const DISCARD_WAIT_MS = 2000;

/** Resolves when `promise` settles or after `ms`, whichever is first; never rejects. */
async function settledWithin(promise: Promise<unknown> | undefined, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const elapsed = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
  });
  await Promise.race([promise?.catch(() => {}), elapsed]);
  clearTimeout(timer);
}

/** Settles as `promise` does, or rejects with the signal's reason once it aborts first. */
function unlessAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    if (signal.aborted) return onAbort();
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

/** A Discord bot: DMs, and guild messages that mention it in the configured channels. */
export class DiscordPlatform implements ChatPlatform {
  readonly kind = "discord";
  readonly maxMessageLength = MAX_MESSAGE_LENGTH;
  readonly #token: string;
  readonly #channelIds: ReadonlySet<string>;
  readonly #logger: Logger;
  readonly #restOptions: Partial<RESTOptions>;
  readonly #callTimeoutMs: number;
  /** Sends, edits and typing; needs no gateway session. */
  readonly #rest: REST;
  readonly #reconnectBaseMs: number;
  /** The gateway client of the current login; undefined between logins and after stop. */
  #gateway: GatewayClient | undefined;
  #onMessage: MessageHandler = async () => {};
  #onChoice: ChoiceHandler | undefined;
  /** Interaction tokens of presses not answered yet. */
  readonly #pressTokens = new PressTokens();
  /** The parent channel of each thread seen, for `channelIds`. */
  readonly #threads = new ThreadParents();
  #state: ChatPlatformState = "stopped";
  #abort = new AbortController();
  readonly #failures: ConnectFailures;

  constructor(options: DiscordPlatformOptions) {
    checkNumberOptions("DiscordPlatform", options, {
      callTimeoutMs: "positive",
      reconnectBaseMs: "positive",
    });
    this.#token = options.token;
    this.#channelIds = new Set(options.channelIds ?? []);
    this.#logger = options.logger ?? silentLogger();
    this.#failures = new ConnectFailures(this.#logger);
    this.#reconnectBaseMs = options.reconnectBaseMs ?? RECONNECT_BACKOFF.baseMs;
    this.#callTimeoutMs = options.callTimeoutMs ?? DEFAULT_DISCORD_CALL_TIMEOUT_MS;
    this.#restOptions = restOptions(options.apiBase ?? DEFAULT_API_BASE, this.#callTimeoutMs);
    this.#rest = new REST(this.#restOptions).setToken(options.token);
  }

  /** The connection's state, for `/healthz` and `status`. */
  get state(): ChatPlatformState {
    return this.#state;
  }

  get refusal(): string | null {
    return this.#failures.refusal;
  }

  /**
   * Logs in, retrying with backoff, and resolves once the gateway session is ready (or
   * when `stop()` is called first).
   */
  async start(onMessage: MessageHandler, onChoice?: ChoiceHandler): Promise<void> {
    this.#abort = new AbortController();
    this.#onMessage = onMessage;
    this.#onChoice = onChoice;
    this.#state = "connecting";
    await this.#connect(this.#abort.signal);
  }

  /** Ignores further messages, then closes the gateway connection; sending still works. */
  async stop(): Promise<void> {
    this.#abort.abort();
    await this.#discard(this.#gateway?.client);
    this.#state = "stopped";
  }

  /** Posts a new message to a channel (a DM channel id works too). */
  async send(
    chatId: string,
    text: string,
    format: TextFormat,
    key?: string,
  ): Promise<SentChatMessage> {
    return await this.#post(chatId, this.#messageBody(text, format, key));
  }

  /** Posts a message with the choices as one row of buttons. */
  async sendChoices(
    chatId: string,
    text: string,
    format: TextFormat,
    choices: readonly Choice[],
    key?: string,
  ): Promise<SentChatMessage> {
    checkChoices(this.kind, choices);
    const body = { ...this.#messageBody(text, format, key), components: choiceComponents(choices) };
    return await this.#post(chatId, body);
  }

  /** Answers the press's interaction, once, with the token kept when it arrived. */
  async acknowledgeChoice(press: IncomingChoice, notice?: string): Promise<void> {
    const token = this.#pressTokens.take(press.pressId);
    if (token === undefined) {
      throw new ChatPlatformError(
        `Discord: could not acknowledge button press ${press.pressId}: it was already acknowledged, or is unknown or older than 15 minutes`,
        { context: { platform: "discord", chatId: press.chatId } },
      );
    }
    const body = acknowledgement(notice);
    await this.#request("acknowledge a button press", press.chatId, () =>
      // Discord authorises an interaction response by its token, not the bot's.
      this.#rest.post(Routes.interactionCallback(press.pressId, token), { body, auth: false }),
    );
  }

  /** Replaces the text of a message the bot sent, and removes its buttons. */
  async edit(chatId: string, messageId: string, text: string, format: TextFormat): Promise<void> {
    const body = {
      content: this.#render(text, format),
      allowed_mentions: { parse: [] },
      components: [],
    };
    await this.#request("edit a message", chatId, () =>
      this.#rest.patch(Routes.channelMessage(chatId, messageId), { body }),
    );
  }

  /** Shows "typing…" in a channel for about ten seconds. */
  async typing(chatId: string): Promise<void> {
    await this.#request("show typing", chatId, () => this.#rest.post(Routes.channelTyping(chatId)));
  }

  /**
   * Posts a message with the file as its one attachment (multipart upload), the caption
   * as plain text; a voice message goes as an audio attachment.
   */
  async sendFile(chatId: string, file: OutgoingFile, key?: string): Promise<SentChatMessage> {
    checkOutgoingFile(this.kind, file);
    const body = {
      ...this.#messageBody(file.caption ?? "", "plain", key),
      attachments: [{ id: 0, filename: file.name }],
    };
    const files = [{ name: file.name, data: file.content, contentType: file.mediaType }];
    const created = await this.#request("send a file", chatId, () =>
      this.#rest.post(Routes.channelMessages(chatId), { body, files }),
    );
    return { messageId: (created as { id: string }).id };
  }

  /** The body of a new message; `key` makes a repeated send return the first message. */
  #messageBody(text: string, format: TextFormat, key: string | undefined): object {
    return {
      content: this.#render(text, format),
      allowed_mentions: { parse: [] },
      // A send repeated after a crash that lost the id returns the first message.
      ...(key === undefined ? {} : { nonce: key, enforce_nonce: true }),
    };
  }

  async #post(chatId: string, body: object): Promise<SentChatMessage> {
    const created = await this.#request("send a message", chatId, () =>
      this.#rest.post(Routes.channelMessages(chatId), { body }),
    );
    return { messageId: (created as { id: string }).id };
  }

  async #connect(signal: AbortSignal): Promise<void> {
    await reconnectWithBackoff(
      async () => {
        const gateway = this.#createClient();
        try {
          await this.#login(gateway);
        } catch (error) {
          await this.#discard(gateway.client);
          throw loginError(error, this.#token);
        }
        if (signal.aborted) return;
        this.#state = "connected";
        this.#failures.connected();
      },
      {
        signal,
        baseMs: this.#reconnectBaseMs,
        retryAfterMs: (error) =>
          error instanceof ChatPlatformError ? (error.retryAfterS ?? 0) * 1000 : 0,
        onFailure: (error, { retryInMs }) => {
          const clean = error instanceof ChatPlatformError ? error : scrubError(error, this.#token);
          this.#failures.failed(clean, "discord: could not connect", retryInMs);
        },
      },
    );
  }

  /** A gateway client for one login, made current, with its listeners attached. */
  #createClient(): GatewayClient {
    const abandon = new AbortController();
    const rest = new REST(abandonableRest(this.#restOptions, abandon.signal)).setToken(this.#token);
    // This login's own session: a new login identifies afresh, as a new client would.
    const sessions = new Map<number, SessionInfo>();
    const client = new WebSocketManager({
      token: this.#token,
      intents: INTENTS,
      rest,
      retrieveSessionInfo: (shardId) => sessions.get(shardId) ?? null,
      updateSessionInfo: (shardId, session) => {
        if (session) sessions.set(shardId, session);
        else sessions.delete(shardId);
      },
    });
    const gateway: GatewayClient = { client, abandon };
    this.#gateway = gateway;
    client.on(WebSocketShardEvents.Dispatch, ({ data }) => {
      if (this.#isCurrent(client)) this.#dispatch(gateway, data);
    });
    this.#watchConnection(gateway);
    return gateway;
  }

  /** Whether events of `client` still count: it is the current one and stop() was not called. */
  #isCurrent(client: WebSocketManager): boolean {
    return client === this.#gateway?.client && !this.#abort.signal.aborted;
  }

  /**
   * Drops the client if it is the current one: from now on its events are ignored and its
   * REST calls aborted; then destroys it (closing its gateway connection) and removes its
   * listeners.
   *
   * A shard that @discordjs/ws destroys while it waits for HELLO or READY connects again
   * half a second later and never finishes that destroy: so a login in progress is given
   * {@link DISCARD_WAIT_MS} to finish first, and the destroy as long again.
   */
  async #discard(client: WebSocketManager | undefined): Promise<void> {
    const gateway = this.#gateway;
    if (client === undefined || client !== gateway?.client) return;
    this.#gateway = undefined;
    gateway.abandon.abort();
    try {
      await settledWithin(gateway.loggingIn, DISCARD_WAIT_MS);
      await settledWithin(Promise.resolve(client.destroy()), DISCARD_WAIT_MS);
    } finally {
      client.removeAllListeners();
    }
  }

  /**
   * Looks the gateway up (a refused token answers 401 here), connects and waits for READY;
   * gives up as soon as the client is discarded.
   */
  async #login(gateway: GatewayClient): Promise<void> {
    const { client, abandon } = gateway;
    const login = client.fetchGatewayInformation().then(() => client.connect());
    gateway.loggingIn = login.then(
      () => {},
      () => {},
    );
    // A client discarded while its gateway connects may take long to settle its login.
    await unlessAborted(login, abandon.signal);
    this.#logger.debug({ botId: gateway.botId }, "discord gateway ready");
  }

  /** @discordjs/ws gave up on the session: drop its client and log in afresh, as start() does. */
  async #relogin(client: WebSocketManager): Promise<void> {
    await this.#discard(client);
    await this.#connect(this.#abort.signal);
  }

  /** Routes one gateway event of the current client: READY, messages, presses, threads. */
  #dispatch(gateway: GatewayClient, event: GatewayDispatchPayload): void {
    this.#threads.observe(event);
    if (event.t === GatewayDispatchEvents.Ready) gateway.botId = event.d.user.id;
    else if (event.t === GatewayDispatchEvents.MessageCreate) this.#receive(gateway, event.d);
    else if (event.t === GatewayDispatchEvents.InteractionCreate && isButtonPress(event.d)) {
      this.#receivePress(event.d);
    }
  }

  /**
   * Hands a message over. The gateway never sends a message twice, so one that could not
   * be stored is lost: logged as an error naming the chat.
   */
  #receive(gateway: GatewayClient, message: GatewayMessageCreateDispatchData): void {
    const incoming = this.#accept(gateway.botId, message);
    if (!incoming) return;
    this.#handOver("message", incoming.chatId, this.#onMessage(incoming));
  }

  /** Hands a press over, keeping its token for {@link acknowledgeChoice}; lost like a message. */
  #receivePress(interaction: APIMessageComponentInteraction): void {
    if (!this.#onChoice) return;
    const press = toIncomingChoice(interaction);
    this.#pressTokens.keep(press.pressId, interaction.token);
    this.#handOver("press", press.chatId, this.#onChoice(press));
  }

  /** Logs a handler that failed: the gateway never sends the event again. */
  #handOver(what: "message" | "press", chatId: string, handled: Promise<void>): void {
    handled.catch((error: unknown) => {
      this.#logger.error(
        { chatId, error: this.#errorText(error) },
        `discord ${what} handler failed; the ${what} was dropped`,
      );
    });
  }

  /** Applies the platform's rules: who and where the bot listens. */
  #accept(
    botId: string | undefined,
    message: GatewayMessageCreateDispatchData,
  ): IncomingChatMessage | undefined {
    if (message.author.bot || message.author.id === botId || !botId) return undefined;
    const direct = message.guild_id === undefined;
    if (!direct) {
      const mentioned = message.mentions.some((user) => user.id === botId);
      if (!this.#inAllowedChannel(message.channel_id) || !mentioned) return undefined;
    }
    const voice = ((message.flags ?? 0) & MessageFlags.IsVoiceMessage) !== 0;
    const attachments = message.attachments.map((file) => toAttachment(file, voice));
    const unreadable = [
      ...((message.sticker_items?.length ?? 0) > 0 ? ["a sticker"] : []),
      ...(message.poll ? ["a poll"] : []),
    ];
    // A message with nothing in it (an embed) is not for us; a bare mention is, and gets help.
    if (message.content.trim() === "" && attachments.length === 0 && unreadable.length === 0) {
      return undefined;
    }
    const text = direct ? message.content.trim() : stripMention(message.content, botId);
    return {
      platform: "discord",
      chatId: message.channel_id,
      userId: message.author.id,
      userName: message.author.username,
      text,
      ...(attachments.length > 0 ? { attachments } : {}),
      ...(unreadable.length > 0 ? { unreadable } : {}),
      direct,
      messageId: message.id,
    };
  }

  /** Downloads an attachment from its URL (Discord's CDN needs no token). */
  async download(attachment: ChatAttachment, signal?: AbortSignal): Promise<FileDownload> {
    const timeout = AbortSignal.timeout(this.#callTimeoutMs * 4);
    let response: Response;
    try {
      response = await fetch(attachment.source, {
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      });
    } catch (error) {
      throw new ChatPlatformError(
        `Discord: could not download ${attachment.name ?? "a file"}: ${String(error)}`,
        {
          retryable: true,
        },
      );
    }
    if (!response.ok) {
      throw new ChatPlatformError(
        `Discord: the download of ${attachment.name ?? "a file"} answered ${response.status}`,
        { retryable: response.status === 429 || response.status >= 500 },
      );
    }
    return downloadChunks(
      response,
      (error) =>
        new ChatPlatformError(
          `Discord: the download of ${attachment.name ?? "a file"} was cut off: ${String(error)}`,
          { retryable: true },
        ),
    );
  }

  /** Whether a guild message in `channelId` (a channel, or a thread in one) is listened to. */
  #inAllowedChannel(channelId: string): boolean {
    if (this.#channelIds.size === 0) return true;
    const parentId = this.#threads.parentOf(channelId);
    return this.#channelIds.has(channelId) || (parentId !== null && this.#channelIds.has(parentId));
  }

  #render(text: string, format: TextFormat): string {
    if (format === "markdown") return text;
    const escaped = escapeMarkdown(text);
    return escaped.length <= MAX_MESSAGE_LENGTH ? escaped : text;
  }

  async #request(action: string, chatId: string, call: () => Promise<unknown>): Promise<unknown> {
    // @discordjs/rest forgets the token after a 401; a passing one must not stop every later send.
    this.#rest.setToken(this.#token);
    try {
      return await call();
    } catch (error) {
      throw requestError(error, {
        action,
        chatId,
        token: this.#token,
        callTimeoutMs: this.#callTimeoutMs,
      });
    }
  }

  /** An error's message for the log, without the bot token. */
  #errorText(error: unknown): string {
    return scrubError(error, this.#token).message;
  }

  /** Follows one client's shard events; once it is discarded they change nothing. */
  #watchConnection(gateway: GatewayClient): void {
    const { client } = gateway;
    const log = this.#logger;
    const current = () => this.#isCurrent(client);
    client.on(WebSocketShardEvents.Ready, () => {
      if (current()) this.#state = "connected";
    });
    client.on(WebSocketShardEvents.Resumed, () => {
      if (!current()) return;
      this.#state = "connected";
      log.info("discord connection resumed");
    });
    client.on(WebSocketShardEvents.Closed, ({ code }) => {
      if (!current()) return;
      if (!UNRECOVERABLE_CLOSE_CODES.has(code)) {
        this.#state = "connecting";
        log.warn("discord connection lost; reconnecting");
        return;
      }
      // While logging in, the failed login itself is retried by #connect.
      if (this.#state !== "connected") return;
      this.#state = "connecting";
      const fix = unrecoverableFix({ code }) ?? `gateway closed with ${code}`;
      log.error({ closeCode: code }, `discord gave up on the session: ${fix}`);
      this.#relogin(client).catch((error: unknown) => {
        log.error({ error: this.#errorText(error) }, "discord: could not log in again");
      });
    });
    client.on(WebSocketShardEvents.Error, ({ error }) => {
      if (current()) log.warn({ error: this.#errorText(error) }, "discord gateway error");
    });
  }
}

/** Whether an interaction is a press of one of the bot's buttons. */
function isButtonPress(interaction: APIInteraction): interaction is APIMessageComponentInteraction {
  return (
    interaction.type === InteractionType.MessageComponent &&
    interaction.data.component_type === ComponentType.Button
  );
}

/** A Discord attachment as the core sees it. */
function toAttachment(file: APIAttachment, voiceMessage: boolean): ChatAttachment {
  const type = file.content_type;
  const kind = type?.startsWith("image/")
    ? "image"
    : type?.startsWith("audio/")
      ? voiceMessage
        ? "voice"
        : "audio"
      : "document";
  return {
    kind,
    source: file.url,
    name: file.filename,
    ...(type === undefined ? {} : { mimeType: type }),
    size: file.size,
    ...(file.duration_secs === undefined ? {} : { durationS: file.duration_secs }),
  };
}

/** Removes every mention of the bot (`<@id>` or the old nickname form `<@!id>`). */
function stripMention(content: string, botId: string): string {
  return content.replace(new RegExp(`\\s*<@!?${botId}>\\s*`, "g"), " ").trim();
}
