/**
 * `picklebot server` as a child process with its Slack bot on the real Slack clients,
 * talking to the fake Slack (Web API + Socket Mode) and the fake model: a DM and a
 * channel mention answered with streaming, a thread answered in the thread, an approval
 * answered with a button, a stranger paired, Slack's `disconnect`, SIGTERM while
 * reconnecting, a photo with a caption read as an image block.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { CREDENTIAL_SERVICES } from "../../src/config/index.js";
import { WELCOME_TEXT } from "../../src/storage/pairing-approval.js";
import { type FakeAnthropic, lastUserText, startFakeAnthropic } from "../fakes/anthropic.js";
import { type FakeSlack, type StoredMessage, startFakeSlack } from "../fakes/slack.js";
import { CAREFUL_AGENT, echoHiModel } from "../helpers/approvals.js";
import { busWorkspace, healthz, slackYaml, startBusServer } from "../helpers/bus.js";
import { runCli } from "../helpers/cli.js";
import { photo } from "../helpers/media.js";
import { killAllServers, startServer } from "../helpers/server.js";
import { waitFor } from "../helpers/wait.js";
import type { TempWorkspace } from "../helpers/workspace.js";

const OWNER = "U0OWNER01";
const STRANGER = "U0STRANGE";

let anthropic: FakeAnthropic;
let slack: FakeSlack;
let ownerDm: string;
let strangerDm: string;
let ws: TempWorkspace | undefined;

beforeEach(async () => {
  anthropic = await startFakeAnthropic({
    defaultReply: (request) => ({ text: `echo: ${lastUserText(request)}` }),
  });
  slack = await startFakeSlack();
  ownerDm = slack.addPerson(OWNER, "owner");
  strangerDm = slack.addPerson(STRANGER, "stranger");
});

afterEach(async () => {
  await killAllServers();
  await slack.close();
  await anthropic.close();
  ws?.remove();
  ws = undefined;
});

async function serve(files: Record<string, string> = {}) {
  ws = busWorkspace(anthropic.url, slackYaml(slack, { allowedUserIds: [OWNER] }), files);
  return startBusServer(ws.dir, ["slack"]);
}

async function cli(...args: string[]): Promise<string> {
  const result = await runCli([...args, "--workspace", ws?.dir ?? ""]);
  if (result.code !== 0) throw new Error(`picklebot ${args.join(" ")}: ${result.stderr}`);
  return result.stdout;
}

/** The bot's texts in a channel (a thread: only its replies), as Slack shows them. */
function texts(channel: string, threadTs?: string): string[] {
  return slack
    .messages(channel)
    .filter((message) => message.threadTs === threadTs)
    .map((message) => message.text);
}

/** Resolves once the bot's messages, joined, equal `text`. */
function replyIn(channel: string, text: string, threadTs?: string): Promise<string[]> {
  return waitFor(
    () => {
      const shown = texts(channel, threadTs);
      return shown.join("") === text && shown;
    },
    `the reply ${JSON.stringify(text)}`,
  );
}

const mention = () => `<@${slack.botUserId}>`;

