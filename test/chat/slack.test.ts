/**
 * SlackPlatform with the real Slack clients against the fake Slack on 127.0.0.1: what the
 * ChatPlatform contract does not cover (threads, `!` commands, Slack's `disconnect`, what
 * it ignores, Slack's refusals, Block Kit buttons, stopping while reconnecting).
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { ChatPlatformError } from "../../src/base/errors.js";
import { SlackPlatform } from "../../src/chat/slack/platform.js";
import { CREDENTIAL_SERVICES } from "../../src/config/index.js";
import type { IncomingChatMessage } from "../../src/ports/index.js";
import { type FakeSlack, FILE_DOWNLOAD, startFakeSlack } from "../fakes/slack.js";
import { TestClock } from "../helpers/clock.js";
import { recordingLogger } from "../helpers/log.js";
import { waitFor } from "../helpers/wait.js";

const ALICE = "U0ALICE01";

let fake: FakeSlack | undefined;
let platform: SlackPlatform | undefined;

afterEach(async () => {
  await platform?.stop();
  await fake?.close();
  platform = undefined;
  fake = undefined;
});

interface Started {
  fake: FakeSlack;
  platform: SlackPlatform;
  received: IncomingChatMessage[];
  dm: string;
  lines: ReturnType<typeof recordingLogger>["lines"];
}

/** The fake, alice's DM, and a platform that records what it hands over. */
async function startPlatform(
  options: { appToken?: string; start?: boolean; scopes?: string[]; clock?: TestClock } = {},
): Promise<Started> {
  fake = await startFakeSlack({
    redeliverAfterMs: 100,
    ...(options.scopes === undefined ? {} : { scopes: options.scopes }),
  });
  const dm = fake.addPerson(ALICE, "alice");
  const { logger, lines } = recordingLogger();
  platform = new SlackPlatform({
    botToken: fake.botToken,
    appToken: options.appToken ?? fake.appToken,
    apiUrl: fake.apiUrl,
    reconnectBaseMs: 10,
    logger,
    ...(options.clock === undefined ? {} : { clock: options.clock }),
  });
  const received: IncomingChatMessage[] = [];
  const starting = platform.start(async (message) => {
    received.push(message);
  });
  if (options.start ?? true) await starting;
  return { fake, platform, received, dm, lines };
}

async function failure(call: Promise<unknown>): Promise<ChatPlatformError> {
  const error = await call.then(
    () => null,
    (thrown: unknown) => thrown,
  );
  if (!(error instanceof ChatPlatformError)) throw new Error(`expected a ChatPlatformError`);
  return error;
}

