/**
 * A fake Discord (REST v10 + gateway v10) on 127.0.0.1 for tests that drive the real
 * discord.js 14 client.
 *
 * Point the client at it with `new Client({ ..., rest: { api: fake.restRoot } })`; the
 * client learns the gateway URL from `GET /gateway/bot`. The gateway speaks uncompressed
 * JSON (discord.js asks for `?v=10&encoding=json`, and for `compress` only when zlib-sync is
 * installed, which the fake refuses with close code 4012).
 *
 * Gateway session: HELLO → IDENTIFY → READY (one unavailable guild) → GUILD_CREATE, then
 * heartbeats are ACKed and test messages arrive as MESSAGE_CREATE with increasing `s`.
 * A RESUME replays the events after the client's sequence number, then sends RESUMED.
 * REST answers like Discord: 204 without a content type for typing and deletes, JSON
 * errors `{ message, code }`, and 429 with the rate-limit headers and body. A message
 * created with `enforce_nonce` and a nonce used before in the channel is not created
 * again: the earlier message is returned, as Discord does within a few minutes; a string
 * nonce longer than 25 characters is refused (400 50035).
 *
 * Buttons: message components are checked like Discord (at most 5 buttons a row, each with
 * a label and a custom_id of 1-100 characters, else 400 50035) and kept per message; an
 * edit with `components` replaces them (`[]` removes them). `pressButton` sends an
 * INTERACTION_CREATE; `POST /interactions/:id/:token/callback` (no bot token needed, as on
 * Discord) takes one response within 3 s by the fake's clock, see `discord-interactions.ts`.
 *
 * Files: a message's multipart attachments are kept with their name, size, SHA-256 and
 * type (`filesOf`); more than 25 MiB in one request is refused with 413, code 40005
 * "Request entity too large", as Discord does for a server without boosts.
 *
 * Faults a test can inject: a REST failure (`failNext`), a REST request left unanswered
 * until `close()` (`hangNext`), and an IDENTIFY closed with an unrecoverable code
 * (`closeNextIdentify`). `openGatewayConnections` counts the gateway sockets still open,
 * identified or not, so a test can see a client that was dropped but not closed.
 */
