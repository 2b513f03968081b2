/**
 * Chat from Telegram, end to end: `picklebot server` as a child process with the Telegram
 * bus enabled against the fake Bot API, the real telegraf inside, and the fake Anthropic
 * API as the model. Tests read what the fake Telegram recorded, the way a user sees it.
 */
import type Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Job } from "../../src/ports/index.js";
import { WELCOME_TEXT } from "../../src/storage/pairing-approval.js";
import {
  type FakeAnthropic,
  lastUserText,
  messageText,
  requestAt,
  startFakeAnthropic,
} from "../fakes/anthropic.js";
import { type FakeTelegram, startFakeTelegram } from "../fakes/telegram.js";
import {
  busWorkspace,
  healthz,
  startBusServer,
  stopTelegramReply,
  telegramYaml,
  waitForBus,
} from "../helpers/bus.js";
import { runCli } from "../helpers/cli.js";
import {
  freePort,
  killAllServers,
  openWorkspaceDb,
  sessionMessages,
  startServer,
} from "../helpers/server.js";
import { waitFor } from "../helpers/wait.js";
import { fakeModelConfig, type TempWorkspace } from "../helpers/workspace.js";

const OWNER = 4242;
const STRANGER = 777;

let model: FakeAnthropic;
let telegram: FakeTelegram;
let ws: TempWorkspace;
let db: Database.Database | null = null;

beforeEach(async () => {
  model = await startFakeAnthropic({
    defaultReply: (request) => ({ text: `echo: ${lastUserText(request)}` }),
  });
  telegram = await startFakeTelegram();
  ws = busWorkspace(model.url, telegramYaml(telegram, { allowedUserIds: [OWNER] }));
});

afterEach(async () => {
  await killAllServers();
  db?.close();
  db = null;
  await telegram.close();
  await model.close();
  ws.remove();
});

/** A promise the test settles, to hold the fake model in the middle of a reply. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open = () => {};
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

/** Scripts a reply that streams its first chunk, then hangs until the test opens its gate. */
function scriptHeldReply(text: string, chunks: number): { open: () => void } {
  const held = gate();
  model.script({ text, chunks, pauseAfterChunks: 1, resume: held.promise });
  return held;
}

function say(text: string, userId = OWNER, chatId = userId) {
  return telegram.sendUserMessage({ chatId, userId, text });
}

/** Waits until the bot's messages in a chat are exactly `expected`. */
async function chatShows(chatId: number, expected: string[], timeoutMs = 10_000): Promise<void> {
  try {
    await telegram.waitFor(
      () => JSON.stringify(telegram.messages(chatId)) === JSON.stringify(expected),
      timeoutMs,
    );
  } catch (error) {
    const shown = JSON.stringify(telegram.messages(chatId));
    throw new Error(`chat ${chatId} shows ${shown}, not ${JSON.stringify(expected)}: ${error}`);
  }
}

async function cli(...args: string[]): Promise<string> {
  const result = await runCli([...args, "--workspace", ws.dir]);
  if (result.code !== 0) throw new Error(`picklebot ${args.join(" ")}: ${result.stderr}`);
  return result.stdout;
}

async function jobs(): Promise<Job[]> {
  return JSON.parse(await cli("jobs", "--json")) as Job[];
}

function database(): Database.Database {
  db ??= openWorkspaceDb(ws.dir);
  return db;
}