describe("picklebot server with a Slack bot", () => {
  it("answers a DM with a reply streamed by chat.update on one message", async () => {
    let resume = (): void => {};
    const firstPartShown = new Promise((resolve) => {
      resume = () => resolve(undefined);
    });
    const answer = "Pickles are cucumbers that took a long bath in brine.";
    anthropic.script({ text: answer, chunks: 3, pauseAfterChunks: 1, resume: firstPartShown });
    await serve();

    slack.write({ userId: OWNER, channelId: ownerDm, text: "pickles?" });
    const first = await waitFor(() => slack.callsTo("chat.postMessage")[0], "the first part");
    resume();

    expect(await replyIn(ownerDm, answer)).toEqual([answer]);
    const firstText = String(first.body.text);
    expect(firstText.length).toBeLessThan(answer.length);
    expect(answer.startsWith(firstText)).toBe(true);
    expect(slack.callsTo("chat.update").length).toBeGreaterThan(0);
    expect(anthropic.requests.map(lastUserText)).toEqual(["pickles?"]);
    const jobs = JSON.parse(await cli("jobs", "--json")) as { sessionKey: string }[];
    expect(jobs.map((job) => job.sessionKey)).toEqual([`slack:${ownerDm}`]);
  });

  it("answers a channel mention in the channel, and a mention in a thread in that thread", async () => {
    anthropic.script({ text: "Hello, channel!" });
    await serve();

    slack.write({ userId: OWNER, channelId: slack.channelId, text: "not for the bot" });
    slack.write({ userId: OWNER, channelId: slack.channelId, text: `${mention()} say hello` });
    expect(await replyIn(slack.channelId, "Hello, channel!")).toHaveLength(1);

    const thread = "1700000000.000001";
    slack.write({
      userId: OWNER,
      channelId: slack.channelId,
      text: `${mention()} and here?`,
      threadTs: thread,
    });
    await replyIn(slack.channelId, "echo: and here?", thread);
    expect(anthropic.requests.map(lastUserText)).toEqual(["say hello", "and here?"]);
    const jobs = JSON.parse(await cli("jobs", "--json")) as { sessionKey: string }[];
    expect(jobs.map((job) => job.sessionKey).sort()).toEqual([
      `slack:${slack.channelId}`,
      `slack:${slack.channelId}/${thread}`,
    ]);
  });

  it("asks for approval with buttons: a stranger's press is refused, the owner's runs the call, a double tap is already decided", async () => {
    await anthropic.close();
    anthropic = await startFakeAnthropic({ defaultReply: echoHiModel });
    await serve({ "agents/pickle/AGENT.md": CAREFUL_AGENT });

    slack.write({ userId: OWNER, channelId: ownerDm, text: "say hi" });
    const asked = await waitFor(
      () => slack.messages(ownerDm).find((m) => m.blocks.some((b) => b.type === "actions")),
      "the question with its buttons",
    );
    expect(asked.text).toContain("pickle wants to run bash: echo hi");
    const allowOnce = buttonId(asked, "Allow once");

    slack.press({ userId: STRANGER, channelId: ownerDm, ts: asked.ts, actionId: allowOnce });
    await waitFor(() => notices().includes("Only the owner can answer this."), "the refusal");
    slack.press({ userId: OWNER, channelId: ownerDm, ts: asked.ts, actionId: allowOnce });
    await waitFor(() => texts(ownerDm).includes("result: hi"), "the call's result", 15_000);
    slack.press({ userId: OWNER, channelId: ownerDm, ts: asked.ts, actionId: allowOnce });
    await waitFor(() => notices().some((n) => n.startsWith("Already decided")), "a double tap");

    const shown = slack.messages(ownerDm).find((m) => m.ts === asked.ts);
    expect(shown?.text).toMatch(/✅ Allowed once by /);
    expect(shown?.blocks).toEqual([]);
    await waitFor(() => slack.envelopes.every((e) => e.acked), "every envelope acknowledged");
  });

  it("answers !help and !memory naming the commands as typed on Slack, with no model request", async () => {
    await serve();
    slack.write({ userId: OWNER, channelId: ownerDm, text: "!help" });
    const help = await waitFor(() => texts(ownerDm)[0], "the help");
    expect(help).toContain("!forget: Clear what the agent remembers about you");
    expect(help).not.toMatch(/^\/new/m);
    slack.write({ userId: OWNER, channelId: slack.channelId, text: `${mention()} !memory` });
    await replyIn(
      slack.channelId,
      "What I remember about you is shown only in a private chat with me: send !memory there.",
    );
    expect(anthropic.requests).toEqual([]);
  });

  it("keeps a Slack person's memory under their member id: picklebot memory shows it, !forget confirm clears it", async () => {
    anthropic.script(
      {
        toolUses: [
          { name: "memory", input: { action: "add", about: "person", text: "Cat: Miso" } },
        ],
      },
      { text: "Noted." },
    );
    await serve();
    slack.write({ userId: OWNER, channelId: ownerDm, text: "remember my cat is Miso" });
    await replyIn(ownerDm, "Noted.");
    expect(await cli("memory", "show", `slack:${OWNER}`)).toContain("\nCat: Miso\n");

    slack.write({ userId: OWNER, channelId: ownerDm, text: "!forget" });
    await waitFor(() => texts(ownerDm).at(-1)?.endsWith("send !forget confirm"), "the question");
    slack.write({ userId: OWNER, channelId: ownerDm, text: "!forget confirm" });
    await waitFor(
      () => texts(ownerDm).at(-1)?.startsWith("Done: pickle remembers nothing"),
      "done",
    );
    expect(await cli("memory", "show", `slack:${OWNER}`)).not.toContain("Miso");
  });

  it("refuses a stranger with a pairing code, and answers them once the owner approves it", async () => {
    await serve();
    slack.write({ userId: STRANGER, channelId: strangerDm, text: "let me in" });
    const refusal = await waitFor(() => texts(strangerDm)[0], "the refusal");
    expect(refusal).toContain(`Your slack user id is ${STRANGER}`);
    const code = /approve ([A-Z2-9]{8})/.exec(refusal)?.[1] ?? "";

    expect(await cli("pairing", "approve", code)).toContain(`approved slack user ${STRANGER}`);
    await replyIn(strangerDm, `${refusal}${WELCOME_TEXT}`);
    slack.write({ userId: STRANGER, channelId: strangerDm, text: "now?" });

    expect(await replyIn(strangerDm, `${refusal}${WELCOME_TEXT}echo: now?`)).toHaveLength(3);
    expect(anthropic.requests.map(lastUserText)).toEqual(["now?"]);
  });

  it("reconnects when Slack sends disconnect, answers after it, and never logs a token", async () => {
    const server = await serve();
    slack.disconnect("refresh_requested");
    await waitFor(() => slack.callsTo("apps.connections.open").length === 2, "a new connection");
    slack.write({ userId: OWNER, channelId: ownerDm, text: "still there?" });
    await replyIn(ownerDm, "echo: still there?");

    expect(await healthz(server)).toMatchObject({
      buses: [{ platform: "slack", state: "connected" }],
    });
    expect(server.transcript()).not.toContain(slack.botToken);
    expect(server.transcript()).not.toContain(slack.appToken);
  });

  it("tells a revoked app-level token once, with doctor's fix, on /healthz, the overview and status", async () => {
    slack.revoke(slack.appToken);
    ws = busWorkspace(anthropic.url, slackYaml(slack, { allowedUserIds: [OWNER] }));
    const server = await startServer(ws.dir);
    await waitFor(() => slack.callsTo("apps.connections.open").length >= 4, "three retries");

    const refusal = `Slack refused a token (app_token, apps.connections.open: invalid_auth); ${CREDENTIAL_SERVICES.slack.fix}`;
    expect(server.linesMatching("slack: could not connect")).toEqual([
      expect.objectContaining({ level: 50, error: refusal }),
    ]);
    const health = await server.fetch("/healthz");
    expect(health.status).toBe(503);
    expect(await health.json()).toMatchObject({
      buses: [{ platform: "slack", state: "connecting" }],
      unhealthy: [refusal],
    });
    const overview = await (await server.fetch("/")).text();
    expect(overview).toContain("<dt>slack</dt>");
    expect(overview).toContain("connecting, login refused");
    expect(await cli("status")).toContain(`  unhealthy  ${refusal}\n`);
    const doctor = await runCli(["doctor", "--json", "--workspace", ws.dir]);
    expect(doctor.stdout).toContain(JSON.stringify(CREDENTIAL_SERVICES.slack.fix));
    expect(server.transcript()).not.toContain(slack.appToken);
  });

  it("reads a photo sent in a DM as an image block with its caption, downloaded once by the job", async () => {
    await serve();
    const bytes = await photo(800, 600);
    slack.write({
      userId: OWNER,
      channelId: ownerDm,
      text: "what is in this picture?",
      files: [{ name: "pickles.jpg", mimetype: "image/jpeg", bytes }],
    });
    await replyIn(ownerDm, "echo: what is in this picture?");
    const user = anthropic.requests
      .at(-1)
      ?.body.messages.filter((m) => m.role === "user")
      .at(-1);
    const [image, caption] = (user?.content ?? []) as Array<Record<string, unknown>>;
    expect(image).toMatchObject({ type: "image", source: { media_type: "image/jpeg" } });
    const sent = (image?.source as { data: string } | undefined)?.data ?? "";
    expect(Buffer.from(sent, "base64").equals(bytes)).toBe(true);
    expect(caption).toMatchObject({ type: "text", text: "what is in this picture?" });
    expect(slack.downloads).toHaveLength(1);
  });

  it("exits 0 on SIGTERM while reconnecting to an unreachable Slack", async () => {
    const server = await serve();
    slack.goOffline();
    await server.waitForLog("slack: could not connect");

    server.signal("SIGTERM");
    const exit = await server.exited;

    expect(exit.code).toBe(0);
    expect(
      server.linesMatching("connections were still open after the stop; exiting anyway"),
    ).toEqual([]);
  });
});

/** The notices people were shown alone (ephemeral answers to presses). */
function notices(): string[] {
  return slack.pressResponses.filter((r) => r.status === 200).map((r) => String(r.body.text));
}

/** The action id of a button of the message, by its label. */
function buttonId(message: StoredMessage, label: string): string {
  const button = message.blocks
    .flatMap((block) => block.elements ?? [])
    .find((element) => element.text.text === label);
  if (!button) throw new Error(`no button ${label}`);
  return button.action_id;
}
