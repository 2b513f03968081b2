/**
 * SlackPlatform with the real Slack clients against the fake Slack on 127.0.0.1: what the
 * ChatPlatform contract does not cover (threads, `!` commands, Slack's `disconnect`, what
 * it ignores, Slack's refusals, Block Kit buttons, stopping while reconnecting).
 */
import { afterEach, describe, expect, it } from "vitest";
import { ChatPlatformError } from "../../src/base/errors.js";
import { SlackPlatform } from "../../src/chat/slack/platform.js";
import { CREDENTIAL_SERVICES } from "../../src/config/index.js";
import type { IncomingChatMessage } from "../../src/ports/index.js";
import { type FakeSlack, startFakeSlack } from "../fakes/slack.js";
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
  options: { appToken?: string; start?: boolean } = {},
): Promise<Started> {
  fake = await startFakeSlack({ redeliverAfterMs: 100 });
  const dm = fake.addPerson(ALICE, "alice");
  const { logger, lines } = recordingLogger();
  platform = new SlackPlatform({
    botToken: fake.botToken,
    appToken: options.appToken ?? fake.appToken,
    apiUrl: fake.apiUrl,
    reconnectBaseMs: 10,
    logger,
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
});