describe("Telegram chat", () => {
  it("streams a DM reply: the first text is sent, then edited in place into the full reply", async () => {
    const answer = "Pickles are cucumbers in brine.";
    const held = scriptHeldReply(answer, 3);
    const server = await startBusServer(ws.dir, ["telegram"]);

    say("what is a pickle?");
    const first = await telegram.waitForCall("sendMessage", undefined, 10_000);
    expect(answer.startsWith(String(first.params.text))).toBe(true);
    expect(String(first.params.text).length).toBeLessThan(answer.length);
    expect(telegram.callsOf("sendChatAction")[0]?.params).toMatchObject({ action: "typing" });
    held.open();

    await chatShows(OWNER, [answer]);
    expect(telegram.callsOf("editMessageText").some((call) => call.status === 200)).toBe(true);
    expect(telegram.callsOf("sendMessage")).toHaveLength(1);
    expect(model.requests.map(lastUserText)).toEqual(["what is a pickle?"]);
    const [job] = await jobs();
    expect(job).toMatchObject({ state: "done", sessionKey: `telegram:${OWNER}`, attempts: 1 });
    expect(server.transcript()).not.toContain(telegram.token);
  });

  it("sends a 6000-character reply as two messages split at a paragraph", async () => {
    const paragraph = (n: number) => `${`Paragraph ${n}. `.padEnd(999, "x")}`;
    const long = Array.from({ length: 6 }, (_, n) => paragraph(n + 1)).join("\n\n");
    expect(long.length).toBeGreaterThan(6000);
    model.script({ text: long });
    await startBusServer(ws.dir, ["telegram"]);

    say("tell me everything");
    await telegram.waitFor(() => telegram.messages(OWNER).join("\n\n") === long, 10_000);
    const messages = telegram.messages(OWNER);
    expect(messages).toHaveLength(2);
    for (const message of messages) expect(message.length).toBeLessThanOrEqual(4096);
    expect(messages[0]?.endsWith("x")).toBe(true);
    expect(messages[1]?.startsWith("Paragraph 5.")).toBe(true);
  });

  it("refuses an unknown user once with their id and a pairing code, and never calls the model", async () => {
    const server = await startBusServer(ws.dir, ["telegram"]);
    say("hello?", STRANGER);
    const [refusal] = await telegram.waitFor(() => {
      const shown = telegram.messages(STRANGER);
      return shown.length > 0 ? shown : null;
    });
    expect(refusal).toContain(`Your telegram user id is ${STRANGER}`);
    expect(refusal).toMatch(/picklebot pairing approve [A-Z2-9]{8} \(valid for 60 minutes\)/);

    say("hello??", STRANGER);
    // Messages are handled in arrival order: once the owner's reply is there, the
    // stranger's second message has been handled too.
    say("ping");
    await chatShows(OWNER, ["echo: ping"]);
    expect(telegram.messages(STRANGER)).toHaveLength(1);
    expect(model.requests.map(lastUserText)).toEqual(["ping"]);
    expect((await jobs()).map((job) => job.sessionKey)).toEqual([`telegram:${OWNER}`]);
    // Every attempt is logged, the silent second one too.
    const attempts = server.linesMatching("message from a user who is not allowed; no job");
    expect(attempts).toHaveLength(2);
    expect(attempts[0]).toMatchObject({
      platform: "telegram",
      user: String(STRANGER),
      chat: String(STRANGER),
    });
  });

  it("admits a user approved with `picklebot pairing approve`, whose next message then runs", async () => {
    await startBusServer(ws.dir, ["telegram"]);
    say("let me in", STRANGER);
    const refusal = await telegram.waitFor(() => telegram.messages(STRANGER)[0]);
    const code = /approve ([A-Z2-9]{8})/.exec(refusal)?.[1] ?? "";

    const listed = JSON.parse(await cli("pairing", "list", "--json"));
    expect(listed.pending).toEqual([
      expect.objectContaining({ code, platform: "telegram", userId: String(STRANGER) }),
    ]);
    expect(await cli("pairing", "approve", code.toLowerCase())).toContain(
      `approved telegram user ${STRANGER}`,
    );
    const bad = await runCli(["pairing", "approve", code, "--workspace", ws.dir]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain(`pairing code "${code}" is not pending`);
    // The running server delivers the welcome the approval left in the outbox.
    await chatShows(STRANGER, [refusal, WELCOME_TEXT]);

    say("now?", STRANGER);
    await chatShows(STRANGER, [refusal, WELCOME_TEXT, "echo: now?"]);

    expect(await cli("pairing", "revoke", `telegram:${STRANGER}`)).toContain(
      `revoked telegram user ${STRANGER}`,
    );
    say("still there?", STRANGER);
    say("ping");
    await chatShows(OWNER, ["echo: ping"]);
    expect(model.requests.map(lastUserText)).toEqual(["now?", "ping"]);
  });

  it("runs three quick messages of one chat one after another, in order, in one session", async () => {
    await startBusServer(ws.dir, ["telegram"]);
    say("one");
    say("two");
    say("three");
    await chatShows(OWNER, ["echo: one", "echo: two", "echo: three"], 15_000);
    expect(model.requests.map(lastUserText)).toEqual(["one", "two", "three"]);
    // Each turn saw the turns before it.
    expect(model.requests.map((request) => request.body.messages.length)).toEqual([1, 3, 5]);
  });

  it("aborts a long reply on /stop: the model stream is cut and the chat says so", async () => {
    scriptHeldReply("A very long story begins here and goes on", 4);
    const server = await startBusServer(ws.dir, ["telegram"]);
    say("tell me a long story");
    await telegram.waitForCall("sendMessage", undefined, 10_000);

    await stopTelegramReply(telegram, OWNER);
    const [job] = await server.jobOutcomes((await jobs())[0]?.id ?? "", 1);
    expect(job).toMatchObject({ outcome: "stopped" });
    expect(model.requests).toHaveLength(1);
  });

  it("/stop is remembered: the next turn sees the partial reply and the stop, not the request again", async () => {
    scriptHeldReply("Once upon a time a pickle set out to see the world", 4);
    const server = await startBusServer(ws.dir, ["telegram"]);
    say("tell me a long story");
    await telegram.waitForCall("sendMessage", undefined, 10_000);
    await stopTelegramReply(telegram, OWNER);
    const [shown = ""] = telegram.messages(OWNER);
    const partial = shown.slice(0, -"\n\nStopped.".length);
    expect(partial).not.toBe("");

    say("then a short one");
    await telegram.waitFor(() => telegram.messages(OWNER).length === 3, 10_000);
    expect(telegram.messages(OWNER)[2]).toBe("echo: then a short one");
    const next = requestAt(model, 1).body.messages;
    expect(next.map((message) => [message.role, messageText(message)])).toEqual([
      ["user", "tell me a long story"],
      ["assistant", `${partial}\n\n[stopped by the user]`],
      ["user", "then a short one"],
    ]);
    expect(model.refused).toEqual([]);

    const [, stopped] = await jobs();
    expect(stopped).toMatchObject({ state: "stopped", lastError: "stopped by the user" });
    expect(await cli("jobs")).toMatch(new RegExp(`${stopped?.id}\\s+stopped\\s`));
    expect(await cli("jobs", "--state", "failed")).toContain("no failed jobs");
    expect(await cli("jobs", "show", stopped?.id ?? "")).toMatch(/^state\s+stopped$/m);
    const retry = await runCli(["jobs", "retry", stopped?.id ?? "", "--workspace", ws.dir]);
    expect(retry.code).toBe(1);
    expect(retry.stderr).toContain(`job ${stopped?.id} is stopped; a stopped job is not run again`);
    const metrics = async () => (await server.fetch("/metrics")).text();
    expect(await metrics()).toContain('picklebot_jobs_processed_total{outcome="stopped"} 1');
    expect(await metrics()).not.toContain('picklebot_jobs_processed_total{outcome="failed"}');
    // The queue depth is refreshed every few seconds.
    await waitFor(
      async () => (await metrics()).includes('picklebot_queue_depth{state="stopped"} 1'),
      "the stopped job in the queue depth",
      20_000,
    );
  });

  it("answers in a group only when mentioned or replied to, without the mention in the prompt", async () => {
    const group = -1001;
    await startBusServer(ws.dir, ["telegram"]);
    telegram.sendUserMessage({ chatId: group, userId: OWNER, text: "talking among ourselves" });
    telegram.sendUserMessage({
      chatId: group,
      userId: OWNER,
      text: "what time is it?",
      mention: true,
    });
    await chatShows(group, ["echo: what time is it?"]);
    telegram.sendUserMessage({ chatId: group, userId: OWNER, text: "and now?", replyToBot: true });
    await chatShows(group, ["echo: what time is it?", "echo: and now?"]);
    expect(model.requests.map(lastUserText)).toEqual(["what time is it?", "and now?"]);
  });

  it("sends Markdown as Telegram formatting, and resends as plain text when Telegram rejects it", async () => {
    model.script({ text: "This is **bold** and `code`." }, { text: "Second **try**." });
    await startBusServer(ws.dir, ["telegram"]);
    say("format something");
    await chatShows(OWNER, ["This is bold and code."]);
    const sent = telegram.callsOf("sendMessage").at(-1);
    expect(sent?.params.parse_mode).toBe("MarkdownV2");

    const rejected = "Bad Request: can't parse entities: Character '.' is reserved";
    telegram.failNext("sendMessage", { status: 400, description: rejected });
    telegram.failNext("editMessageText", { status: 400, description: rejected });
    say("again");
    await chatShows(OWNER, ["This is bold and code.", "Second **try**."]);
  });
});

describe("Telegram delivery you can trust", () => {
  it("delivers a cron's deliver_to reply after the first sends fail with 500, with one model call", async () => {
    ws.write(
      "crons/report.yaml",
      `schedule: "0 0 1 1 *"\nprompt: daily report\nenabled: false\ndeliver_to: telegram:${OWNER}\n`,
    );
    telegram.openChat(OWNER);
    telegram.failNext("sendMessage", { status: 500 }, 1000);
    const server = await startBusServer(ws.dir, ["telegram"]);
    const job = JSON.parse(await cli("cron", "run", "report", "--json")) as Job;
    await server.jobOutcomes(job.id, 1);

    // The job is done, the reply waits in the outbox, and status and /healthz show it.
    await waitForOutbox(1);
    const health = await healthz(server);
    expect(health.outbox).toMatchObject({ pending: 1, failed: 0 });
    expect(await cli("status")).toMatch(/outbox {5}1 replies waiting for delivery/);
    expect(telegram.messages(OWNER)).toEqual([]);

    telegram.clearFailures();
    await chatShows(OWNER, ["echo: daily report"], 20_000);
    await waitForOutbox(0);
    expect(model.requests).toHaveLength(1);
    expect(telegram.callsOf("sendMessage").filter((call) => call.status === 200)).toHaveLength(1);
    expect(server.transcript()).not.toContain(telegram.token);
  });

  it("keeps an undelivered reply across a restart and delivers it once the platform is back", async () => {
    telegram.failNext("sendMessage", { status: 502 }, 1000);
    const first = await startBusServer(ws.dir, ["telegram"]);
    say("are you there?");
    await waitForOutbox(1);
    await first.kill();

    telegram.clearFailures();
    await startBusServer(ws.dir, ["telegram"]);
    await chatShows(OWNER, ["echo: are you there?"], 20_000);
    await waitForOutbox(0);
    expect(model.requests).toHaveLength(1);
    expect((await jobs())[0]).toMatchObject({ state: "done", attempts: 1 });
  });

  it("answers once after a SIGKILL in the middle of a reply, without handling the update twice", async () => {
    scriptHeldReply("The answer is 42, as always.", 3);
    const first = await startBusServer(ws.dir, ["telegram"]);
    say("what is the answer?");
    await telegram.waitForCall("sendMessage", undefined, 10_000);
    // The server stores the message id right after Telegram confirms the send.
    await waitFor(
      () =>
        database().prepare("SELECT 1 FROM outbox WHERE message_ids != '[]'").get() !== undefined,
      "the streamed message is recorded",
    );
    await first.kill();

    model.script({ text: "The answer is 42, as always." });
    await startBusServer(ws.dir, ["telegram"]);
    await chatShows(OWNER, ["The answer is 42, as always."], 15_000);

    const all = await jobs();
    expect(all).toHaveLength(1);
    expect(all[0]).toMatchObject({ state: "done", attempts: 2 });
    const stored = sessionMessages(database(), all[0]?.sessionId ?? "");
    expect(stored.map((message) => message.text)).toEqual([
      "what is the answer?",
      "The answer is 42, as always.",
    ]);
    expect(telegram.callsOf("sendMessage").filter((call) => call.status === 200)).toHaveLength(1);
  });

  it("confirms the update offset on a graceful stop, so a restart handles nothing twice", async () => {
    const server = await startBusServer(ws.dir, ["telegram"]);
    const update = say("hi");
    await chatShows(OWNER, ["echo: hi"]);
    server.signal("SIGTERM");
    expect(await server.exited).toEqual({ code: 0, signal: null });
    expect(telegram.confirmedOffset).toBe(update.update_id + 1);

    await startBusServer(ws.dir, ["telegram"]);
    say("again");
    await chatShows(OWNER, ["echo: hi", "echo: again"]);
    expect(model.requests.map(lastUserText)).toEqual(["hi", "again"]);
  });
});

describe("Telegram connection and agent posts", () => {
  it("retries a lost connection with backoff, showing it in /healthz and status, without leaking the token", async () => {
    const port = await freePort();
    const yaml = telegramYaml(telegram, { allowedUserIds: [OWNER] });
    ws.write(
      "picklebot.yaml",
      fakeModelConfig(model.url, yaml.replace(telegram.apiRoot, `http://127.0.0.1:${port}`)),
    );
    const server = await startServer(ws.dir);
    await server.waitForLog("telegram: could not connect");
    const down = await server.fetch("/healthz");
    expect(down.status).toBe(503);
    expect(await down.json()).toMatchObject({
      buses: [{ platform: "telegram", state: "connecting" }],
    });

    const revived = await startFakeTelegram({ port });
    try {
      await waitForBus(server, ["telegram"], 20_000);
      const up = await server.fetch("/healthz");
      expect(up.status).toBe(200);
      expect(await up.json()).toMatchObject({
        buses: [{ platform: "telegram", state: "connected" }],
      });
      revived.sendUserMessage({ chatId: OWNER, userId: OWNER, text: "back?" });
      await revived.waitFor(() => revived.messages(OWNER)[0] === "echo: back?", 10_000);
    } finally {
      await revived.close();
    }
    expect(server.transcript()).not.toContain(telegram.token);
  });

  it("lets a cron's agent post into its deliver_to chat with post_message, through the outbox", async () => {
    ws.write(
      "agents/poster/AGENT.md",
      "---\nname: Poster\ndescription: Posts news\ntools: [post_message]\n---\nYou post updates.\n",
    );
    ws.write(
      "crons/news.yaml",
      `schedule: "0 0 1 1 *"\nagent: poster\nprompt: post the news\nenabled: false\ndeliver_to: telegram:${OWNER}\n`,
    );
    telegram.openChat(OWNER);
    model.script(
      {
        toolUses: [{ name: "post_message", input: { text: "Breaking: pickles are **crunchy**." } }],
      },
      { text: "All news posted." },
    );
    const server = await startBusServer(ws.dir, ["telegram"]);
    const job = JSON.parse(await cli("cron", "run", "news", "--json")) as Job;
    await server.jobOutcomes(job.id, 1);
    await chatShows(OWNER, ["Breaking: pickles are crunchy.", "All news posted."]);
    const toolResult = lastUserText(model.requests[1] ?? never());
    expect(toolResult).toBe(`posted to telegram:${OWNER}`);
    const text = await cli("status");
    expect(text).toContain("  bus      telegram: connected");
    expect(text).toContain("outbox     0 replies waiting for delivery, 0 refused by the platform");
  });
});

function never(): never {
  throw new Error("missing value");
}

async function waitForOutbox(pending: number): Promise<void> {
  await waitFor(
    async () => JSON.parse(await cli("status", "--json")).outbox.pending === pending,
    `the outbox has ${pending} pending replies`,
    15_000,
  );
}