import { createHash, randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { APIAttachment, APIMessage, APIUser } from "discord.js";
import { type WebSocket, WebSocketServer } from "ws";
import { waitFor } from "../helpers/wait.js";
import {
  type ActionRow,
  checkComponents,
  type InteractionResponse,
  Interactions,
  invalidFormBody,
  RestFailure,
} from "./discord-interactions.js";

/** Options for {@link startFakeDiscord}. */
export interface FakeDiscordOptions {
  /** Bot token the fake accepts. (Default: a well-formed fake token, see `fake.token`) */
  token?: string;
  /** Gateway heartbeat interval sent in HELLO. (Default: 41250) */
  heartbeatIntervalMs?: number;
  /**
   * Whether the application has the Message Content privileged intent enabled; when not, an
   * IDENTIFY asking for it is closed with 4014 "Disallowed intent(s)". (Default: true)
   */
  messageContentIntentEnabled?: boolean;
  /** Wait between an accepted IDENTIFY and READY, to catch a client mid-login. (Default: 0) */
  readyDelayMs?: number;
  /** The clock of the 3 s an interaction may be answered in, epoch ms. (Default: Date.now) */
  now?: () => number;
}

/** A button a test user presses, see {@link FakeDiscord.pressButton}. */
export interface DiscordButtonPressInput {
  /** The channel of the bot's message: a DM channel or `fake.guildChannelId`. */
  channelId: string;
  /** The bot's message carrying the button. */
  messageId: string;
  /** The button's custom_id; the message must show it. */
  customId: string;
  /** Who presses. */
  userId: string;
  /** Their username. (Default: "user<userId>") */
  username?: string;
}

/** One message a test user sends, see {@link FakeDiscord.sendUserMessage}. */
export interface DiscordUserMessageInput {
  /** Channel id: a DM channel id (any new id makes a DM channel) or a guild text channel. */
  channelId: string;
  /** Author's user id. */
  userId: string;
  /** Message text. */
  content: string;
  /** Guild of the channel; omit for a DM. Must be `fake.guildId`. */
  guildId?: string;
  /** Mention the bot: prefixes "<@botId> " unless present, and lists the bot in `mentions`. */
  mentionsBot?: boolean;
  /** Author's username. (Default: "user<userId>") */
  username?: string;
  /** The author is a bot account. (Default: false) */
  bot?: boolean;
  /** Files attached, served at their CDN-style URL (`/attachments/…`). (Default: none) */
  /** Files attached; `size` is what Discord reports (Default: the bytes'). */
  attachments?: Array<{ name: string; contentType: string; bytes: Uint8Array; size?: number }>;
  /** A sticker sent with the message. (Default: false) */
  sticker?: boolean;
  /** A poll sent as the message. (Default: false) */
  poll?: boolean;
}

/** A failure the fake answers instead of a REST route, see {@link FakeDiscord.failNext}. */
export type DiscordFailure =
  | { status: 429; retryAfter: number }
  | { status: 400 | 401 | 403 | 404; code: number; message: string }
  | { status: 500 | 502 | 503 };

/** Gateway close codes after which discord.js gives up, see {@link FakeDiscord.closeNextIdentify}. */
export type UnrecoverableCloseCode = 4004 | 4013 | 4014;

/** The reason Discord's gateway gives with each close code (Discord's gateway docs). */
const CLOSE_REASONS: Record<UnrecoverableCloseCode, string> = {
  4004: "Authentication failed.",
  4013: "Invalid intent(s).",
  4014: "Disallowed intent(s).",
};

/** One REST request the client made, in arrival order. */
export interface DiscordCall {
  /** HTTP method, upper case. */
  method: string;
  /** Path below the API version, e.g. "/channels/42/messages". */
  path: string;
  /** JSON body (for multipart: `payload_json` plus `files: [{ name, filename, size }]`). */
  body: Record<string, unknown> | undefined;
  /** Epoch milliseconds (fractional) when the request arrived. */
  time: number;
  /** HTTP status the fake answered; 0 for a request it never answered (`hangNext`). */
  status: number;
}

/** A file part of a multipart request, as the fake read it. */
export interface UploadedAttachment {
  /** The form field, `files[0]`. */
  name: string;
  filename: string;
  size: number;
  /** SHA-256 of the bytes, hex. */
  sha256: string;
  contentType: string;
}

/** A message of the bot carrying a file, see {@link FakeDiscord.filesOf}. */
export interface BotAttachment extends UploadedAttachment {
  messageId: string;
  /** The message's text (the caption). */
  content: string;
}

/** Discord's default upload limit per request: 25 MiB (more with boosts and Nitro). */
const MAX_UPLOAD_BYTES = 25 * 1024 * 1024;

interface GatewaySession {
  id: string;
  sequence: number;
  events: object[];
  socket: WebSocket | undefined;
}

interface ChannelState {
  channel: Record<string, unknown>;
  botMessages: Map<string, APIMessage>;
}

const DISCORD_EPOCH = 1420070400000n;
const MAX_CONTENT_LENGTH = 2000;
/** Longest string `nonce` of a new message. */
const MAX_NONCE_LENGTH = 25;
/** ViewChannel | SendMessages | ReadMessageHistory, for the @everyone role. */
const EVERYONE_PERMISSIONS = "68608";
/** GatewayIntentBits.MessageContent, a privileged intent. */
const MESSAGE_CONTENT_INTENT = 1 << 15;

/** Starts the fake REST + gateway on 127.0.0.1 on a free port. Call `close()` when done. */
export async function startFakeDiscord(options: FakeDiscordOptions = {}): Promise<FakeDiscord> {
  const fake = new FakeDiscord(options);
  await fake.listen();
  return fake;
}

/** The running fake; see the file header for the protocol it follows. */
export class FakeDiscord {
  /** The bot user (`GET /users/@me`, READY). */
  readonly botUser: APIUser = {
    id: "100000000000000001",
    username: "picklebot-test",
    discriminator: "0",
    global_name: null,
    avatar: null,
    bot: true,
  };
  /** The token the fake accepts. */
  readonly token: string;
  /** The one guild the bot is in. */
  readonly guildId = "200000000000000001";
  /** The guild's text channel. */
  readonly guildChannelId = "200000000000000002";
  /** Every REST request, in arrival order, failures included. */
  readonly sent: DiscordCall[] = [];
  /** IDENTIFY payloads received (`d`), e.g. to check intents. */
  readonly identifies: Record<string, unknown>[] = [];
  /** Query strings of gateway connections, e.g. "?v=10&encoding=json". */
  readonly gatewayQueries: string[] = [];
  /** Heartbeats received (all sessions). */
  heartbeats = 0;

  /** Every interaction response, in order; refused ones with their status and code. */
  get interactionResponses(): readonly InteractionResponse[] {
    return this.interactions.responses;
  }

  private readonly server: Server;
  /** `<channel id>:<nonce>` of each message created with enforce_nonce, and its id. */
  private readonly nonces = new Map<string, string>();
  private readonly gateway: WebSocketServer;
  private readonly heartbeatIntervalMs: number;
  private readonly messageContentIntentEnabled: boolean;
  private readonly readyDelayMs: number;
  private readonly sessions = new Map<string, GatewaySession>();
  private readonly channels = new Map<string, ChannelState>();
  private readonly failures: {
    route: string;
    failure: DiscordFailure | "hang";
    remaining: number;
  }[] = [];
  private readonly identifyCloses: UnrecoverableCloseCode[] = [];
  private snowflakeCounter = 0n;
  /** Set by {@link goOffline}: connections and requests are cut as they arrive. */
  private offline = false;
  private readonly interactions: Interactions;

  constructor(options: FakeDiscordOptions = {}) {
    this.interactions = new Interactions(options.now ?? Date.now);
    const encodedId = Buffer.from(this.botUser.id).toString("base64url");
    this.token = options.token ?? `${encodedId}.Fake00.fake-discord-token-for-tests`;
    this.heartbeatIntervalMs = options.heartbeatIntervalMs ?? 41_250;
    this.messageContentIntentEnabled = options.messageContentIntentEnabled ?? true;
    this.readyDelayMs = options.readyDelayMs ?? 0;
    this.channels.set(this.guildChannelId, {
      channel: {
        id: this.guildChannelId,
        type: 0,
        guild_id: this.guildId,
        name: "general",
        position: 0,
        permission_overwrites: [],
        parent_id: null,
        nsfw: false,
        topic: null,
        rate_limit_per_user: 0,
      },
      botMessages: new Map(),
    });
    this.server = createServer((request, response) => {
      this.handle(request, response).catch((error: unknown) => {
        response.writeHead(500).end(String(error));
      });
    });
    this.gateway = new WebSocketServer({ server: this.server });
    this.gateway.on("connection", (socket, request) => this.accept(socket, request));
  }

  /** REST root for discord.js: `new Client({ rest: { api: fake.restRoot } })`. */
  get restRoot(): string {
    return `http://127.0.0.1:${this.port}/api`;
  }

  /** The gateway URL that `GET /gateway/bot` hands out. */
  get gatewayUrl(): string {
    return `ws://127.0.0.1:${this.port}`;
  }

  /** Number of gateway sessions currently connected and identified. */
  get connectedSessions(): number {
    return [...this.sessions.values()].filter((session) => session.socket).length;
  }

  /** Number of gateway WebSocket connections open now, identified or not. */
  get openGatewayConnections(): number {
    return this.gateway.clients.size;
  }

  private get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  /** Listens on 127.0.0.1, port 0. */
  async listen(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
  }

  /** Closes gateway sockets and REST connections, then stops listening. */
  async close(): Promise<void> {
    for (const socket of this.gateway.clients) socket.terminate();
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.gateway.close(() => resolve()));
    await closed;
  }

  /**
   * Cuts the network: every gateway connection is dropped without a close frame, and until
   * {@link goOnline} new gateway connections and REST requests are cut as they arrive.
   */
  goOffline(): void {
    this.offline = true;
    for (const socket of this.gateway.clients) socket.terminate();
    for (const session of this.sessions.values()) session.socket = undefined;
  }

  /** Lets connections and requests through again after {@link goOffline}. */
  goOnline(): void {
    this.offline = false;
  }

  /** Closes every gateway connection with `code` (4000 makes discord.js resume). */
  disconnect(code = 4000): void {
    for (const session of this.sessions.values()) {
      session.socket?.close(code, "fake gateway disconnect");
      session.socket = undefined;
    }
  }

  /**
   * Sends a user's message as MESSAGE_CREATE to the connected client, waiting up to
   * `timeoutMs` for a session to be ready. A channel id without `guildId` becomes a DM.
   */
  async sendUserMessage(input: DiscordUserMessageInput, timeoutMs = 10_000): Promise<APIMessage> {
    const session = await this.readySession(timeoutMs);
    const author = { ...userOf(input), ...(input.bot ? { bot: true } : {}) };
    const state = this.channelFor(input, author);
    const mention = `<@${this.botUser.id}>`;
    const content =
      input.mentionsBot && !input.content.includes(mention)
        ? `${mention} ${input.content}`
        : input.content;
    const created = this.newMessage(state, author, content);
    const message = {
      ...created,
      mentions: input.mentionsBot ? [this.botUser] : [],
      attachments: (input.attachments ?? []).map((file) => this.attach(created.channel_id, file)),
      ...(input.sticker
        ? { sticker_items: [{ id: this.snowflake(), name: "pickle", format_type: 1 }] }
        : {}),
      ...(input.poll
        ? {
            poll: {
              question: { text: "Lunch?" },
              answers: [
                { answer_id: 1, poll_media: { text: "pickles" } },
                { answer_id: 2, poll_media: { text: "more pickles" } },
              ],
              expiry: new Date(Date.now() + 86_400_000).toISOString(),
              allow_multiselect: false,
              layout_type: 1,
            },
          }
        : {}),
    };
    state.channel.last_message_id = message.id;
    const event = input.guildId
      ? { ...message, guild_id: input.guildId, member: newMember(), channel_type: 0 }
      : { ...message, channel_type: 1 };
    this.dispatch(session, "MESSAGE_CREATE", event);
    return message;
  }

  /**
   * Presses a button of a bot message: sends INTERACTION_CREATE (a MESSAGE_COMPONENT
   * interaction) to the connected client and returns the interaction's id and token, which
   * can be responded to for 3 s. Throws when the message shows no such button.
   */
  async pressButton(
    input: DiscordButtonPressInput,
    timeoutMs = 10_000,
  ): Promise<{ id: string; token: string }> {
    const session = await this.readySession(timeoutMs);
    const message = this.channels.get(input.channelId)?.botMessages.get(input.messageId);
    const buttons = (message?.components as ActionRow[] | undefined)?.flatMap((r) => r.components);
    if (!message || !buttons?.some((button) => button.custom_id === input.customId)) {
      throw new Error(
        `pressButton: message ${input.messageId} in channel ${input.channelId} shows no button "${input.customId}"`,
      );
    }
    const id = this.snowflake();
    const token = `interaction-token-${randomBytes(8).toString("hex")}`;
    this.interactions.create(id, token);
    this.dispatch(session, "INTERACTION_CREATE", this.interaction(id, token, input, message));
    return { id, token };
  }

  /**
   * The DM channel between the bot and a user, opened as `POST /users/@me/channels` would
   * (the same channel each time); the user can then write in it and the bot send to it.
   */
  openDirectChannel(userId: string): string {
    return String(this.createDm(userId).channel.id);
  }

  /** Components of a bot message as it shows them now; [] when it has none. */
  componentsOf(channelId: string, messageId: string): ActionRow[] {
    const message = this.channels.get(channelId)?.botMessages.get(messageId);
    return (message?.components as ActionRow[] | undefined) ?? [];
  }

  /**
   * Makes the next `times` requests matching `route` fail. `route` is "METHOD /path" where a
   * `:name` segment matches anything, e.g. "POST /channels/:id/messages". @discordjs/rest
   * retries a 5xx three times before it rejects, so use `times: 4` to surface one.
   */
  failNext(route: string, failure: DiscordFailure, times = 1): void {
    this.failures.push({ route, failure, remaining: times });
  }

  /**
   * Leaves the next `times` requests matching `route` (as in {@link failNext}) unanswered:
   * they are recorded with status 0 and stay open until the client gives up or `close()`.
   */
  hangNext(route: string, times = 1): void {
    this.failures.push({ route, failure: "hang", remaining: times });
  }

  /** Closes the next IDENTIFY with `code`, as Discord does for a reset token or intent. */
  closeNextIdentify(code: UnrecoverableCloseCode): void {
    this.identifyCloses.push(code);
  }

  /** Current content (after edits, without deleted ones) of each bot message in a channel. */
  messages(channelId: string): string[] {
    return [...(this.channels.get(channelId)?.botMessages.values() ?? [])].map((m) => m.content);
  }

  /** The bot's messages in a channel with their ids and buttons, oldest first. */
  botMessagesOf(
    channelId: string,
  ): { messageId: string; content: string; components: ActionRow[] }[] {
    return [...(this.channels.get(channelId)?.botMessages.values() ?? [])].map((m) => ({
      messageId: m.id,
      content: m.content,
      components: (m.components as ActionRow[] | undefined) ?? [],
    }));
  }

  /** The bot's messages in a channel that carry files, one row per file, oldest first. */
  filesOf(channelId: string): BotAttachment[] {
    const messages = [...(this.channels.get(channelId)?.botMessages.values() ?? [])];
    return messages.flatMap((message) =>
      ((message as { uploads?: UploadedAttachment[] }).uploads ?? []).map((file) => ({
        ...file,
        messageId: message.id,
        content: message.content,
      })),
    );
  }

  /** REST calls matching a route pattern such as "POST /channels/:id/messages". */
  callsTo(route: string): DiscordCall[] {
    return this.sent.filter((call) => routeMatches(route, call.method, call.path));
  }

  /**
   * Resolves with the first truthy value of `check` (the shared {@link waitFor}); rejects
   * after `timeoutMs` with the latest calls in the message.
   */
  waitFor<T>(check: () => T | false | null | undefined, timeoutMs = 5000): Promise<T> {
    const recent = () =>
      this.sent.slice(-8).map((call) => `${call.method} ${call.path} ${call.status}`);
    return waitFor(
      check,
      () => `a change of the fake; last calls: ${recent()}`,
      timeoutMs,
    ) as Promise<T>;
  }

  /** Waits for a successful REST call matching `route` (see {@link failNext}) and returns it. */
  waitForCall(
    route: string,
    match: (call: DiscordCall) => boolean = () => true,
    timeoutMs = 5000,
  ): Promise<DiscordCall> {
    return this.waitFor(
      () => this.callsTo(route).find((call) => isSuccess(call) && match(call)),
      timeoutMs,
    );
  }

  /** The first connected session, waiting up to `timeoutMs` for one. */
  private readySession(timeoutMs: number): Promise<GatewaySession> {
    return this.waitFor(() => [...this.sessions.values()].find((s) => s.socket), timeoutMs);
  }

  /** An INTERACTION_CREATE payload for a button press, in a guild channel or a DM. */
  private interaction(
    id: string,
    token: string,
    input: DiscordButtonPressInput,
    message: APIMessage,
  ): Record<string, unknown> {
    const user = userOf(input);
    const guildId = this.channels.get(input.channelId)?.channel.guild_id;
    const where =
      typeof guildId === "string"
        ? { guild_id: guildId, member: { ...newMember(), user, permissions: EVERYONE_PERMISSIONS } }
        : { user };
    return {
      id,
      token,
      type: 3,
      version: 1,
      application_id: this.botUser.id,
      data: { custom_id: input.customId, component_type: 2 },
      message,
      channel_id: input.channelId,
      channel: { id: input.channelId, type: guildId === undefined ? 1 : 0 },
      app_permissions: EVERYONE_PERMISSIONS,
      locale: "en-US",
      entitlements: [],
      authorizing_integration_owners: {},
      context: guildId === undefined ? 1 : 0,
      attachment_size_limit: 10_485_760,
      ...where,
    };
  }

  private snowflake(): string {
    this.snowflakeCounter += 1n;
    return String(((BigInt(Date.now()) - DISCORD_EPOCH) << 22n) + (this.snowflakeCounter % 4096n));
  }

  private newMessage(state: ChannelState, author: APIUser, content: string): APIMessage {
    return {
      id: this.snowflake(),
      channel_id: String(state.channel.id),
      author,
      content,
      timestamp: new Date().toISOString(),
      edited_timestamp: null,
      tts: false,
      mention_everyone: false,
      mentions: [],
      mention_roles: [],
      attachments: [],
      embeds: [],
      pinned: false,
      type: 0,
      components: [],
    };
  }

  private channelFor(input: DiscordUserMessageInput, author: APIUser): ChannelState {
    const existing = this.channels.get(input.channelId);
    if (input.guildId !== undefined) {
      if (input.guildId !== this.guildId || existing?.channel.guild_id !== this.guildId) {
        throw new Error(
          `sendUserMessage: channel ${input.channelId} is not a text channel of guild ${this.guildId}`,
        );
      }
      return existing;
    }
    if (existing?.channel.guild_id !== undefined) {
      throw new Error(
        `sendUserMessage: channel ${input.channelId} is a guild channel; pass guildId`,
      );
    }
    return existing ?? this.openDm(input.channelId, author);
  }

  private openDm(channelId: string, recipient: APIUser): ChannelState {
    const state = {
      channel: { id: channelId, type: 1, recipients: [recipient], last_message_id: null },
      botMessages: new Map(),
    };
    this.channels.set(channelId, state);
    return state;
  }

  // --- gateway -------------------------------------------------------------------------

  private accept(socket: WebSocket, request: IncomingMessage): void {
    if (this.offline) {
      socket.terminate();
      return;
    }
    const query = new URL(request.url ?? "/", "http://127.0.0.1").searchParams;
    this.gatewayQueries.push(`?${query}`);
    if (query.get("v") !== "10" || query.get("encoding") !== "json" || query.has("compress")) {
      socket.close(4012, "fake gateway speaks only v=10, encoding=json, without compress");
      return;
    }
    let session: GatewaySession | undefined;
    socket.on("message", (raw) => {
      const payload = JSON.parse(String(raw)) as { op: number; d: Record<string, unknown> | null };
      if (payload.op === 1) {
        this.heartbeats += 1;
        socket.send(JSON.stringify({ op: 11, d: null }));
      } else if (payload.op === 2) {
        session = this.identify(socket, payload.d ?? {});
      } else if (payload.op === 6) {
        session = this.resume(socket, payload.d ?? {});
      }
    });
    socket.on("close", () => {
      if (session?.socket === socket) session.socket = undefined;
    });
    socket.send(
      JSON.stringify({
        op: 10,
        d: { heartbeat_interval: this.heartbeatIntervalMs },
        s: null,
        t: null,
      }),
    );
  }

  /** The close Discord answers an IDENTIFY with: a wrong token, a disallowed intent. */
  private refusalOf(identify: Record<string, unknown>): UnrecoverableCloseCode | undefined {
    if (identify.token !== this.token) return 4004;
    const intents = Number(identify.intents);
    if (!this.messageContentIntentEnabled && intents & MESSAGE_CONTENT_INTENT) return 4014;
    return undefined;
  }

  private identify(
    socket: WebSocket,
    identify: Record<string, unknown>,
  ): GatewaySession | undefined {
    this.identifies.push(identify);
    const injectedClose = this.identifyCloses.shift();
    const close = injectedClose ?? this.refusalOf(identify);
    if (close !== undefined) {
      socket.close(close, CLOSE_REASONS[close]);
      return undefined;
    }
    const session: GatewaySession = {
      id: randomBytes(16).toString("hex"),
      sequence: 0,
      events: [],
      socket,
    };
    this.sessions.set(session.id, session);
    if (this.readyDelayMs > 0) setTimeout(() => this.ready(session), this.readyDelayMs);
    else this.ready(session);
    return session;
  }

  private ready(session: GatewaySession): void {
    this.dispatch(session, "READY", {
      v: 10,
      user: { ...this.botUser, verified: true, mfa_enabled: false, flags: 0 },
      guilds: [{ id: this.guildId, unavailable: true }],
      session_id: session.id,
      resume_gateway_url: this.gatewayUrl,
      shard: [0, 1],
      application: { id: this.botUser.id, flags: 0 },
    });
    this.dispatch(session, "GUILD_CREATE", this.guildCreate());
  }

  private resume(socket: WebSocket, resume: Record<string, unknown>): GatewaySession | undefined {
    const session = this.sessions.get(String(resume.session_id));
    if (!session || resume.token !== this.token) {
      socket.send(JSON.stringify({ op: 9, d: false, s: null, t: null }));
      return undefined;
    }
    session.socket = socket;
    const missed = session.events.filter(
      (event) => (event as { s: number }).s > Number(resume.seq),
    );
    for (const event of missed) socket.send(JSON.stringify(event));
    this.dispatch(session, "RESUMED", null);
    return session;
  }

  private dispatch(session: GatewaySession, type: string, data: unknown): void {
    session.sequence += 1;
    const event = { op: 0, t: type, s: session.sequence, d: data };
    session.events.push(event);
    session.socket?.send(JSON.stringify(event));
  }

  private guildCreate(): Record<string, unknown> {
    const joinedAt = new Date().toISOString();
    const channels = [...this.channels.values()]
      .map((state) => state.channel)
      .filter((channel) => channel.guild_id === this.guildId);
    return {
      id: this.guildId,
      name: "Fake Guild",
      icon: null,
      owner_id: "1",
      afk_timeout: 300,
      verification_level: 0,
      default_message_notifications: 0,
      explicit_content_filter: 0,
      roles: [
        {
          id: this.guildId,
          name: "@everyone",
          color: 0,
          hoist: false,
          position: 0,
          permissions: EVERYONE_PERMISSIONS,
          managed: false,
          mentionable: false,
          flags: 0,
        },
      ],
      emojis: [],
      stickers: [],
      features: [],
      mfa_level: 0,
      system_channel_flags: 0,
      premium_tier: 0,
      preferred_locale: "en-US",
      nsfw_level: 0,
      joined_at: joinedAt,
      large: false,
      unavailable: false,
      member_count: 2,
      members: [
        { user: this.botUser, roles: [], joined_at: joinedAt, deaf: false, mute: false, flags: 0 },
      ],
      channels,
      threads: [],
      presences: [],
      voice_states: [],
      stage_instances: [],
      guild_scheduled_events: [],
    };
  }

  // --- REST ----------------------------------------------------------------------------

  /** Stores an attachment's bytes and returns it as a message carries it. */
  private attach(
    channelId: string,
    file: { name: string; contentType: string; bytes: Uint8Array; size?: number },
  ): APIAttachment {
    const id = this.snowflake();
    const url = `http://127.0.0.1:${this.port}/attachments/${channelId}/${id}/${file.name}`;
    this.files.set(new URL(url).pathname, file.bytes);
    return {
      id,
      filename: file.name,
      content_type: file.contentType,
      size: file.size ?? file.bytes.byteLength,
      url,
      proxy_url: url,
    };
  }

  /** Attachment bytes by URL path. */
  private readonly files = new Map<string, Uint8Array>();
  /** Every attachment download, by URL path. */
  readonly downloads: string[] = [];

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    if (this.offline) return void request.socket.destroy();
    const filePath = new URL(request.url ?? "/", "http://127.0.0.1").pathname;
    const file = this.files.get(filePath);
    if (file) {
      this.downloads.push(filePath);
      return void response.writeHead(200, { "content-type": "application/octet-stream" }).end(file);
    }
    const method = request.method ?? "GET";
    const path = new URL(request.url ?? "/", "http://127.0.0.1").pathname.replace(
      /^\/api\/v\d+/,
      "",
    );
    const body = await readBody(request);
    const call: DiscordCall = { method, path, body, time: epochNow(), status: 200 };
    try {
      const interactionCallback = /^\/interactions\//.test(path);
      if (!interactionCallback && request.headers.authorization !== `Bot ${this.token}`) {
        throw new RestFailure(401, { message: "401: Unauthorized", code: 0 });
      }
      if (this.injectedFailure(method, path) === "hang") {
        call.status = 0;
        this.sent.push(call);
        return;
      }
      const result = this.route(method, path, body ?? {});
      call.status = result === undefined ? 204 : 200;
      this.recordAndSend(call, response, result === undefined ? "" : JSON.stringify(result));
    } catch (error) {
      if (!(error instanceof RestFailure)) throw error;
      call.status = error.status;
      this.recordAndSend(call, response, JSON.stringify(error.body), error.headers);
    }
  }

  private recordAndSend(
    call: DiscordCall,
    response: ServerResponse,
    body: string,
    headers: Record<string, string> = {},
  ): void {
    this.sent.push(call);
    const contentType: Record<string, string> =
      body === "" ? {} : { "content-type": "application/json" };
    response.writeHead(call.status, { ...contentType, ...headers }).end(body);
  }

  /** Throws the failure injected for this request, or says to leave it unanswered. */
  private injectedFailure(method: string, path: string): "hang" | undefined {
    const index = this.failures.findIndex((entry) => routeMatches(entry.route, method, path));
    const entry = this.failures[index];
    if (!entry) return undefined;
    entry.remaining -= 1;
    if (entry.remaining <= 0) this.failures.splice(index, 1);
    const { failure } = entry;
    if (failure === "hang") return "hang";
    if (failure.status === 429) {
      const seconds = String(failure.retryAfter);
      throw new RestFailure(
        429,
        { message: "You are being rate limited.", retry_after: failure.retryAfter, global: false },
        {
          "retry-after": seconds,
          "x-ratelimit-limit": "5",
          "x-ratelimit-remaining": "0",
          "x-ratelimit-reset-after": seconds,
          "x-ratelimit-bucket": "fake-bucket",
          "x-ratelimit-scope": "user",
        },
      );
    }
    if ("code" in failure)
      throw new RestFailure(failure.status, { message: failure.message, code: failure.code });
    throw new RestFailure(failure.status, { message: `${failure.status}: Server Error`, code: 0 });
  }

  /** Returns the JSON result, or undefined for 204 No Content. */
  private route(method: string, path: string, body: Record<string, unknown>): unknown {
    const [, first, id, sub, messageId] = path.split("/");
    if (method === "POST" && first === "interactions" && messageId === "callback") {
      return this.interactions.respond(String(id), String(sub), body);
    }
    const key = `${method} /${first}/${first === "channels" ? ":id" : id}${sub ? `/${sub}` : ""}${messageId ? "/:mid" : ""}`;
    switch (key) {
      case "GET /gateway/bot":
        return {
          url: this.gatewayUrl,
          shards: 1,
          session_start_limit: {
            total: 1000,
            remaining: 999,
            reset_after: 14_400_000,
            max_concurrency: 1,
          },
        };
      case "GET /users/@me":
        return this.botUser;
      case "POST /users/@me/channels":
        return this.createDm(String(body.recipient_id)).channel;
      case "GET /channels/:id":
        return this.channel(id).channel;
      case "POST /channels/:id/typing":
        this.channel(id);
        return undefined;
      case "POST /channels/:id/messages":
        return this.createMessage(this.channel(id), body);
      case "GET /channels/:id/messages/:mid":
        return this.botMessage(id, messageId);
      case "PATCH /channels/:id/messages/:mid":
        return this.editMessage(id, messageId, body);
      case "DELETE /channels/:id/messages/:mid":
        this.botMessage(id, messageId);
        this.channel(id).botMessages.delete(String(messageId));
        return undefined;
      default:
        throw new RestFailure(404, { message: "404: Not Found", code: 0 });
    }
  }

  private channel(id: string | undefined): ChannelState {
    const state = this.channels.get(String(id));
    if (!state) throw new RestFailure(404, { message: "Unknown Channel", code: 10003 });
    return state;
  }

  private createDm(userId: string): ChannelState {
    const existing = [...this.channels.values()].find(
      (state) => (state.channel.recipients as APIUser[] | undefined)?.[0]?.id === userId,
    );
    const recipient = {
      id: userId,
      username: `user${userId}`,
      discriminator: "0",
      global_name: null,
      avatar: null,
    };
    return existing ?? this.openDm(this.snowflake(), recipient);
  }

  private botMessage(channelId: string | undefined, messageId: string | undefined): APIMessage {
    const message = this.channel(channelId).botMessages.get(String(messageId));
    if (!message) throw new RestFailure(404, { message: "Unknown Message", code: 10008 });
    return message;
  }

  private createMessage(state: ChannelState, body: Record<string, unknown>): APIMessage {
    const content = checkContent(body);
    const uploads = checkUploads(body.files);
    // enforce_nonce: a nonce seen before returns the message it created (Discord keeps
    // nonces a few minutes; the fake keeps them for its life).
    checkNonce(body.nonce);
    const nonce = body.enforce_nonce === true ? body.nonce : undefined;
    const nonceKey =
      typeof nonce === "string" || typeof nonce === "number"
        ? `${state.channel.id}:${nonce}`
        : null;
    const earlier = nonceKey === null ? undefined : this.nonces.get(nonceKey);
    const replayed = earlier === undefined ? undefined : state.botMessages.get(earlier);
    if (replayed) return replayed;
    const message = this.newMessage(state, this.botUser, content);
    const guildId = state.channel.guild_id;
    const stored = typeof guildId === "string" ? { ...message, guild_id: guildId } : message;
    if (Array.isArray(body.embeds)) stored.embeds = body.embeds;
    if (body.components !== undefined) stored.components = checkComponents(body.components);
    if (uploads.length > 0) {
      stored.attachments = uploads.map((file, index) => ({
        id: `${stored.id}${index}`,
        filename: file.filename,
        size: file.size,
        url: `${this.restRoot}/attachments/${file.sha256}`,
        proxy_url: `${this.restRoot}/attachments/${file.sha256}`,
        content_type: file.contentType,
      }));
      Object.assign(stored, { uploads });
    }
    const reference = body.message_reference as { message_id?: string } | undefined;
    if (reference?.message_id) {
      Object.assign(stored, {
        type: 19,
        message_reference: { ...reference, channel_id: state.channel.id },
      });
    }
    state.botMessages.set(stored.id, stored);
    state.channel.last_message_id = stored.id;
    if (nonceKey !== null) this.nonces.set(nonceKey, stored.id);
    return stored;
  }

  private editMessage(
    channelId: string | undefined,
    messageId: string | undefined,
    body: Record<string, unknown>,
  ): APIMessage {
    const message = this.botMessage(channelId, messageId);
    const edited = { ...message, edited_timestamp: new Date().toISOString() };
    if ("content" in body) edited.content = checkContent(body);
    if ("components" in body) edited.components = checkComponents(body.components);
    this.channel(channelId).botMessages.set(edited.id, edited);
    return edited;
  }
}

