/**
 * Memory as a person meets it, end to end: `picklebot server` (the built CLI) with the
 * Telegram bus on the fake Bot API, and the fake Anthropic API as a model that calls the
 * `memory` and `session_search` tools when asked to. What the model is sent (its system
 * prompt, the tool results) is read from the fake's requests.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  type FakeAnthropic,
  type FakeReply,
  lastUserText,
  type RecordedRequest,
  startFakeAnthropic,
} from "../fakes/anthropic.js";
import { type FakeTelegram, startFakeTelegram } from "../fakes/telegram.js";
import { busWorkspace, startBusServer, telegramYaml } from "../helpers/bus.js";
import { postgresSkipReason, useMigratedDatabase } from "../helpers/postgres.js";
import { killAllServers, openWorkspaceDb } from "../helpers/server.js";
import { lastResults, systemOf } from "../helpers/subagents.js";
import { waitFor } from "../helpers/wait.js";
import type { TempWorkspace } from "../helpers/workspace.js";

const skipReason = await postgresSkipReason();

const ANA = 4242;
const BEN = 4343;
const GROUP = -1001;

/** A 1 500-character entry: past the default 1 400 of a person's memory. */
const LONG_ENTRY = `The person likes ${"long walks, ".repeat(123)}and tea`;
const GITHUB_TOKEN = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";

/**
 * The fake model: saves "remember my cat is called X", searches "what did we say about
 * the garden", reads "read session <id>", makes four bad memory calls on "try bad memory",
 * answers "Noted <n>." to n tool results and echoes anything else.
 */
function model(request: RecordedRequest): FakeReply {
  const results = lastResults(request).length;
  if (results > 0) return { text: `Noted ${results}.` };
  const said = lastUserText(request);
  const cat = /remember my cat is called (\w+)/.exec(said)?.[1];
  if (cat) return memoryCalls([{ action: "add", about: "person", text: `Their cat is ${cat}.` }]);
  if (said.includes("what did we say about the garden")) {
    return { toolUses: [{ name: "session_search", input: { query: "garden" } }] };
  }
  const session = /^read session (\S+)$/.exec(said)?.[1];
  if (session) return { toolUses: [{ name: "session_read", input: { session_id: session } }] };
  if (said.includes("try bad memory")) {
    return memoryCalls([
      { action: "add", about: "person", text: LONG_ENTRY },
      { action: "add", about: "person", text: `GitHub token: ${GITHUB_TOKEN}` },
      { action: "replace", about: "person", old_text: "dog", text: "Their dog is Rex." },
      { action: "add", about: "person", text: "their cat is  Miso." },
    ]);
  }
  return { text: `echo: ${said}` };
}

function memoryCalls(inputs: Record<string, string>[]): FakeReply {
  return { toolUses: inputs.map((input) => ({ name: "memory", input })) };
}

let fake: FakeAnthropic;
let telegram: FakeTelegram;
let ws: TempWorkspace;

beforeEach(async () => {
  fake = await startFakeAnthropic({ defaultReply: model });
  telegram = await startFakeTelegram();
});

afterEach(async () => {
  await killAllServers();
  await telegram.close();
  await fake.close();
  ws?.remove();
});

function workspace(storageYaml = ""): TempWorkspace {
  ws = busWorkspace(fake.url, telegramYaml(telegram, { allowedUserIds: [ANA, BEN] }) + storageYaml);
  return ws;
}

/** `userId` says `text` (in their private chat, or mentioning the bot in `chatId`). */
function say(userId: number, text: string, chatId = userId): void {
  telegram.sendUserMessage({ chatId, userId, text, mention: chatId < 0 });
}

/** Waits until the bot's last message in a chat is `text`. */
async function botSays(chatId: number, text: string): Promise<void> {
  await telegram.waitFor(() => telegram.messages(chatId).at(-1) === text, 15_000);
}

/** The request that answered `text` first (the one whose newest user message it is). */
async function requestFor(text: string): Promise<RecordedRequest> {
  return waitFor(
    () => fake.requests.find((request) => lastUserText(request) === text),
    `a model request answering "${text}"`,
  );
}

/** What the person's memory holds, read from the workspace's database. */
function storedMemory(person: number): string | undefined {
  const db = openWorkspaceDb(ws.dir);
  try {
    const row = db
      .prepare("SELECT text FROM memories WHERE agent_id = 'pickle' AND scope = ?")
      .get(`telegram:${person}`) as { text: string } | undefined;
    return row?.text;
  } finally {
    db.close();
  }
}

