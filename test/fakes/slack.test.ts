import { createHash } from "node:crypto";
import { SocketModeClient } from "@slack/socket-mode";
import { WebClient } from "@slack/web-api";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { waitFor } from "../helpers/wait.js";
import { type FakeSlack, SLACK_MAX_TEXT, startFakeSlack } from "./slack.js";

/** A @slack/logger that says nothing. */
const quiet = {
  debug() {},
  info() {},
  warn() {},
  error() {},
  setLevel() {},
  getLevel: () => "error" as never,
  setName() {},
};

describe("fake Slack with the real @slack/web-api and @slack/socket-mode clients", () => {
  let fake: FakeSlack;
  let web: WebClient;
  let socket: SocketModeClient | undefined;

  beforeEach(async () => {
    fake = await startFakeSlack({ redeliverAfterMs: 50 });
    web = new WebClient(fake.botToken, {
      slackApiUrl: fake.apiUrl,
      retryConfig: { retries: 0 },
      rejectRateLimitedCalls: true,
      logger: quiet,
    });
    socket = undefined;
  });

  afterEach(async () => {
    await socket?.disconnect();
    await fake.close();
  });

  /** A Socket Mode client connected to the fake. */
  async function connect(): Promise<SocketModeClient> {
    socket = new SocketModeClient({
      appToken: fake.appToken,
      clientOptions: { slackApiUrl: fake.apiUrl, retryConfig: { retries: 0 } },
      logger: quiet,
    });
    await socket.start();
    return socket;
  }

  /** The error `call` rejects with. */
  async function refusal(call: Promise<unknown>): Promise<Error & Record<string, unknown>> {
    return (await call.then(
      () => {
        throw new Error("expected a refusal");
      },
      (error: unknown) => error,
    )) as Error & Record<string, unknown>;
  }

  it("answers auth.test for the bot token with the bot's user id and its scopes", async () => {
    const answer = await web.auth.test();
    expect(answer.user_id).toBe(fake.botUserId);
    expect(answer.response_metadata?.scopes).toEqual([
      "chat:write",
      "im:history",
      "app_mentions:read",
      "users:read",
      "files:read",
      "files:write",
    ]);
  });

  it("refuses a wrong or revoked token with invalid_auth, and the bot token for Socket Mode", async () => {
    const wrong = new WebClient("xoxb-wrong", {
      slackApiUrl: fake.apiUrl,
      retryConfig: { retries: 0 },
      logger: quiet,
    });
    expect((await refusal(wrong.auth.test())).data).toMatchObject({ error: "invalid_auth" });
    expect((await refusal(web.apps.connections.open())).data).toMatchObject({
      error: "not_allowed_token_type",
    });
    fake.revoke(fake.botToken);
    expect((await refusal(web.auth.test())).data).toMatchObject({ error: "invalid_auth" });
  });

  it("posts and updates messages, and refuses what Slack refuses", async () => {
    const posted = await web.chat.postMessage({ channel: fake.channelId, text: "hello" });
    await web.chat.update({ channel: fake.channelId, ts: posted.ts ?? "", text: "hello again" });
    expect(fake.messages(fake.channelId).map((m) => m.text)).toEqual(["hello again"]);

    const errors = await Promise.all([
      refusal(web.chat.postMessage({ channel: "C0NOWHERE", text: "x" })),
      refusal(web.chat.postMessage({ channel: fake.foreignChannelId, text: "x" })),
      refusal(
        web.chat.postMessage({ channel: fake.channelId, text: "x".repeat(SLACK_MAX_TEXT + 1) }),
      ),
      refusal(web.chat.update({ channel: fake.channelId, ts: "1.000001", text: "x" })),
    ]);
    expect(errors.map((error) => (error.data as { error: string }).error)).toEqual([
      "channel_not_found",
      "not_in_channel",
      "msg_too_long",
      "message_not_found",
    ]);
    await web.chat.postMessage({ channel: fake.channelId, text: "x".repeat(SLACK_MAX_TEXT) });
    expect(fake.messages(fake.channelId)).toHaveLength(2);
  });

  it("answers an injected rate limit with HTTP 429 and Retry-After", async () => {
    fake.failNext("chat.postMessage", { status: 429, retryAfterS: 7 });
    const error = await refusal(web.chat.postMessage({ channel: fake.channelId, text: "x" }));
    expect(error.code).toBe("slack_webapi_rate_limited_error");
    expect(error.retryAfter).toBe(7);
  });

  it("says hello over Socket Mode and sends a DM and a mention as events, again until acked", async () => {
    const client = await connect();
    const dm = fake.addPerson("UALICE01", "alice");
    const seen: { type: string; retry: number }[] = [];
    let ackNext = false;
    client.on("message", async ({ event, ack, retry_num }) => {
      seen.push({ type: event.type, retry: retry_num });
      if (ackNext) await ack();
      ackNext = true;
    });
    client.on("app_mention", async ({ event, ack, retry_num }) => {
      seen.push({ type: event.type, retry: retry_num });
      await ack();
    });
    const first = fake.write({ userId: "UALICE01", channelId: dm, text: "hi" });
    await waitFor(() => first?.acked, "the DM acked on its second delivery");
    fake.write({ userId: "UALICE01", channelId: fake.channelId, text: "no mention" });
    fake.write({ userId: "UALICE01", channelId: fake.channelId, text: `<@${fake.botUserId}> yo` });
    await waitFor(() => seen.length === 3, "three events");
    expect(seen).toEqual([
      { type: "message", retry: 0 },
      { type: "message", retry: 1 },
      { type: "app_mention", retry: 0 },
    ]);
  });

  it("sends a button press as an interactive envelope, and takes one answer on its response_url", async () => {
    const client = await connect();
    fake.addPerson("UBOB0001", "bob");
    const posted = await web.chat.postMessage({ channel: fake.channelId, text: "Run ls?" });
    const payloads: { response_url: string; actions: { action_id: string }[] }[] = [];
    client.on("interactive", async ({ body, ack }) => {
      payloads.push(body);
      await ack();
    });
    fake.press({
      userId: "UBOB0001",
      channelId: fake.channelId,
      ts: posted.ts ?? "",
      actionId: "a",
    });
    const [payload] = await waitFor(() => payloads.length === 1 && payloads, "the press");
    expect(payload?.actions[0]?.action_id).toBe("a");
    const post = (body: object) =>
      fetch(payload?.response_url ?? "", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      });
    expect((await post({ text: "Denied", response_type: "ephemeral" })).status).toBe(200);
    expect((await post({})).status).toBe(400);
  });

  it("tells a client to reconnect with disconnect, and the client comes back", async () => {
    const client = await connect();
    let reconnected = false;
    client.on("connected", () => {
      reconnected = true;
    });
    fake.disconnect("refresh_requested");
    await waitFor(() => reconnected && fake.openSockets() === 1, "reconnected");
    expect(fake.callsTo("apps.connections.open")).toHaveLength(2);
  });

  it("shares a file uploaded by the library's filesUploadV2 into a thread, once per upload", async () => {
    const bytes = Buffer.from("%PDF-1.4 a report");
    await web.filesUploadV2({
      channel_id: fake.channelId,
      thread_ts: "1700000000.000001",
      file: bytes,
      filename: "report.pdf",
      initial_comment: "The report",
    });
    expect(fake.sharedFiles(fake.channelId)).toEqual([
      {
        fileId: expect.stringMatching(/^F/),
        name: "report.pdf",
        size: bytes.length,
        sha256: createHash("sha256").update(bytes).digest("hex"),
        caption: "The report",
        threadTs: "1700000000.000001",
      },
    ]);
    const [shared] = fake.sharedFiles(fake.channelId);
    const again = await refusal(
      web.files.completeUploadExternal({ files: [{ id: shared?.fileId ?? "" }] }),
    );
    expect(again.data).toMatchObject({ error: "file_not_found" });
    const info = await web.files.info({ file: shared?.fileId ?? "" });
    expect(info.file?.channels).toEqual([fake.channelId]);
  });

  it("refuses uploads as Slack does: bad arguments, a channel the bot is not in, a missing scope", async () => {
    const bad = await refusal(web.files.getUploadURLExternal({ filename: "a.txt", length: 0 }));
    const ticket = await web.files.getUploadURLExternal({ filename: "a.txt", length: 1 });
    await fetch(ticket.upload_url ?? "", { method: "POST", body: "a" });
    const foreign = await refusal(
      web.files.completeUploadExternal({
        files: [{ id: ticket.file_id ?? "" }],
        channel_id: fake.foreignChannelId,
      }),
    );
    const notUploaded = await web.files.getUploadURLExternal({ filename: "b.txt", length: 1 });
    const early = await refusal(
      web.files.completeUploadExternal({ files: [{ id: notUploaded.file_id ?? "" }] }),
    );
    expect([bad, foreign, early].map((error) => (error.data as { error: string }).error)).toEqual([
      "invalid_arguments",
      "not_in_channel",
      "file_not_found",
    ]);
    await fake.close();
    fake = await startFakeSlack({ scopes: ["chat:write"] });
    const narrow = new WebClient(fake.botToken, {
      slackApiUrl: fake.apiUrl,
      retryConfig: { retries: 0 },
      logger: quiet,
    });
    const scope = await refusal(narrow.files.getUploadURLExternal({ filename: "a", length: 1 }));
    expect(scope.data).toMatchObject({ error: "missing_scope", needed: "files:write" });
  });

  it("serves a person's file to the bot token only; anyone else gets Slack's sign-in page", async () => {
    const dm = fake.addPerson("U0ALICE01", "alice");
    const client = await connect();
    const events: Array<{ event: { subtype?: string; files: Array<Record<string, string>> } }> = [];
    client.on("slack_event", async ({ ack, body }) => {
      await ack();
      events.push(body);
    });
    fake.write({
      userId: "U0ALICE01",
      channelId: dm,
      text: "look",
      files: [{ name: "cat.png", mimetype: "image/png", bytes: Buffer.from("PNG bytes") }],
    });
    const [event] = await waitFor(() => events.length === 1 && events, "the event");
    expect(event?.event.subtype).toBe("file_share");
    const url = event?.event.files[0]?.url_private_download ?? "";
    const withToken = await fetch(url, { headers: { authorization: `Bearer ${fake.botToken}` } });
    expect([withToken.status, await withToken.text()]).toEqual([200, "PNG bytes"]);
    const without = await fetch(url, { redirect: "manual" });
    expect(without.status).toBe(302);
    const followed = await fetch(url);
    expect([followed.status, followed.headers.get("content-type")]).toEqual([
      200,
      "text/html; charset=utf-8",
    ]);
    expect(await followed.text()).toContain("Sign in");
    expect(fake.downloads).toHaveLength(1);
  });
});