function checkContent(body: Record<string, unknown>): string {
  const content = typeof body.content === "string" ? body.content : "";
  const hasOther =
    (Array.isArray(body.embeds) && body.embeds.length > 0) ||
    Array.isArray(body.files) ||
    (Array.isArray(body.components) && body.components.length > 0);
  if (content === "" && !hasOther)
    throw new RestFailure(400, { message: "Cannot send an empty message", code: 50006 });
  if (content.length > MAX_CONTENT_LENGTH) {
    const message = "Must be 2000 or fewer in length.";
    throw invalidFormBody(["content"], "BASE_TYPE_MAX_LENGTH", message);
  }
  return content;
}

/** The files of a new message; over Discord's upload limit, 413 with code 40005. */
function checkUploads(files: unknown): UploadedAttachment[] {
  const uploads = Array.isArray(files) ? (files as UploadedAttachment[]) : [];
  const total = uploads.reduce((sum, file) => sum + file.size, 0);
  if (total > MAX_UPLOAD_BYTES) {
    throw new RestFailure(413, { message: "Request entity too large", code: 40005 });
  }
  return uploads;
}

/** A nonce is an integer or a string of at most 25 characters, as Discord documents. */
function checkNonce(nonce: unknown): void {
  if (typeof nonce === "string" && nonce.length > MAX_NONCE_LENGTH) {
    const message = `Must be ${MAX_NONCE_LENGTH} or fewer in length.`;
    throw invalidFormBody(["nonce"], "BASE_TYPE_MAX_LENGTH", message);
  }
}