describe("memory over Telegram", () => {
  it("remembers a fact in the next session's system prompt, for that person only", async () => {
    workspace();
    await startBusServer(ws.dir, ["telegram"]);

    say(ANA, "remember my cat is called Miso");
    await botSays(ANA, "Noted 1.");
    const [saved] = lastResults(fake.requests.at(-1) as RecordedRequest);
    expect(saved?.is_error).toBeUndefined();
    expect(String(saved?.content)).toContain(
      'Saved to the memory about the person you are answering (telegram:4242): "Their cat is Miso."',
    );
    // The session that saved it keeps its prompt: the fact comes with the next one.
    say(ANA, "what is my cat called?");
    await botSays(ANA, "echo: what is my cat called?");
    expect(systemOf(await requestFor("what is my cat called?"))).not.toContain("Miso");

    say(ANA, "/new");
    await telegram.waitFor(
      () => telegram.messages(ANA).at(-1)?.startsWith("Started a new") === true,
    );
    say(ANA, "and now, what is my cat called?");
    await botSays(ANA, "echo: and now, what is my cat called?");
    const next = systemOf(await requestFor("and now, what is my cat called?"));
    expect(next).toContain("# Memory");
    expect(next).toContain("It may be out of date");
    expect(next).toContain(
      "## About the person you are talking to (18 of 1400 characters)\n\nTheir cat is Miso.",
    );

    // Ben, in a group with Ana and in his own chat, is never shown Ana's memory.
    say(BEN, "what is my cat called?", GROUP);
    await botSays(GROUP, "echo: what is my cat called?");
    say(BEN, "in private: what is my cat called?");
    await botSays(BEN, "echo: in private: what is my cat called?");
    for (const text of ["what is my cat called?", "in private: what is my cat called?"]) {
      const asked = fake.requests.filter((request) => lastUserText(request) === text);
      expect(asked.map((request) => systemOf(request).includes("Miso"))).not.toContain(true);
    }
  });

  it("keeps what a person says in a group in their own memory, shown only in their private chat", async () => {
    workspace();
    await startBusServer(ws.dir, ["telegram"]);

    say(ANA, "remember my cat is called Momo", GROUP);
    await botSays(GROUP, "Noted 1.");
    expect(storedMemory(ANA)).toBe("Their cat is Momo.");
    expect(storedMemory(BEN)).toBeUndefined();
    say(BEN, "what is my cat called?", GROUP);
    await botSays(GROUP, "echo: what is my cat called?");
    expect(systemOf(await requestFor("what is my cat called?"))).not.toContain("Momo");

    say(ANA, "what is my cat called, in private?");
    await botSays(ANA, "echo: what is my cat called, in private?");
    expect(systemOf(await requestFor("what is my cat called, in private?"))).toContain(
      "Their cat is Momo.",
    );
  });

  it("answers bad memory calls with what is wrong, and keeps the memory as it was", async () => {
    workspace();
    await startBusServer(ws.dir, ["telegram"]);
    say(ANA, "remember my cat is called Miso");
    await botSays(ANA, "Noted 1.");

    say(ANA, "try bad memory");
    await botSays(ANA, "Noted 4.");
    const results = lastResults(fake.requests.at(-1) as RecordedRequest);
    expect(results.map((result) => result.is_error)).toEqual([true, true, true, true]);
    const [long, secret, unknown, duplicate] = results.map((result) => String(result.content));
    expect(long).toMatch(/the entry is 1500 characters and .* holds 1400 in all/);
    expect(secret).toContain("looks like a secret (a GitHub token)");
    expect(secret).not.toContain(GITHUB_TOKEN);
    expect(unknown).toContain(
      'no entry of the memory about the person you are answering (telegram:4242) holds "dog"',
    );
    expect(unknown).toContain('Its entries: 1. "Their cat is Miso."');
    expect(duplicate).toContain("already saved in");
    expect(storedMemory(ANA)).toBe("Their cat is Miso.");
  });
});

/** Ana talks about the garden, Ben too; in a later session Ana asks what was said. */
async function gardenSearch(): Promise<void> {
  await startBusServer(ws.dir, ["telegram"]);
  say(ANA, "let's plant tomatoes in the garden this spring");
  await botSays(ANA, "echo: let's plant tomatoes in the garden this spring");
  say(BEN, "my garden is full of weeds");
  await botSays(BEN, "echo: my garden is full of weeds");
  say(ANA, "/new");
  await telegram.waitFor(() => telegram.messages(ANA).at(-1)?.startsWith("Started a new") === true);

  say(ANA, "what did we say about the garden last month?");
  await botSays(ANA, "Noted 1.");
  const [found] = lastResults(fake.requests.at(-1) as RecordedRequest);
  const text = String(found?.content);
  expect(found?.is_error).toBeUndefined();
  expect(text).toMatch(/^\d+ messages? found, best first/);
  expect(text).toMatch(
    /session s_\S+, message 1, .*they said: let's plant tomatoes in the \[garden\] this spring/,
  );
  expect(text).toContain("Read more of one with session_read");
  expect(text).not.toContain("weeds");

  // Ana reads more of that session; Ben, given its id, reads nothing of it.
  const sessionId = /session (s_\S+), message 1, .*they said: let's plant/.exec(text)?.[1] ?? "";
  const [read] = await readSession(ANA, sessionId);
  expect(read?.is_error).toBeUndefined();
  expect(String(read?.content)).toContain("let's plant tomatoes in the garden this spring");
  const [refused] = await readSession(BEN, sessionId);
  expect(refused?.is_error).toBe(true);
  expect(String(refused?.content)).toContain(
    `there is no session "${sessionId}" among your conversations with this person`,
  );
  expect(String(refused?.content)).not.toContain("tomatoes");
}

/** `userId` asks to read a session; the session_read result the model was then sent. */
async function readSession(userId: number, sessionId: string) {
  const before = fake.requests.length;
  say(userId, `read session ${sessionId}`);
  const answered = await waitFor(
    () => fake.requests.slice(before).find((request) => lastResults(request).length > 0),
    `the result of session_read for ${userId}`,
  );
  await botSays(userId, "Noted 1.");
  return lastResults(answered);
}

describe("session_search over Telegram", () => {
  it("finds a person's older session's message on SQLite and reads more of it, never another person's", async () => {
    workspace();
    await gardenSearch();
  });

  describe.skipIf(skipReason !== null)("on PostgreSQL", () => {
    const database = useMigratedDatabase("memory_e2e");
    it("finds a person's older session's message and reads more of it, never another person's", async () => {
      const url = database().url;
      workspace(
        `queue:\n  backend: postgres\n  url: ${url}\n  pool_size: 3\nhistory:\n  backend: postgres\n`,
      );
      await gardenSearch();
    });
  });
});
