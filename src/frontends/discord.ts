/**
 * The Discord adapter: discord.js 14 on the gateway for incoming messages, its REST client
 * for sending, editing and typing. It converts and filters, nothing more; allowlists,
 * sessions, streaming, splitting and retries live in the core.
 *
 *   start():  `connecting` ─► login (GET /gateway/bot, IDENTIFY) ─► READY ─► `connected`
 *             a failed login ─► logged with its fix, retried with backoff (1 s doubling
 *             to 60 s) until it works or stop() is called
 *   dropped:  discord.js reconnects and resumes by itself; its shard events move the state
 *             to `connecting` (shardReconnecting) and back to `connected` (shardResume)
 *   given up: a close discord.js will not recover from (token reset, intent switched off)
 *             ─► `connecting`, destroy the client and log in again as in start()
 *   stop():   ignore further messages ─► destroy the client ─► `stopped`
 *
 * The REST client keeps its token throughout, so sends work while the gateway is away.
 *
 * Formatting: Discord renders Markdown itself and never rejects a message for it, so
 * `markdown` text passes through unchanged. `plain` text is sent with Markdown escaped so
 * it shows literally, unless escaping would push it past 2000 characters (then as is).
 * Mentions in the bot's text never ping anyone (`allowed_mentions: { parse: [] }`).
 */
import { once } from "node:events";
import {
  Client,
  DiscordAPIError,
  Events,
  escapeMarkdown,
  GatewayIntentBits,
  HTTPError,
  type Message,
  Options,
  Partials,
  RateLimitError,
  Routes,
} from "discord.js";
import { RECONNECT_BACKOFF, reconnectWithBackoff } from "../base/backoff.js";
import { ChatPlatformError, toError } from "../base/errors.js";
import { type Logger, silentLogger } from "../base/log.js";
import { checkNumberOptions } from "../base/options.js";
import { redactError } from "../base/redact.js";
import type {
  ChatPlatform,
  ChatPlatformState,
  IncomingChatMessage,
  SentChatMessage,
  TextFormat,
} from "../ports/index.js";

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
  /** Milliseconds before a REST request is aborted. (Default: 15000) */
  requestTimeoutMs?: number;
  /** Wait after the first failed login; doubles up to a minute. (Default: 1000) */
  reconnectBaseMs?: number;
}

const DEFAULT_API_BASE = "https://discord.com/api";
const MAX_MESSAGE_LENGTH = 2000;
/** The longest wait for the global limit that discord.js does itself (it paces in seconds). */
const GLOBAL_PACING_MS = 2000;
/**
 * Gateway closes after which discord.js gives up: the close code, the error @discordjs/ws
 * rejects `login()` with, and what the owner has to do.
 */
const UNRECOVERABLE_CLOSES = [
  {
    code: 4004,
    error: "Authentication failed",
    fix: "Discord rejected the bot token; check discord.bot_token (DISCORD_BOT_TOKEN)",
  },
  {
    code: 4013,
    error: "Used invalid intents",
    fix: "Discord rejected the intents picklebot asked for; please report this as a bug",
  },
  {
    code: 4014,
    error: "Used disallowed intents",
    fix:
      "Discord refused the Message Content intent; enable it in the Developer Portal under " +
      "Bot → Privileged Gateway Intents → Message Content Intent, then restart",
  },
] as const;

/** The owner's fix for an unrecoverable gateway close, by close code or login error. */
function unrecoverableFix(match: { code?: unknown; message?: string }): string | undefined {
  const close = UNRECOVERABLE_CLOSES.find(
    (entry) => entry.code === match.code || entry.error === match.message,
  );
  return close?.fix;
}

/** A Discord bot: DMs, and guild messages that mention it in the configured channels. */
export class DiscordPlatform implements ChatPlatform {
  readonly kind = "discord";
  readonly maxMessageLength = MAX_MESSAGE_LENGTH;
  readonly #token: string;
  readonly #channelIds: ReadonlySet<string>;
  readonly #logger: Logger;
  readonly #client: Client;
  readonly #reconnectBaseMs: number;
  #state: ChatPlatformState = "stopped";
  #abort = new AbortController();

