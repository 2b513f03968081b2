/**
 * A fake Slack on 127.0.0.1, for the real `@slack/web-api` and `@slack/socket-mode`
 * clients pointed at it (`slackApiUrl` = {@link FakeSlack.apiUrl}):
 *
 *   Web API (POST /api/<method>, form or JSON body, `Authorization: Bearer <token>`):
 *     auth.test                 bot token ─► the bot's user id, scopes in `x-oauth-scopes`
 *     apps.connections.open     app token ─► a ws:// URL with a one-use ticket
 *     chat.postMessage/update   bot token ─► stored messages, as a channel shows them
 *     users.info                bot token ─► a person's name
 *     files.getUploadURLExternal  bot token, scope files:write ─► an upload URL and a file id
 *     files.completeUploadExternal  bot token, scope files:write ─► the uploaded file shared
 *                               into a channel (its thread), `initial_comment` its caption;
 *                               once per file, as Slack's docs say
 *     files.info                bot token, scope files:read ─► a file and where it is shared
 *   Upload URL (POST /upload/v1/<file id>): the bytes, multipart (any field) or raw
 *   Files people send (GET /files-pri/T1-<file id>/download/<name>, `url_private_download`):
 *     the bytes for the bot token with files:read; without a valid token a 302 to the
 *     sign-in page (GET /?redir=…, HTML), and the sign-in page itself for a bot token
 *     without files:read, as Slack answers (never an error status)
 *   Socket Mode (GET /link?ticket=…, WebSocket): `hello`, then envelopes (events_api for
 *     message.im and app_mention, interactive for block_actions); an envelope not acked
 *     within {@link FakeSlackOptions.redeliverAfterMs} is sent again (retry_attempt + 1,
 *     three retries at most), as Slack does; `disconnect` on demand
 *   response_url (POST /response/<press id>): the notice of a button press, refused after
 *     30 minutes (`expired_url`) or five uses (`used_url`)
 *
 * It refuses what Slack refuses, with Slack's error codes (HTTP 200, `ok: false`):
 * `not_authed`, `invalid_auth`, `not_allowed_token_type`, `channel_not_found`,
 * `not_in_channel`, `msg_too_long` (text over 40,000 characters), `no_text`,
 * `message_not_found`, `missing_scope` (with `needed`), `invalid_arguments` (an upload
 * without a file name, a length that is not a positive whole number, a completion without
 * files), `file_not_found` (a completion of a file not uploaded, or completed before);
 * and `ratelimited` as HTTP 429 with `Retry-After`.
 */