describe("SlackPlatform", () => {
  it("answers a mention in a thread into that thread, as a chat of its own", async () => {
    const { fake, platform, received } = await startPlatform();
    const mention = `<@${fake.botUserId}>`;
    fake.write({ userId: ALICE, channelId: fake.channelId, text: `${mention} top level` });
    fake.write({
      userId: ALICE,
      channelId: fake.channelId,
      text: `${mention} in the thread`,
      threadTs: "1700000000.000001",
    });
    await waitFor(() => received.length === 2, "both mentions");
    expect(received.map((m) => [m.chatId, m.text])).toEqual([
      [fake.channelId, "top level"],
      [`${fake.channelId}/1700000000.000001`, "in the thread"],
    ]);
    await platform.send(received[1]?.chatId ?? "", "threaded answer", "markdown");
    expect(fake.messages(fake.channelId)).toEqual([
      expect.objectContaining({ text: "threaded answer", threadTs: "1700000000.000001" }),
    ]);
  });

  it("takes !command as /command (Slack's client keeps /words for itself), and other text as is", async () => {
    const { fake, received, dm } = await startPlatform();
    fake.write({ userId: ALICE, channelId: dm, text: "!new" });
    fake.write({
      userId: ALICE,
      channelId: fake.channelId,
      text: `<@${fake.botUserId}> !agent coder`,
    });
    fake.write({ userId: ALICE, channelId: dm, text: "!important &amp; &lt;urgent&gt;" });
    await waitFor(() => received.length === 3, "three messages");
    expect(received.map((m) => m.text)).toEqual(["/new", "/agent coder", "!important & <urgent>"]);
  });

  it("names the chat commands as people type them on Slack (!forget confirm), not paths or other words", async () => {
    const { fake, platform } = await startPlatform();
    await platform.send(
      fake.channelId,
      "/new: Start a new conversation\nTo do it, send /forget confirm (or `/new`). See /usr/bin/status, /help/x and /newer.",
      "plain",
    );
    const { messageId } = await platform.send(fake.channelId, "…", "markdown");
    await platform.edit(fake.channelId, messageId, "Send /memory there.", "markdown");
    expect(fake.messages(fake.channelId).map((m) => m.text)).toEqual([
      "!new: Start a new conversation\nTo do it, send !forget confirm (or `!new`). See /usr/bin/status, /help/x and /newer.",
      "Send !memory there.",
    ]);
  });

  it("ignores its own DMs, other bots, and edits or deletions (subtypes)", async () => {
    const { fake, received, dm } = await startPlatform();
    fake.write({ userId: fake.botUserId, channelId: dm, text: "my own reply", botId: "B1" });
    fake.write({ userId: ALICE, channelId: dm, text: "edited", subtype: "message_changed" });
    fake.write({ userId: ALICE, channelId: dm, text: "a person" });
    await waitFor(() => received.length === 1, "the person's message");
    await waitFor(() => fake.envelopes.every((e) => e.acked), "every envelope acked");
    expect(received.map((m) => m.text)).toEqual(["a person"]);
  });

  it("reconnects when Slack sends disconnect (refresh_requested) and receives on the new socket", async () => {
    const { fake, platform, received, dm } = await startPlatform();
    fake.disconnect("refresh_requested");
    await waitFor(() => fake.callsTo("apps.connections.open").length === 2, "a second connection");
    await waitFor(() => platform.state === "connected" && fake.openSockets() === 1, "connected");
    fake.write({ userId: ALICE, channelId: dm, text: "after the refresh" });
    await waitFor(() => received.length === 1, "the message");
    expect(received[0]?.text).toBe("after the refresh");
  });

  it("says which token Slack refused: a wrong app token, with the fix, and keeps trying", async () => {
    const { fake, platform, lines } = await startPlatform({
      appToken: "xapp-1-wrong",
      start: false,
    });
    await waitFor(() => fake.callsTo("apps.connections.open").length >= 3, "three tries");
    expect(platform.state).toBe("connecting");
    expect(platform.refusal).toContain("app_token");
    expect(platform.refusal).toContain("apps.connections.open: invalid_auth");
    expect(platform.refusal).toContain(CREDENTIAL_SERVICES.slack.fix);
    expect(JSON.stringify(lines)).not.toContain("xapp-1-wrong");
  });

  it("refuses for good what Slack refuses: not_in_channel, channel_not_found, a revoked token", async () => {
    const { fake, platform } = await startPlatform();
    const errors = [
      await failure(platform.send(fake.foreignChannelId, "hi", "plain")),
      await failure(platform.send("C0NOWHERE", "hi", "plain")),
    ];
    fake.revoke(fake.botToken);
    const revoked = await failure(platform.send(fake.channelId, "hi", "plain"));
    expect(errors.map((e) => [e.retryable, e.message])).toEqual([
      [false, `slack: chat.postMessage in ${fake.foreignChannelId}: not_in_channel`],
      [false, "slack: chat.postMessage in C0NOWHERE: channel_not_found"],
    ]);
    expect(revoked.retryable).toBe(false);
    expect(revoked.credentialRefused).toBe(true);
    expect(revoked.message).toContain(CREDENTIAL_SERVICES.slack.fix);
  });

  it("sends a text of maxMessageLength whole even when every character is one Slack escapes", async () => {
    const { fake, platform } = await startPlatform();
    const ampersands = "&".repeat(platform.maxMessageLength);
    const html = "<b>&</b>".repeat(platform.maxMessageLength / 8);
    await platform.send(fake.channelId, ampersands, "plain");
    const { messageId } = await platform.send(fake.channelId, "soon", "markdown");
    await platform.edit(fake.channelId, messageId, html, "markdown");
    expect(fake.messages(fake.channelId).map((m) => m.text)).toEqual([
      "&amp;".repeat(platform.maxMessageLength),
      "&lt;b&gt;&amp;&lt;/b&gt;".repeat(platform.maxMessageLength / 8),
    ]);
  });

  it("keeps chat.update within Slack's tier 3 for the whole app: past a burst, a retryable wait", async () => {
    const clock = new TestClock();
    const { fake, platform } = await startPlatform({ clock });
    const chats = [fake.channelId, fake.addPerson("U0BEN0001", "ben")];
    const sent = await Promise.all(chats.map((chat) => platform.send(chat, "…", "plain")));
    const edit = (i: number) =>
      platform.edit(chats[i % 2] ?? "", sent[i % 2]?.messageId ?? "", `part ${i}`, "plain");
    for (let i = 0; i < 10; i += 1) await edit(i);
    const over = await failure(edit(10));
    expect([over.retryable, over.retryAfterS]).toEqual([true, 2]);
    expect(over.message).toContain("Slack takes about 50 chat.update a minute");
    expect(fake.callsTo("chat.update")).toHaveLength(10);
    clock.advance(1200);
    await edit(11);
    expect(fake.callsTo("chat.update")).toHaveLength(11);
  });

  it("a rate-limited chat.update is retryable after Slack's Retry-After", async () => {
    const { fake, platform } = await startPlatform();
    const { messageId } = await platform.send(fake.channelId, "one", "plain");
    fake.failNext("chat.update", { status: 429, retryAfterS: 12 });
    const error = await failure(platform.edit(fake.channelId, messageId, "two", "plain"));
    expect([error.retryable, error.retryAfterS]).toEqual([true, 12]);
  });

  it("sends choices as Block Kit: the text in a section, styled buttons in one actions block", async () => {
    const { fake, platform } = await startPlatform();
    await platform.sendChoices(fake.channelId, "Run *ls*?", "plain", [
      { id: "approval:1:once", label: "Allow once", style: "primary" },
      { id: "approval:1:always", label: "Always allow" },
      { id: "approval:1:deny", label: "Deny", style: "danger" },
    ]);
    const [message] = fake.messages(fake.channelId);
    expect(message?.blocks).toEqual([
      { type: "section", text: { type: "plain_text", text: "Run *ls*?" } },
      {
        type: "actions",
        block_id: "choices",
        elements: [
          expect.objectContaining({ action_id: "approval:1:once", style: "primary" }),
          expect.not.objectContaining({ style: expect.anything() }),
          expect.objectContaining({ action_id: "approval:1:deny", style: "danger" }),
        ],
      },
    ]);
  });

  it("stops while reconnecting: stop resolves, nothing stays open", async () => {
    const { fake, platform, lines } = await startPlatform();
    fake.goOffline();
    await waitFor(() => platform.state === "connecting", "reconnecting");
    await waitFor(
      () => lines.filter((line) => line.msg === "slack: could not connect").length >= 3,
      "failed reconnects",
    );
    await platform.stop();
    expect(platform.state).toBe("stopped");
    fake.goOnline();
    expect(fake.openSockets()).toBe(0);
  });

  describe("files", () => {
    const PHOTO = { name: "cat.png", mimetype: "image/png", bytes: Buffer.from("PNG bytes") };

    it("hands over a DM with files (file_share) with its caption; a video clip or a deleted file as unreadable", async () => {
      const { fake, platform, received, dm } = await startPlatform();
      fake.write({ userId: ALICE, channelId: dm, text: "what is this?", files: [PHOTO] });
      fake.write({
        userId: ALICE,
        channelId: dm,
        text: "",
        files: [
          {
            name: "clip.webm",
            mimetype: "audio/webm",
            bytes: Buffer.from("a"),
            subtype: "slack_audio",
          },
          { name: "notes.txt", mimetype: "text/plain", bytes: Buffer.from("b") },
          { name: "v.mp4", mimetype: "video/mp4", bytes: Buffer.from("c"), subtype: "slack_video" },
          {
            name: "old.pdf",
            mimetype: "application/pdf",
            bytes: Buffer.from("d"),
            mode: "tombstone",
          },
        ],
      });
      await waitFor(() => received.length === 2, "both messages");
      const [photo, mixed] = received;
      expect(photo).toMatchObject({
        text: "what is this?",
        attachments: [{ kind: "image", name: "cat.png", mimeType: "image/png", size: 9 }],
      });
      expect(photo?.unreadable).toBeUndefined();
      expect(mixed?.attachments?.map((file) => [file.kind, file.name])).toEqual([
        ["voice", "clip.webm"],
        ["document", "notes.txt"],
      ]);
      expect(mixed?.unreadable).toEqual([
        "a video clip",
        'the file "old.pdf" (deleted, or hidden by the workspace\'s plan)',
      ]);
      const bytes = await platform.download(
        photo?.attachments?.[0] ?? { kind: "image", source: "" },
      );
      expect(Buffer.from(bytes).toString()).toBe("PNG bytes");
    });

    it("takes files with a channel mention, the caption without the mention", async () => {
      const { fake, received } = await startPlatform();
      fake.write({
        userId: ALICE,
        channelId: fake.channelId,
        text: `<@${fake.botUserId}> summarise this`,
        files: [{ name: "r.pdf", mimetype: "application/pdf", bytes: Buffer.from("%PDF") }],
      });
      await waitFor(() => received.length === 1, "the mention");
      expect(received[0]).toMatchObject({
        text: "summarise this",
        attachments: [{ kind: "document", name: "r.pdf" }],
      });
    });

    it("refuses a download Slack answers with its sign-in page (no files:read) for good, with the fix; a 502 is retryable", async () => {
      const { fake, platform, received, dm } = await startPlatform({
        scopes: ["chat:write", "im:history", "app_mentions:read", "users:read"],
      });
      fake.write({ userId: ALICE, channelId: dm, text: "look", files: [PHOTO] });
      await waitFor(() => received.length === 1, "the message");
      const attachment = received[0]?.attachments?.[0] ?? { kind: "image", source: "" };
      const signIn = await failure(platform.download(attachment));
      expect(signIn.retryable).toBe(false);
      expect(signIn.message).toContain("sign-in page");
      expect(signIn.message).toContain("files:read");
      expect(signIn.message).not.toContain(fake.botToken);
      fake.failNext(FILE_DOWNLOAD, { status: 502 });
      expect((await failure(platform.download(attachment))).retryable).toBe(true);
      // A revoked token: Slack redirects to its sign-in page, which is followed and refused.
      fake.revoke(fake.botToken);
      const redirected = await failure(platform.download(attachment));
      expect([redirected.retryable, redirected.message]).toEqual([false, signIn.message]);
      expect(fake.downloads).toEqual([]);
    });

    it("never sends the bot token to a host that is not Slack's", async () => {
      const seen: string[] = [];
      const other = createServer((request, response) => {
        seen.push(String(request.headers.authorization));
        response.end("bytes");
      });
      await new Promise<void>((resolve) => other.listen(0, "127.0.0.1", resolve));
      try {
        const { platform } = await startPlatform();
        const { port } = other.address() as AddressInfo;
        const error = await failure(
          platform.download({
            kind: "image",
            source: `http://127.0.0.1:${port}/cat.png`,
            name: "cat.png",
          }),
        );
        expect([error.retryable, seen]).toEqual([false, []]);
        expect(error.message).toContain("not to Slack");
      } finally {
        await new Promise((resolve) => other.close(resolve));
      }
    });

    it("shares a file into the thread a chat id names, the caption as its comment", async () => {
      const { fake, platform } = await startPlatform();
      const chatId = `${fake.channelId}/1700000000.000001`;
      const sent = await platform.sendFile(chatId, {
        kind: "document",
        name: "report.pdf",
        mediaType: "application/pdf",
        content: Buffer.from("%PDF"),
        caption: "Q3 <draft> & notes",
      });
      expect(fake.sharedFiles(fake.channelId)).toEqual([
        expect.objectContaining({
          fileId: sent.messageId,
          name: "report.pdf",
          caption: "Q3 &lt;draft&gt; &amp; notes",
          threadTs: "1700000000.000001",
        }),
      ]);
    });

    it("refuses for good a file Slack refuses: not_in_channel, a missing files:write", async () => {
      const file = {
        kind: "document" as const,
        name: "a.txt",
        mediaType: "text/plain",
        content: Buffer.from("a"),
      };
      const { fake, platform } = await startPlatform();
      const foreign = await failure(platform.sendFile(fake.foreignChannelId, file));
      expect([foreign.retryable, foreign.message]).toEqual([
        false,
        `slack: files.completeUploadExternal in ${fake.foreignChannelId}: not_in_channel`,
      ]);
      await platform.stop();
      await fake.close();
      const narrow = await startPlatform({ scopes: ["chat:write", "files:read"] });
      const scope = await failure(narrow.platform.sendFile(narrow.fake.channelId, file));
      expect([scope.retryable, scope.message]).toEqual([
        false,
        `slack: files.getUploadURLExternal in ${narrow.fake.channelId}: missing_scope`,
      ]);
    });

    it("does not share a file twice when the completion's answer was lost and the send is retried with its key", async () => {
      const { fake, platform } = await startPlatform();
      const file = {
        kind: "photo" as const,
        name: "chart.png",
        mediaType: "image/png",
        content: Buffer.from("PNG chart"),
      };
      fake.loseAnswerNext("files.completeUploadExternal");
      const lost = await failure(platform.sendFile(fake.channelId, file, "file:job-1:0"));
      expect(lost.retryable).toBe(true);
      const retried = await platform.sendFile(fake.channelId, file, "file:job-1:0");
      expect(fake.sharedFiles(fake.channelId).map((shared) => shared.fileId)).toEqual([
        retried.messageId,
      ]);
      // Another key is another file: sent again.
      await platform.sendFile(fake.channelId, file, "file:job-2:0");
      expect(fake.sharedFiles(fake.channelId)).toHaveLength(2);
    });
  });
});