/** A user as Discord describes one in an event. */
function userOf(input: { userId: string; username?: string }): APIUser {
  return {
    id: input.userId,
    username: input.username ?? `user${input.userId}`,
    discriminator: "0",
    global_name: null,
    avatar: null,
  };
}

/** A guild member's fields beside the user. */
function newMember() {
  return { roles: [], joined_at: new Date().toISOString(), deaf: false, mute: false, flags: 0 };
}

/** Answered with a 2xx; a hung request (status 0) is not. */
function isSuccess(call: DiscordCall): boolean {
  return call.status >= 200 && call.status < 300;
}

function routeMatches(route: string, method: string, path: string): boolean {
  const [routeMethod, routePath = ""] = route.split(" ");
  const expected = routePath.split("/");
  const actual = path.split("/");
  if (routeMethod?.toUpperCase() !== method || expected.length !== actual.length) return false;
  return expected.every((segment, index) => segment.startsWith(":") || segment === actual[index]);
}

function epochNow(): number {
  return performance.timeOrigin + performance.now();
}

async function readBody(request: IncomingMessage): Promise<Record<string, unknown> | undefined> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  const body = Buffer.concat(chunks);
  if (body.length === 0) return undefined;
  const type = request.headers["content-type"] ?? "";
  const boundary = /boundary=(.+)$/.exec(type)?.[1];
  if (!boundary) return JSON.parse(body.toString()) as Record<string, unknown>;
  return readMultipart(body, boundary);
}

/** discord.js sends files as multipart: `payload_json` plus `files[n]` parts. */
function readMultipart(body: Buffer, boundary: string): Record<string, unknown> {
  const files: UploadedAttachment[] = [];
  let payload: Record<string, unknown> = {};
  for (const part of body.toString("latin1").split(`--${boundary}`)) {
    const split = part.indexOf("\r\n\r\n");
    if (split < 0) continue;
    const headers = part.slice(0, split);
    const content = Buffer.from(part.slice(split + 4).replace(/\r\n$/, ""), "latin1");
    const name = /name="([^"]*)"/.exec(headers)?.[1] ?? "";
    const filename = /filename="([^"]*)"/.exec(headers)?.[1];
    const contentType = /content-type:\s*([^\r\n]+)/i.exec(headers)?.[1] ?? "";
    if (filename !== undefined) {
      const sha256 = createHash("sha256").update(content).digest("hex");
      files.push({ name, filename, size: content.length, sha256, contentType });
    } else if (name === "payload_json") payload = JSON.parse(content.toString("utf8"));
  }
  return { ...payload, files };
}