import { createHash, randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { type WebSocket, WebSocketServer } from "ws";

/** Slack refuses a message text longer than this (`msg_too_long`). */
export const SLACK_MAX_TEXT = 40_000;
/** How long Slack honours a press's `response_url`. */
const RESPONSE_URL_TTL_MS = 30 * 60 * 1000;
/** How many times a `response_url` may be used. */
const RESPONSE_URL_USES = 5;
/** How many times Slack sends an unacknowledged envelope again. */
const MAX_RETRIES = 3;
/** Slack's largest upload (1 GB). */
const MAX_UPLOAD_BYTES = 1_000_000_000;
/** The fault key of a person's file download (GET url_private_download). */
export const FILE_DOWNLOAD = "file download";

/** Options of {@link startFakeSlack}. */
export interface FakeSlackOptions {
  /** The fake's clock, for press expiry. (Default: Date.now) */
  now?: () => number;
  /** When an unacknowledged envelope is sent again. (Default: 3000 ms, as Slack) */
  redeliverAfterMs?: number;
  /** The bot token's scopes, as `auth.test` reports them. */
  scopes?: readonly string[];
}

/** A channel the fake knows: a DM (`D…`) or a public channel (`C…`). */
interface Channel {
  id: string;
  kind: "im" | "channel";
  /** Whether the bot is a member (a DM always; a channel when invited). */
  botMember: boolean;
  messages: StoredMessage[];
}

/** A message of the bot, as the channel shows it now. */
export interface StoredMessage {
  ts: string;
  text: string;
  threadTs?: string;
  blocks: SlackBlock[];
}

/** The Block Kit blocks the fake reads: sections and action rows of buttons. */
export interface SlackBlock {
  type: string;
  text?: { type: string; text: string };
  elements?: { type: string; action_id: string; value?: string; text: { text: string } }[];
}

/** One Web API call the fake received. */
export interface SlackCall {
  method: string;
  body: Record<string, unknown>;
  /** Slack's answer: `ok`, or the error code, or `http <status>`. */
  outcome: string;
  /** Epoch milliseconds (fractional) when the request arrived. */
  time: number;
  /** The `ts` of the message a successful chat.postMessage or chat.update showed. */
  ts?: string;
}

/** An answer to a press through its `response_url`. */
export interface PressResponse {
  pressId: string;
  body: Record<string, unknown>;
  status: number;
}

/** A fault injected into the next call of a method. */
export type SlackFault = { status: 429; retryAfterS: number } | { status: 502 } | { error: string };

/** An envelope sent over Socket Mode, and what happened to it. */
export interface SentEnvelope {
  envelopeId: string;
  type: "events_api" | "interactive";
  payload: Record<string, unknown>;
  /** How many times it was sent. */
  sends: number;
  acked: boolean;
}

/** A person writing, as {@link FakeSlack.write} takes it. */
export interface FakeSlackMessage {
  userId: string;
  channelId: string;
  text: string;
  /** The thread the message is in (its parent's ts). */
  threadTs?: string;
  /** Sent by a bot: its `bot_id`. */
  botId?: string;
  /** Not a new message: `message_changed`, `message_deleted`, … */
  subtype?: string;
  /** Files shared with the message: a DM's event then has the subtype `file_share`. */
  files?: FakeSlackFile[];
}

/** A file a person shares. */
export interface FakeSlackFile {
  name: string;
  mimetype: string;
  bytes: Uint8Array;
  /** `slack_audio` for an audio clip recorded in Slack, `slack_video` for a video clip. */
  subtype?: string;
  /** (Default: hosted) */
  mode?: "hosted" | "external" | "tombstone";
}

/** A file the bot shared into a channel, as the channel shows it. */
export interface SharedFile {
  fileId: string;
  name: string;
  size: number;
  /** SHA-256 of the uploaded bytes, hex. */
  sha256: string;
  /** The `initial_comment`, as sent ("" for none). */
  caption: string;
  threadTs?: string;
}

/** A file the fake holds: shared by a person, or uploaded by the bot. */
interface HeldFile {
  id: string;
  name: string;
  mimetype: string;
  /** The bytes; undefined until an upload's bytes arrived. */
  bytes?: Uint8Array;
  /** The length the upload announced. */
  length?: number;
  /** Where the file is shared. */
  channels: string[];
  completed: boolean;
}

/** A started fake Slack; see the file header. */
export interface FakeSlack {
  readonly botToken: string;
  readonly appToken: string;
  readonly botUserId: string;
  /** `slackApiUrl` for the clients: `http://127.0.0.1:<port>/api/`. */
  readonly apiUrl: string;
  /** A public channel the bot was invited to. */
  readonly channelId: string;
  /** A public channel the bot is not in. */
  readonly foreignChannelId: string;
  readonly calls: SlackCall[];
  /** Called with each Web API call once it is answered (the chaos run kills on it). */
  onCall: ((call: SlackCall) => void) | null;
  readonly envelopes: SentEnvelope[];
  readonly pressResponses: PressResponse[];
  /** Adds a person (for users.info) and opens their DM with the bot; returns its id. */
  addPerson(userId: string, name: string): string;
  /** The bot's messages in a channel (a thread's replies included), oldest first. */
  messages(channelId: string): StoredMessage[];
  /** The files the bot shared into a channel (a thread's included), oldest first. */
  sharedFiles(channelId: string): SharedFile[];
  /** The file ids of people's files the bot downloaded, in order. */
  readonly downloads: string[];
  /**
   * A person (or a bot) writes: a DM goes out as `message` (channel_type im); a channel
   * message as `app_mention` when it mentions the bot (`<@bot>`), else not at all (the app
   * subscribes to no channel messages). Resolves with the envelope, or null.
   */
  write(message: FakeSlackMessage): SentEnvelope | null;
  /** A person presses a button of a bot message; returns the press (its `trigger_id`). */
  press(input: { userId: string; channelId: string; ts: string; actionId: string }): string;
  /** Sends `disconnect` with the reason on every open socket. */
  disconnect(reason: "refresh_requested" | "warning" | "link_disabled"): void;
  /** Makes the next call of `method` fail. */
  failNext(method: string, fault: SlackFault): void;
  /** Leaves the next call of `method` unanswered until close. */
  hangNext(method: string): void;
  /** Runs the next call of `method`, then cuts the connection: Slack did it, the answer is lost. */
  loseAnswerNext(method: string): void;
  /** Revokes a token: from now on it is `invalid_auth`. */
  revoke(token: string): void;
  /** Cuts every socket and refuses requests and connections until {@link goOnline}. */
  goOffline(): void;
  goOnline(): void;
  /** Open Socket Mode connections. */
  openSockets(): number;
  callsTo(method: string): SlackCall[];
  close(): Promise<void>;
}

const DEFAULT_SCOPES = [
  "chat:write",
  "im:history",
  "app_mentions:read",
  "users:read",
  "files:read",
  "files:write",
];

/** Starts a fake Slack on a free port. */
export async function startFakeSlack(options: FakeSlackOptions = {}): Promise<FakeSlack> {
  const now = options.now ?? Date.now;
  const redeliverAfterMs = options.redeliverAfterMs ?? 3000;
  const botToken = `xoxb-1-${randomBytes(8).toString("hex")}`;
  const appToken = `xapp-1-A1-${randomBytes(8).toString("hex")}`;
  const botUserId = "UBOT0001";
  const revoked = new Set<string>();
  const people = new Map<string, string>();
  const channels = new Map<string, Channel>();
  const addChannel = (id: string, kind: Channel["kind"], botMember: boolean) =>
    channels.set(id, { id, kind, botMember, messages: [] });
  addChannel("C0GENERAL", "channel", true);
  addChannel("C0FOREIGN", "channel", false);
  const calls: SlackCall[] = [];
  const envelopes: SentEnvelope[] = [];
  const pressResponses: PressResponse[] = [];
  const faults = new Map<string, SlackFault[]>();
  const hangs = new Map<string, number>();
  const lostAnswers = new Map<string, number>();
  const files = new Map<string, HeldFile>();
  const shared = new Map<string, SharedFile[]>();
  const downloads: string[] = [];
  const hung: ServerResponse[] = [];
  const tickets = new Set<string>();
  const presses = new Map<string, { at: number; uses: number }>();
  const sockets = new Set<WebSocket>();
  const timers = new Set<NodeJS.Timeout>();
  let offline = false;
  let counter = 0;
  let clock = 1_700_000_000;
  const nextTs = () => `${clock++}.${String(++counter).padStart(6, "0")}`;
  let port = 0;

  const server: Server = createServer((request, response) => {
    if (offline) return void request.socket.destroy();
    void handle(request, response);
  });
  const wss = new WebSocketServer({ noServer: true });
  server.on("upgrade", (request, socket, head) => {
    const ticket = new URL(request.url ?? "/", "http://x").searchParams.get("ticket") ?? "";
    if (offline || !tickets.delete(ticket)) return void socket.destroy();
    wss.handleUpgrade(request, socket, head, (ws) => {
      sockets.add(ws);
      ws.on("close", () => sockets.delete(ws));
      ws.on("message", (data) => onAck(String(data)));
      ws.send(
        JSON.stringify({
          type: "hello",
          num_connections: sockets.size,
          debug_info: { host: "fake-slack" },
          connection_info: { app_id: "A1" },
        }),
      );
      // Envelopes not acknowledged yet go to the new connection too.
      for (const envelope of envelopes) if (!envelope.acked) transmit(envelope, ws);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as AddressInfo).port;

  function onAck(text: string): void {
    const { envelope_id: id } = JSON.parse(text) as { envelope_id?: string };
    const envelope = envelopes.find((e) => e.envelopeId === id);
    if (envelope) envelope.acked = true;
  }

  function transmit(envelope: SentEnvelope, only?: WebSocket): void {
    const target = only ?? [...sockets][0];
    if (target === undefined) return;
    envelope.sends += 1;
    target.send(
      JSON.stringify({
        envelope_id: envelope.envelopeId,
        type: envelope.type,
        payload: envelope.payload,
        accepts_response_payload: false,
        retry_attempt: envelope.sends - 1,
        retry_reason: envelope.sends > 1 ? "timeout" : "",
      }),
    );
  }

  /** Sends an envelope now and again while it is not acknowledged, up to three retries. */
  function deliver(type: SentEnvelope["type"], payload: Record<string, unknown>): SentEnvelope {
    const envelope: SentEnvelope = {
      envelopeId: randomBytes(8).toString("hex"),
      type,
      payload,
      sends: 0,
      acked: false,
    };
    envelopes.push(envelope);
    transmit(envelope);
    const retry = () => {
      if (envelope.acked || envelope.sends > MAX_RETRIES) return;
      transmit(envelope);
      schedule();
    };
    const schedule = () => {
      const timer = setTimeout(() => {
        timers.delete(timer);
        retry();
      }, redeliverAfterMs);
      timers.add(timer);
    };
    schedule();
    return envelope;
  }

  async function readBody(request: IncomingMessage): Promise<Record<string, unknown>> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString("utf8");
    if ((request.headers["content-type"] ?? "").includes("json")) {
      return text === "" ? {} : (JSON.parse(text) as Record<string, unknown>);
    }
    const body: Record<string, unknown> = {};
    for (const [key, value] of new URLSearchParams(text)) {
      body[key] = value.startsWith("[") || value.startsWith("{") ? JSON.parse(value) : value;
    }
    return body;
  }

  function send(response: ServerResponse, status: number, body: object, headers = {}): void {
    response.writeHead(status, { "content-type": "application/json", ...headers });
    response.end(JSON.stringify(body));
  }

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? "/", "http://x");
    if (url.pathname.startsWith("/files-pri/")) return serveFile(request, url, response);
    if (url.pathname === "/" && request.method === "GET") return signInPage(response);
    if (url.pathname.startsWith("/upload/v1/")) return receiveUpload(request, url, response);
    const body = await readBody(request);
    if (url.pathname.startsWith("/response/")) {
      return answerPress(url.pathname.slice("/response/".length), body, response);
    }
    const method = url.pathname.replace(/^\/api\//, "");
    const call: SlackCall = {
      method,
      body,
      outcome: "ok",
      time: performance.timeOrigin + performance.now(),
    };
    calls.push(call);
    const hangsLeft = hangs.get(method) ?? 0;
    if (hangsLeft > 0) {
      hangs.set(method, hangsLeft - 1);
      call.outcome = "hung";
      hung.push(response);
      return;
    }
    const fault = faults.get(method)?.shift();
    if (fault) return injectFault(call, fault, response);
    const token = (request.headers.authorization ?? "").replace(/^Bearer /, "") || body.token;
    const answer = run(method, String(token ?? ""), body);
    call.outcome = answer.ok ? "ok" : String(answer.error);
    if (answer.ok && typeof answer.ts === "string") call.ts = answer.ts;
    if (takeOne(lostAnswers, method)) {
      call.outcome = `${call.outcome}, answer lost`;
      response.socket?.destroy();
      return;
    }
    const headers = method === "auth.test" && answer.ok ? { "x-oauth-scopes": scopes() } : {};
    send(response, 200, answer, headers);
    fake.onCall?.(call);
  }

  /** Counts down one planned fault of `method`; true when there was one. */
  function takeOne(planned: Map<string, number>, method: string): boolean {
    const left = planned.get(method) ?? 0;
    if (left > 0) planned.set(method, left - 1);
    return left > 0;
  }

  function grantedScopes(): readonly string[] {
    return options.scopes ?? DEFAULT_SCOPES;
  }

  function scopes(): string {
    return grantedScopes().join(",");
  }

  /** Slack's answer to a method the token lacks the scope of. */
  function missingScope(needed: string) {
    return { ok: false, error: "missing_scope", needed, provided: scopes() };
  }

  /** A person's file for the bot token with files:read; Slack's sign-in page otherwise. */
  function serveFile(request: IncomingMessage, url: URL, response: ServerResponse): void {
    const fault = faults.get(FILE_DOWNLOAD)?.shift();
    if (fault) {
      const call = { method: FILE_DOWNLOAD, body: {}, outcome: "ok", time: Date.now() };
      calls.push(call);
      injectFault(call, fault, response);
      return;
    }
    const token = (request.headers.authorization ?? "").replace(/^Bearer /, "");
    if (token !== botToken || revoked.has(token)) {
      const redir = encodeURIComponent(url.pathname);
      response.writeHead(302, { location: `/?redir=${redir}`, "content-type": "text/html" });
      response.end(`<a href="/?redir=${redir}">Found</a>.`);
      return;
    }
    if (!grantedScopes().includes("files:read")) {
      signInPage(response);
      return;
    }
    const id = /^\/files-pri\/T1-(F\w+)\//.exec(url.pathname)?.[1] ?? "";
    const file = files.get(id);
    if (!file?.bytes) {
      response.writeHead(404, { "content-type": "text/html" });
      response.end("<html>Not found</html>");
      return;
    }
    downloads.push(id);
    response.writeHead(200, { "content-type": file.mimetype, "content-length": file.bytes.length });
    response.end(file.bytes);
  }

  function signInPage(response: ServerResponse): void {
    response.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    response.end("<!DOCTYPE html><html><head><title>Sign in | Slack</title></head></html>");
  }

  /** The bytes of an upload: the first file of a multipart body, or the raw body. */
  async function receiveUpload(
    request: IncomingMessage,
    url: URL,
    response: ServerResponse,
  ): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks);
    const file = files.get(url.pathname.slice("/upload/v1/".length));
    calls.push({ method: "upload", body: {}, outcome: file ? "ok" : "http 404", time: Date.now() });
    if (!file || file.completed) {
      response.writeHead(404, { "content-type": "text/plain" });
      response.end("Not Found");
      return;
    }
    const type = request.headers["content-type"] ?? "";
    let bytes: Uint8Array = raw;
    if (type.startsWith("multipart/form-data")) {
      const form = await new Response(raw, { headers: { "content-type": type } }).formData();
      const part = [...form.values()].find((value) => typeof value !== "string");
      bytes = part ? new Uint8Array(await part.arrayBuffer()) : new Uint8Array();
    }
    file.bytes = bytes;
    response.writeHead(200, { "content-type": "text/plain" });
    response.end(`OK - ${bytes.length}`);
  }

  function getUploadURL(body: Record<string, unknown>) {
    if (!grantedScopes().includes("files:write")) return missingScope("files:write");
    const length = Number(body.length);
    const name = typeof body.filename === "string" ? body.filename : "";
    if (name === "" || !Number.isInteger(length) || length <= 0) {
      return { ok: false, error: "invalid_arguments" };
    }
    if (length > MAX_UPLOAD_BYTES) return { ok: false, error: "invalid_arguments" };
    const id = `F${randomBytes(5).toString("hex").toUpperCase()}`;
    files.set(id, { id, name, mimetype: "", length, channels: [], completed: false });
    return { ok: true, upload_url: `http://127.0.0.1:${port}/upload/v1/${id}`, file_id: id };
  }

  function completeUpload(body: Record<string, unknown>) {
    if (!grantedScopes().includes("files:write")) return missingScope("files:write");
    const list = body.files;
    if (!Array.isArray(list) || list.length === 0) return { ok: false, error: "invalid_arguments" };
    const held = list.map((entry) => files.get(String((entry as { id?: unknown }).id)));
    if (held.some((file) => !file?.bytes || file.completed)) {
      return { ok: false, error: "file_not_found" };
    }
    const ready = held as HeldFile[];
    const channel = body.channel_id === undefined ? undefined : writable(body.channel_id);
    if (channel && !("id" in channel)) return channel;
    for (const file of ready) {
      file.completed = true;
      if (!channel) continue;
      file.channels.push(channel.id);
      const bytes = file.bytes ?? new Uint8Array();
      const list = shared.get(channel.id) ?? [];
      list.push({
        fileId: file.id,
        name: file.name,
        size: bytes.length,
        sha256: createHash("sha256").update(bytes).digest("hex"),
        caption: typeof body.initial_comment === "string" ? body.initial_comment : "",
        ...(typeof body.thread_ts === "string" ? { threadTs: body.thread_ts } : {}),
      });
      shared.set(channel.id, list);
    }
    return { ok: true, files: ready.map((file) => ({ id: file.id, title: file.name })) };
  }

  function fileInfo(body: Record<string, unknown>) {
    if (!grantedScopes().includes("files:read")) return missingScope("files:read");
    const file = files.get(String(body.file));
    if (!file) return { ok: false, error: "file_not_found" };
    const where = (kind: Channel["kind"]) =>
      file.channels.filter((id) => channels.get(id)?.kind === kind);
    return {
      ok: true,
      file: {
        id: file.id,
        name: file.name,
        title: file.name,
        channels: where("channel"),
        groups: [],
        ims: where("im"),
      },
    };
  }

  function injectFault(call: SlackCall, fault: SlackFault, response: ServerResponse): void {
    if ("error" in fault) {
      call.outcome = fault.error;
      send(response, 200, { ok: false, error: fault.error });
      return;
    }
    call.outcome = `http ${fault.status}`;
    if (fault.status === 429) {
      send(
        response,
        429,
        { ok: false, error: "ratelimited" },
        { "retry-after": String(fault.retryAfterS) },
      );
      return;
    }
    response.writeHead(502, { "content-type": "text/html" });
    response.end("<html>502 Bad Gateway</html>");
  }

  /** Runs one Web API method as Slack would. */
  function run(
    method: string,
    token: string,
    body: Record<string, unknown>,
  ): { ok: boolean; error?: string } & Record<string, unknown> {
    if (token === "") return { ok: false, error: "not_authed" };
    const isBot = token === botToken && !revoked.has(token);
    const isApp = token === appToken && !revoked.has(token);
    if (!isBot && !isApp) return { ok: false, error: "invalid_auth" };
    if (method === "apps.connections.open") {
      if (!isApp) return { ok: false, error: "not_allowed_token_type" };
      const ticket = randomBytes(8).toString("hex");
      tickets.add(ticket);
      return { ok: true, url: `ws://127.0.0.1:${port}/link?ticket=${ticket}` };
    }
    if (!isBot) return { ok: false, error: "not_allowed_token_type" };
    switch (method) {
      case "auth.test":
        return {
          ok: true,
          url: "https://fake.slack.com/",
          team: "Fake",
          user: "picklebot",
          team_id: "T1",
          user_id: botUserId,
          bot_id: "B1",
        };
      case "users.info": {
        const name = people.get(String(body.user));
        if (name === undefined) return { ok: false, error: "user_not_found" };
        return { ok: true, user: { id: body.user, name, real_name: name } };
      }
      case "chat.postMessage":
        return postMessage(body);
      case "chat.update":
        return updateMessage(body);
      case "files.getUploadURLExternal":
        return getUploadURL(body);
      case "files.completeUploadExternal":
        return completeUpload(body);
      case "files.info":
        return fileInfo(body);
      default:
        return { ok: false, error: "unknown_method" };
    }
  }

  /** The channel a bot may write in, or Slack's refusal. */
  function writable(id: unknown): Channel | { ok: false; error: string } {
    const channel = channels.get(String(id));
    if (!channel) return { ok: false, error: "channel_not_found" };
    if (!channel.botMember) return { ok: false, error: "not_in_channel" };
    return channel;
  }

  function textOf(body: Record<string, unknown>): string | { ok: false; error: string } {
    const text = typeof body.text === "string" ? body.text : "";
    if (text === "" && !Array.isArray(body.blocks)) return { ok: false, error: "no_text" };
    if (text.length > SLACK_MAX_TEXT) return { ok: false, error: "msg_too_long" };
    return text;
  }

  function postMessage(body: Record<string, unknown>) {
    const channel = writable(body.channel);
    if (!("id" in channel)) return channel;
    const text = textOf(body);
    if (typeof text !== "string") return text;
    const message: StoredMessage = {
      ts: nextTs(),
      text,
      blocks: (body.blocks as SlackBlock[] | undefined) ?? [],
      ...(typeof body.thread_ts === "string" ? { threadTs: body.thread_ts } : {}),
    };
    channel.messages.push(message);
    return { ok: true, channel: channel.id, ts: message.ts, message: { text, ts: message.ts } };
  }

  function updateMessage(body: Record<string, unknown>) {
    const channel = writable(body.channel);
    if (!("id" in channel)) return channel;
    const message = channel.messages.find((m) => m.ts === body.ts);
    if (!message) return { ok: false, error: "message_not_found" };
    const text = textOf(body);
    if (typeof text !== "string") return text;
    message.text = text;
    message.blocks = (body.blocks as SlackBlock[] | undefined) ?? [];
    return { ok: true, channel: channel.id, ts: message.ts, text };
  }

  function answerPress(pressId: string, body: Record<string, unknown>, response: ServerResponse) {
    const press = presses.get(pressId);
    const answer = (status: number, error?: string) => {
      pressResponses.push({ pressId, body, status });
      if (error === undefined) return send(response, 200, { ok: true });
      send(response, status, { ok: false, error });
    };
    if (!press) return answer(404, "invalid_url");
    if (now() - press.at > RESPONSE_URL_TTL_MS) return answer(404, "expired_url");
    if (press.uses >= RESPONSE_URL_USES) return answer(404, "used_url");
    if (typeof body.text !== "string" || body.text === "") return answer(400, "no_text");
    press.uses += 1;
    answer(200);
  }

  /** A person's file as a message event carries it (Slack's file object). */
  function share(file: FakeSlackFile, userId: string, channelId: string) {
    const id = `F${randomBytes(5).toString("hex").toUpperCase()}`;
    const mode = file.mode ?? "hosted";
    files.set(id, {
      id,
      name: file.name,
      mimetype: file.mimetype,
      bytes: file.bytes,
      channels: [channelId],
      completed: true,
    });
    const root = `http://127.0.0.1:${port}/files-pri/T1-${id}`;
    const path = encodeURIComponent(file.name);
    return {
      id,
      name: file.name,
      title: file.name,
      mimetype: file.mimetype,
      filetype: file.name.split(".").at(-1) ?? "",
      size: file.bytes.length,
      user: userId,
      mode,
      ...(file.subtype === undefined ? {} : { subtype: file.subtype }),
      ...(mode === "hosted"
        ? { url_private: `${root}/${path}`, url_private_download: `${root}/download/${path}` }
        : {}),
    };
  }

  const fake: FakeSlack = {
    onCall: null,
    botToken,
    appToken,
    botUserId,
    apiUrl: `http://127.0.0.1:${port}/api/`,
    channelId: "C0GENERAL",
    foreignChannelId: "C0FOREIGN",
    calls,
    envelopes,
    pressResponses,
    addPerson(userId, name) {
      people.set(userId, name);
      const dm = `D${userId.slice(1)}`;
      addChannel(dm, "im", true);
      return dm;
    },
    messages: (channelId) => channels.get(channelId)?.messages ?? [],
    sharedFiles: (channelId) => shared.get(channelId) ?? [],
    downloads,
    write({ userId, channelId, text, threadTs, botId, subtype, files: sent = [] }) {
      const channel = channels.get(channelId);
      if (!channel) throw new Error(`fake Slack: no channel ${channelId}`);
      const ts = nextTs();
      const shares = sent.length > 0 && channel.kind === "im" ? "file_share" : undefined;
      const eventSubtype = subtype ?? shares;
      const base = {
        user: userId,
        text,
        ts,
        event_ts: ts,
        channel: channelId,
        ...(threadTs === undefined ? {} : { thread_ts: threadTs }),
        ...(botId === undefined ? { client_msg_id: randomBytes(8).toString("hex") } : {}),
        ...(botId === undefined ? {} : { bot_id: botId }),
        ...(eventSubtype === undefined ? {} : { subtype: eventSubtype }),
        ...(sent.length > 0 ? { files: sent.map((file) => share(file, userId, channelId)) } : {}),
      };
      const mentioned = text.includes(`<@${botUserId}>`);
      let event: Record<string, unknown>;
      if (channel.kind === "im") event = { type: "message", channel_type: "im", ...base };
      else if (mentioned) event = { type: "app_mention", ...base };
      else return null;
      return deliver("events_api", {
        type: "event_callback",
        team_id: "T1",
        api_app_id: "A1",
        event_id: `Ev${randomBytes(6).toString("hex")}`,
        event_time: Math.floor(now() / 1000),
        event,
      });
    },
    press({ userId, channelId, ts, actionId }) {
      const channel = channels.get(channelId);
      const message = channel?.messages.find((m) => m.ts === ts);
      if (!channel || !message) throw new Error(`fake Slack: no message ${ts} in ${channelId}`);
      const pressId = `${++counter}.${randomBytes(6).toString("hex")}`;
      presses.set(pressId, { at: now(), uses: 0 });
      deliver("interactive", {
        type: "block_actions",
        team: { id: "T1" },
        user: { id: userId, username: people.get(userId) ?? userId, name: people.get(userId) },
        channel: { id: channelId },
        container: { type: "message", message_ts: ts, channel_id: channelId },
        message: { ts, text: message.text, blocks: message.blocks },
        trigger_id: pressId,
        response_url: `http://127.0.0.1:${port}/response/${pressId}`,
        actions: [
          { type: "button", action_id: actionId, block_id: "choices", action_ts: nextTs() },
        ],
      });
      return pressId;
    },
    disconnect(reason) {
      for (const ws of sockets) ws.send(JSON.stringify({ type: "disconnect", reason }));
    },
    failNext(method, fault) {
      faults.set(method, [...(faults.get(method) ?? []), fault]);
    },
    hangNext(method) {
      hangs.set(method, (hangs.get(method) ?? 0) + 1);
    },
    loseAnswerNext(method) {
      lostAnswers.set(method, (lostAnswers.get(method) ?? 0) + 1);
    },
    revoke(token) {
      revoked.add(token);
    },
    goOffline() {
      offline = true;
      for (const ws of sockets) ws.terminate();
    },
    goOnline() {
      offline = false;
    },
    openSockets: () => sockets.size,
    callsTo: (method) => calls.filter((call) => call.method === method),
    async close() {
      for (const timer of timers) clearTimeout(timer);
      for (const ws of sockets) ws.terminate();
      for (const response of hung) response.socket?.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return fake;
}