  constructor(options: DiscordPlatformOptions) {
    checkNumberOptions("DiscordPlatform", options, {
      requestTimeoutMs: "positive",
      reconnectBaseMs: "positive",
    });
    this.#token = options.token;
    this.#channelIds = new Set(options.channelIds ?? []);
    this.#logger = options.logger ?? silentLogger();
    this.#reconnectBaseMs = options.reconnectBaseMs ?? RECONNECT_BACKOFF.baseMs;
    this.#client = new Client({
      intents: [
        GatewayIntentBits.Guilds,
        GatewayIntentBits.GuildMessages,
        GatewayIntentBits.MessageContent,
        GatewayIntentBits.DirectMessages,
      ],
      partials: [Partials.Channel],
      // Incoming messages are handed on at once; caching them (200 per channel by default)
      // would only grow the heap with every chat.
      makeCache: Options.cacheWithLimits({
        ...Options.DefaultMakeCacheSettings,
        MessageManager: 0,
      }),
      rest: {
        api: options.apiBase ?? DEFAULT_API_BASE,
        // Retries and rate-limit waits belong to the core, which knows whether to wait; only
        // discord.js's own pacing to Discord's 50 requests a second stays inside it.
        retries: 0,
        rejectOnRateLimit: (limit) =>
          limit.route.startsWith("/channels") &&
          !(limit.global && limit.timeToReset <= GLOBAL_PACING_MS),
        timeout: options.requestTimeoutMs ?? 15_000,
      },
    });
    // REST needs no gateway session: replies and outbox deliveries work while it reconnects.
    this.#client.rest.setToken(options.token);
    this.#watchConnection();
  }

  /** The connection's state, for `/healthz` and `status`. */
  get state(): ChatPlatformState {
    return this.#state;
  }

  /**
   * Logs in, retrying with backoff, and resolves once the gateway session is ready (or
   * when `stop()` is called first).
   */
  async start(onMessage: (message: IncomingChatMessage) => Promise<void>): Promise<void> {
    this.#abort = new AbortController();
    this.#state = "connecting";
    this.#client.on(Events.MessageCreate, (message) => this.#receive(message, onMessage));
    await this.#connect(this.#abort.signal);
  }

  /** Ignores further messages, then closes the gateway connection; sending still works. */
  async stop(): Promise<void> {
    this.#abort.abort();
    this.#client.removeAllListeners(Events.MessageCreate);
    await this.#disconnect();
    this.#state = "stopped";
  }

  /** Posts a new message to a channel (a DM channel id works too). */
  async send(
    chatId: string,
    text: string,
    format: TextFormat,
    key?: string,
  ): Promise<SentChatMessage> {
    const body = {
      content: this.#render(text, format),
      allowed_mentions: { parse: [] },
      // A send repeated after a crash that lost the id returns the first message.
      ...(key === undefined ? {} : { nonce: key, enforce_nonce: true }),
    };
    const created = await this.#request("send a message", chatId, () =>
      this.#client.rest.post(Routes.channelMessages(chatId), { body }),
    );
    return { messageId: (created as { id: string }).id };
  }

  /** Replaces the text of a message the bot sent. */
  async edit(chatId: string, messageId: string, text: string, format: TextFormat): Promise<void> {
    const body = { content: this.#render(text, format), allowed_mentions: { parse: [] } };
    await this.#request("edit a message", chatId, () =>
      this.#client.rest.patch(Routes.channelMessage(chatId, messageId), { body }),
    );
  }

  /** Shows "typing…" in a channel for about ten seconds. */
  async typing(chatId: string): Promise<void> {
    await this.#request("show typing", chatId, () =>
      this.#client.rest.post(Routes.channelTyping(chatId)),
    );
  }

  async #connect(signal: AbortSignal): Promise<void> {
    await reconnectWithBackoff(
      async () => {
        try {
          await this.#login(signal);
        } catch (error) {
          if (!signal.aborted) await this.#disconnect();
          throw this.#loginError(error);
        }
        if (!signal.aborted) this.#state = "connected";
      },
      {
        signal,
        baseMs: this.#reconnectBaseMs,
        retryAfterMs: (error) =>
          error instanceof ChatPlatformError ? (error.retryAfterS ?? 0) * 1000 : 0,
        onFailure: (error, { retryInMs }) => {
          const level = error instanceof ChatPlatformError && !error.retryable ? "error" : "warn";
          const message = this.#scrubError(error).message;
          this.#logger[level]({ error: message, retryInMs }, "discord: could not connect");
        },
      },
    );
  }

  async #login(signal: AbortSignal): Promise<void> {
    const loginFailed = new AbortController();
    const ready = once(this.#client, Events.ClientReady, {
      signal: AbortSignal.any([signal, loginFailed.signal]),
    });
    ready.catch(() => {}); // rejected only on abort: stop(), or login itself failed
    try {
      await this.#client.login(this.#token);
    } catch (error) {
      loginFailed.abort();
      throw error;
    }
    await ready;
    this.#logger.debug({ bot: this.#client.user?.tag }, "discord gateway ready");
  }

  /** Closes the gateway connection; the REST client keeps its token. */
  async #disconnect(): Promise<void> {
    await this.#client.destroy();
    this.#client.rest.setToken(this.#token);
  }

  /** discord.js gave up on the session: log in again from scratch, as start() does. */
  async #relogin(): Promise<void> {
    await this.#disconnect();
    await this.#connect(this.#abort.signal);
  }

  /**
   * Hands a message over. The gateway never sends a message twice, so one that could not
   * be stored is lost: logged as an error naming the chat.
   */
  #receive(message: Message, onMessage: (message: IncomingChatMessage) => Promise<void>): void {
    const incoming = this.#accept(message);
    if (!incoming) return;
    onMessage(incoming).catch((error: unknown) => {
      this.#logger.error(
        { chatId: incoming.chatId, error: this.#scrubError(error).message },
        "discord message handler failed; the message was dropped",
      );
    });
  }

  /** Applies the platform's rules: who and where the bot listens. */
  #accept(message: Message): IncomingChatMessage | undefined {
    const botId = this.#client.user?.id;
    if (message.author.bot || message.author.id === botId || !botId) return undefined;
    const direct = message.guildId === null;
    if (!direct) {
      if (!this.#inAllowedChannel(message) || !message.mentions.users.has(botId)) return undefined;
    }
    // No text at all (an image, a sticker) is not for us; a bare mention is, and gets help.
    if (message.content.trim() === "") return undefined;
    const text = direct ? message.content.trim() : stripMention(message.content, botId);
    return {
      platform: "discord",
      chatId: message.channelId,
      userId: message.author.id,
      userName: message.author.username,
      text,
      direct,
      messageId: message.id,
    };
  }

  #inAllowedChannel(message: Message): boolean {
    if (this.#channelIds.size === 0) return true;
    const parentId = message.channel.isThread() ? message.channel.parentId : null;
    return (
      this.#channelIds.has(message.channelId) ||
      (parentId !== null && this.#channelIds.has(parentId))
    );
  }

  #render(text: string, format: TextFormat): string {
    if (format === "markdown") return text;
    const escaped = escapeMarkdown(text);
    return escaped.length <= MAX_MESSAGE_LENGTH ? escaped : text;
  }

  async #request(action: string, chatId: string, call: () => Promise<unknown>): Promise<unknown> {
    try {
      return await call();
    } catch (error) {
      throw this.#requestError(action, chatId, error);
    }
  }

  #requestError(action: string, chatId: string, thrown: unknown): ChatPlatformError {
    const context = { platform: "discord", chatId };
    const cause = this.#scrubError(thrown);
    const prefix = `Discord: could not ${action} in channel ${chatId}`;
    if (thrown instanceof RateLimitError) {
      const retryAfterS = Math.max(thrown.retryAfter, thrown.timeToReset) / 1000;
      return new ChatPlatformError(`${prefix}: rate limited, retry after ${retryAfterS} s`, {
        cause,
        context,
        retryable: true,
        retryAfterS,
      });
    }
    if (thrown instanceof DiscordAPIError || thrown instanceof HTTPError) {
      const code = thrown instanceof DiscordAPIError ? `, code ${thrown.code}` : "";
      return new ChatPlatformError(`${prefix}: ${cause.message} (HTTP ${thrown.status}${code})`, {
        cause,
        context,
        retryable: thrown.status >= 500,
      });
    }
    return new ChatPlatformError(`${prefix}: ${cause.message}`, {
      cause,
      context,
      retryable: true,
    });
  }

  #loginError(thrown: unknown): ChatPlatformError {
    const cause = this.#scrubError(thrown);
    const code = (thrown as { code?: unknown }).code;
    if (code === "TokenInvalid") {
      return new ChatPlatformError(
        "Discord rejected the bot token; check discord.bot_token (DISCORD_BOT_TOKEN) in picklebot.yaml",
        { cause, context: { platform: "discord", key: "discord.bot_token" } },
      );
    }
    const closeHint = unrecoverableFix({ code, message: cause.message });
    return new ChatPlatformError(`Discord: could not connect: ${closeHint ?? cause.message}`, {
      cause,
      context: { platform: "discord" },
      retryable: closeHint === undefined,
    });
  }

  #watchConnection(): void {
    const client = this.#client;
    const log = this.#logger;
    const connected = (): void => {
      if (this.#state !== "stopped") this.#state = "connected";
    };
    client.on(Events.ShardReady, connected);
    client.on(Events.ShardResume, () => {
      connected();
      log.info("discord connection resumed");
    });
    client.on(Events.ShardReconnecting, () => {
      if (this.#state === "stopped" || this.#abort.signal.aborted) return;
      this.#state = "connecting";
      log.warn("discord connection lost; reconnecting");
    });
    client.on(Events.ShardDisconnect, (event) => {
      // While logging in, the failed login itself is retried by #connect.
      if (this.#state !== "connected" || this.#abort.signal.aborted) return;
      this.#state = "connecting";
      const fix = unrecoverableFix({ code: event.code }) ?? `gateway closed with ${event.code}`;
      log.error({ closeCode: event.code }, `discord gave up on the session: ${fix}`);
      this.#relogin().catch((error: unknown) => {
        log.error({ error: this.#scrubError(error).message }, "discord: could not log in again");
      });
    });
    client.on(Events.ShardError, (error) => {
      log.warn({ error: this.#scrubError(error).message }, "discord gateway error");
    });
    client.on(Events.Error, (error) => {
      log.error({ error: this.#scrubError(error).message }, "discord client error");
    });
  }

  /** The error, or a copy whose message and stack no longer contain the bot token. */
  #scrubError(thrown: unknown): Error {
    return redactError(toError(thrown), [this.#token]);
  }
}

/** Removes every mention of the bot (`<@id>` or the old nickname form `<@!id>`). */
function stripMention(content: string, botId: string): string {
  return content.replace(new RegExp(`\\s*<@!?${botId}>\\s*`, "g"), " ").trim();
}
