/**
 * ChatInbox in-process: messages from the in-memory chat platform, on the SQLite storage of
 * a temp workspace (queue, history and pairing in one database) and the test clock.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DEFAULT_MEMORY } from "../../src/agents/memory/settings.js";
import type { ChatBinding } from "../../src/chat/agents.js";
import { ChatInbox, type ChatInboxOptions, GROUP_REFUSAL } from "../../src/chat/inbox.js";
import { chatScheduleListing } from "../../src/cron/chat-schedules.js";
import type { ChatReplyTarget, IncomingChatMessage, Storage } from "../../src/ports/index.js";
import { PAIRING_CODE_TTL_MS } from "../../src/ports/index.js";
import { openStorage } from "../../src/storage/index.js";
import { FakeChatPlatform } from "../fakes/chat-platform.js";
import { TestClock } from "../helpers/clock.js";
import { testConfig } from "../helpers/config.js";
import { recordingLogger } from "../helpers/log.js";
import { makeWorkspace, type TempWorkspace } from "../helpers/workspace.js";

const OWNER = "7";
const STRANGER = "666";

let ws: TempWorkspace;
let storage: Storage;
let clock: TestClock;
let answers: Array<{ chatId: string; text: string }>;
let stops: string[];
let running: Set<string>;
let telegram: FakeChatPlatform;
let discord: FakeChatPlatform;
let bindings: ChatBinding[];

const AGENTS = [
  { id: "coder", name: "Coder", description: "Writes code", memory: null },
  { id: "pickle", name: "Pickle", description: "General assistant", memory: DEFAULT_MEMORY },
];

function inbox(
  queue: Storage["queue"] = storage.queue,
  extra: Partial<ChatInboxOptions> = {},
): ChatInbox {
  return new ChatInbox({
    ...extra,
    allowedUserIds: (platform) =>
      new Set(platform === "telegram" ? [OWNER] : ["80351110224678912"]),
    agents: { defaultAgentId: "pickle", agents: AGENTS, bindings },
    queue,
    history: storage.history,
    pairing: storage.pairing,
    answer: async (message, text) => {
      answers.push({ chatId: message.chatId, text });
    },
    stopSession: async (sessionKey) => {
      stops.push(sessionKey);
      return running.has(sessionKey);
    },
    contextUsage: async () => ({ tokens: 42_000, window: 200_000 }),
    usage: storage.usage,
    models: {
      names: ["default", "backup"],
      chainOf: (_agentId, model) =>
        model === "backup"
          ? [{ name: "backup", model: "backup-model" }]
          : [
              { name: "default", model: "claude-sonnet-4-6" },
              { name: "backup", model: "backup-model" },
            ],
    },
    pricing: { prices: {}, timezone: "UTC" },
    clock,
    logger: recordingLogger().logger,
    memory: storage.memory,
    recall: storage.recall,
  });
}

/** A stored assistant reply, for calls recorded in the usage ledger. */
function assistantReply() {
  return { role: "assistant" as const, content: [{ type: "text" as const, text: "ok" }] };
}

/** Starts both platforms on one inbox; resolves each pushed message once it is handled. */
async function connect(target: ChatInbox = inbox()) {
  const handled: Promise<void>[] = [];
  for (const platform of [telegram, discord]) {
    await platform.start((message) => {
      const handling = target.handle(message);
      handled.push(handling);
      return handling;
    });
  }
  return async (platform: FakeChatPlatform, message: Partial<IncomingChatMessage>) => {
    const sent = platform.push(message);
    await Promise.all(handled);
    return sent;
  };
}

beforeEach(async () => {
  ws = makeWorkspace();
  clock = new TestClock();
  storage = await openStorage(testConfig(ws.dir), clock);
  answers = [];
  bindings = [];
  stops = [];
  running = new Set();
  telegram = new FakeChatPlatform({ kind: "telegram" });
  discord = new FakeChatPlatform({ kind: "discord", maxMessageLength: 2000 });
});

afterEach(async () => {
  await storage.close();
  ws.remove();
});

describe("ChatInbox: messages of allowed users", () => {
  it("enqueues one chat job with the chat's session key, reply target and dedupe key", async () => {
    const send = await connect();
    await send(telegram, { userId: OWNER, chatId: "42", text: "hello there" });
    const jobs = await storage.queue.list();
    expect(jobs).toHaveLength(1);
    expect(jobs[0]).toMatchObject({
      agentId: "pickle",
      sessionKey: "telegram:42",
      sessionId: null,
      message: "hello there",
      mode: "chat",
      replyTo: { kind: "telegram", chatId: "42" },
      state: "queued",
    });
    expect(answers).toEqual([]);
  });

  it("replies to a Discord channel as a Discord target", async () => {
    const send = await connect();
    await send(discord, { userId: "80351110224678912", chatId: "555", text: "hi" });
    expect(await storage.queue.list()).toMatchObject([
      { sessionKey: "discord:555", replyTo: { kind: "discord", chatId: "555" } },
    ]);
  });

  it("adds nothing for a redelivered message (same message id)", async () => {
    const send = await connect();
    const first = await send(telegram, { userId: OWNER, text: "once" });
    await send(telegram, { userId: OWNER, text: "once", messageId: first.messageId });
    expect(await storage.queue.list()).toHaveLength(1);
    await send(telegram, { userId: OWNER, text: "once" });
    expect(await storage.queue.list()).toHaveLength(2);
  });

  it("answers an empty message (a bare mention) with help instead of a job", async () => {
    const send = await connect();
    await send(telegram, { userId: OWNER, text: "   " });
    expect(await storage.queue.list()).toEqual([]);
    expect(answers).toHaveLength(1);
    expect(answers[0]?.text).toContain("/new");
  });

  it("tells the sender when the message could not be queued, and does not throw", async () => {
    const broken = Object.create(storage.queue) as Storage["queue"];
    broken.enqueue = async () => {
      throw new Error("database is locked");
    };
    const send = await connect(inbox(broken));
    await send(telegram, { userId: OWNER, text: "hello" });
    expect(answers).toHaveLength(1);
  });
});

describe("ChatInbox: strangers", () => {
  it("refuses with their id and a pairing code, enqueues nothing, and refuses at most once an hour", async () => {
    const send = await connect();
    await send(telegram, { userId: STRANGER, userName: "Mallory", text: "let me in" });
    expect(await storage.queue.list()).toEqual([]);
    const [code] = await storage.pairing.pending(clock.now());
    expect(code).toMatchObject({ platform: "telegram", userId: STRANGER, userName: "Mallory" });
    expect(answers).toHaveLength(1);
    expect(answers[0]?.text).toContain(STRANGER);
    expect(answers[0]?.text).toContain(code?.code);

    await send(telegram, { userId: STRANGER, text: "hello?" });
    clock.advance(PAIRING_CODE_TTL_MS - 1);
    await send(telegram, { userId: STRANGER, text: "anyone?" });
    expect(answers).toHaveLength(1);
    expect(await storage.queue.list()).toEqual([]);

    clock.advance(1);
    await send(telegram, { userId: STRANGER, text: "again" });
    expect(answers).toHaveLength(2);
  });

  it("in a group, tells a stranger to ask in private, saying neither their id nor a code", async () => {
    const send = await connect();
    await send(telegram, {
      userId: STRANGER,
      chatId: "-100",
      direct: false,
      text: "@bot let me in",
    });
    expect(await storage.pairing.pending(clock.now())).toEqual([]);
    expect(answers).toHaveLength(1);
    expect(answers[0]?.text).toBe(GROUP_REFUSAL);
    expect(answers[0]?.text).not.toContain(STRANGER);
    expect(await storage.queue.list()).toEqual([]);
  });

  it("admits a stranger once the owner approved their code", async () => {
    const send = await connect();
    await send(telegram, { userId: STRANGER, text: "let me in" });
    const [request] = await storage.pairing.pending(clock.now());
    await storage.pairing.approve(request?.code as string, clock.now());
    await send(telegram, { userId: STRANGER, text: "thanks" });
    expect(await storage.queue.list()).toMatchObject([{ message: "thanks" }]);
  });

  it("does not let a Telegram allowlist entry in on Discord", async () => {
    const send = await connect();
    await send(discord, { userId: OWNER, text: "hi" });
    expect(await storage.queue.list()).toEqual([]);
    expect(answers).toHaveLength(1);
  });
});

describe("ChatInbox: commands", () => {
  it("/new starts a new session for the chat, and no job", async () => {
    const send = await connect();
    const before = await storage.history.createSession({ key: "telegram:42", agentId: "pickle" });
    await send(telegram, { userId: OWNER, chatId: "42", text: "/new" });
    const current = await storage.history.currentSession("telegram:42");
    expect(current?.id).not.toBe(before.id);
    expect(answers[0]?.text).toContain(current?.id);
    expect(await storage.queue.list()).toEqual([]);
  });

  it("/reminders lists this chat's active schedules only, with their absolute times", async () => {
    const schedule = (id: string, chatId: string, at: number) => ({
      id,
      agentId: "pickle",
      chat: { kind: "telegram" as const, chatId },
      createdBy: "agent pickle",
      kind: "message" as const,
      text: `reminder ${id}`,
      at,
      cron: null,
      timezone: "Europe/Berlin",
      createdAt: clock.now(),
    });
    await storage.schedules.create(schedule("aaaaaa", "42", clock.now() + 3_600_000), 10);
    await storage.schedules.create(schedule("bbbbbb", "43", clock.now() + 3_600_000), 10);
    const reminders = (chat: ChatReplyTarget) =>
      chatScheduleListing(storage.schedules, clock, chat);
    const send = await connect(inbox(storage.queue, { reminders }));
    await send(telegram, { userId: OWNER, chatId: "42", text: "/reminders" });
    expect(answers.at(-1)).toEqual({
      chatId: "42",
      text: 'aaaaaa: message "reminder aaaaaa" at 2025-01-01 02:00:00 Europe/Berlin',
    });
    await send(telegram, { userId: OWNER, chatId: "44", text: "/reminders" });
    expect(answers.at(-1)?.text).toBe("This chat has no active schedules.");
    expect(await storage.queue.list()).toEqual([]);
  });

  it("/status names the agent and counts the chat's waiting jobs", async () => {
    const send = await connect();
    await send(telegram, { userId: OWNER, chatId: "42", text: "first" });
    await send(telegram, { userId: OWNER, chatId: "43", text: "another chat" });
    await send(telegram, { userId: OWNER, chatId: "42", text: "/status" });
    expect(answers).toHaveLength(1);
    expect(answers[0]?.text).toContain("pickle");
    expect(answers[0]?.text).toContain("1 waiting");
    expect(await storage.queue.list()).toHaveLength(2);
  });

  it("/usage sums this chat's session, and today's and this month's cost everywhere", async () => {
    const send = await connect();
    await send(telegram, { userId: OWNER, chatId: "42", text: "/usage" });
    expect(answers.at(-1)?.text).toBe(
      "This conversation: no model calls yet\nToday: $0.0000; this month: $0.0000 (every chat and cron)",
    );
    const million = { input: 1_000_000, output: 0, cacheRead: 0, cacheWrite: 0 };
    clock.advance(12 * 3_600_000); // 2025-01-01 12:00 UTC
    const other = await storage.history.createSession({ key: "telegram:43", agentId: "pickle" });
    const haiku = { model: "claude-haiku-4-5" };
    await storage.history.append(other.id, assistantReply(), { usage: million, call: haiku });
    clock.advance(22 * 3_600_000); // 2025-01-02 10:00 UTC
    const chat = await storage.history.createSession({ key: "telegram:42", agentId: "pickle" });
    const sonnet = { model: "claude-sonnet-4-5-20250929" };
    await storage.history.append(chat.id, assistantReply(), { usage: million, call: sonnet });
    const output = { ...million, input: 0, output: 1_000_000 };
    const batch = { ...haiku, batch: true };
    await storage.history.append(chat.id, assistantReply(), { usage: output, call: batch });
    await send(telegram, { userId: OWNER, chatId: "42", text: "/usage" });
    expect(answers.at(-1)?.text).toBe(
      "This conversation: 2 model calls, $5.50 (1000000 in, 1000000 out, 0 read from the cache, 0 written to it)\n" +
        "Today: $5.50; this month: $6.50 (every chat and cron)",
    );
    expect(await storage.queue.list()).toEqual([]);
  });

  it("/stop asks to stop the chat's session, and answers either way", async () => {
    const send = await connect();
    await send(telegram, { userId: OWNER, chatId: "42", text: "/stop" });
    running.add("telegram:42");
    await send(telegram, { userId: OWNER, chatId: "42", text: "/stop@picklebot" });
    expect(stops).toEqual(["telegram:42", "telegram:42"]);
    expect(answers).toHaveLength(2);
    expect(answers[0]?.text).not.toBe(answers[1]?.text);
    expect(await storage.queue.list()).toEqual([]);
  });

  it.each(["/help", "/start", "/HELP"])(
    "%s answers with help and enqueues nothing",
    async (text) => {
      const send = await connect();
      await send(telegram, { userId: OWNER, text });
      expect(answers).toHaveLength(1);
      expect(answers[0]?.text).toContain("/stop");
      expect(await storage.queue.list()).toEqual([]);
    },
  );

  it("treats an unknown command as a message for the agent", async () => {
    const send = await connect();
    await send(telegram, { userId: OWNER, text: "/weather Berlin" });
    expect(await storage.queue.list()).toMatchObject([{ message: "/weather Berlin" }]);
  });

  it("never runs commands for strangers", async () => {
    const send = await connect();
    await send(telegram, { userId: STRANGER, text: "/stop" });
    expect(stops).toEqual([]);
  });
});

describe("ChatInbox: /agent and bindings", () => {
  it("/agent lists every agent and marks the chat's current one; no job", async () => {
    const send = await connect();
    await send(telegram, { userId: OWNER, chatId: "42", text: "/agent" });
    expect(answers[0]?.text).toBe(
      [
        "Agents (this chat: pickle):",
        "• coder: Coder, Writes code",
        "▸ pickle: Pickle, General assistant",
        "Switch with /agent NAME (starts a new conversation).",
      ].join("\n"),
    );
    expect(await storage.queue.list()).toEqual([]);
  });

  it("/agent NAME starts a new session with that agent; the chat's next jobs and /new keep it", async () => {
    const send = await connect();
    const before = await storage.history.createSession({ key: "telegram:42", agentId: "pickle" });
    await send(telegram, { userId: OWNER, chatId: "42", text: "/agent@picklebot Coder" });
    const current = await storage.history.currentSession("telegram:42");
    expect(current).toMatchObject({ agentId: "coder" });
    expect(current?.id).not.toBe(before.id);
    expect(answers[0]?.text).toBe(
      `Switched to coder (Coder), in a new conversation (${current?.id}).`,
    );

    await send(telegram, { userId: OWNER, chatId: "42", text: "hello coder" });
    await send(telegram, { userId: OWNER, chatId: "43", text: "hello other chat" });
    const jobs = (await storage.queue.list()).sort((a, b) =>
      a.sessionKey.localeCompare(b.sessionKey),
    );
    expect(jobs).toMatchObject([
      { agentId: "coder", sessionKey: "telegram:42", message: "hello coder" },
      { agentId: "pickle", sessionKey: "telegram:43" },
    ]);
    await send(telegram, { userId: OWNER, chatId: "42", text: "/new" });
    expect(await storage.history.currentSession("telegram:42")).toMatchObject({ agentId: "coder" });
    await send(telegram, { userId: OWNER, chatId: "42", text: "/status" });
    expect(answers.at(-1)?.text).toMatch(/^Agent: coder\n/);
    await send(telegram, { userId: OWNER, chatId: "42", text: "/agent" });
    expect(answers.at(-1)?.text).toContain("▸ coder: Coder");
  });

  it("/agent with an unknown name switches nothing and lists the valid ids", async () => {
    const send = await connect();
    await send(discord, { userId: "80351110224678912", chatId: "555", text: "/agent nobody" });
    expect(answers[0]?.text).toBe(
      'There is no agent "nobody". Agents: coder, pickle. Send /agent to see what each does.',
    );
    expect(await storage.history.currentSession("discord:555")).toBeNull();
  });

  it("a bound chat uses its agent from the first message and refuses /agent NAME", async () => {
    bindings.push({ chat: { platform: "telegram", chatId: "42" }, agent: "coder" });
    const send = await connect();
    await send(telegram, { userId: OWNER, chatId: "42", text: "first" });
    expect(await storage.queue.list()).toMatchObject([{ agentId: "coder" }]);

    await send(telegram, { userId: OWNER, chatId: "42", text: "/agent pickle" });
    expect(answers[0]?.text).toBe(
      "This chat is pinned to coder by bindings[0] in picklebot.yaml; edit that entry to change its agent.",
    );
    expect(await storage.history.currentSession("telegram:42")).toBeNull();
    await send(telegram, { userId: OWNER, chatId: "42", text: "/agent" });
    expect(answers[1]?.text).toContain("pinned to coder by bindings[0]");
    await send(telegram, { userId: OWNER, chatId: "42", text: "/status" });
    expect(answers[2]?.text).toMatch(/^Agent: coder \(pinned by bindings\[0\]\)\n/);
  });

  it("keeps a chat's switched agent across a restart (the storage reopened)", async () => {
    const send = await connect();
    await send(telegram, { userId: OWNER, chatId: "42", text: "/agent coder" });
    await storage.close();
    storage = await openStorage(testConfig(ws.dir), clock);
    const again = await connect(inbox());
    await again(telegram, { userId: OWNER, chatId: "42", text: "after the restart" });
    expect(await storage.queue.list()).toMatchObject([
      { agentId: "coder", message: "after the restart" },
    ]);
  });

  it("/model shows the chat's model and fallbacks, and the named models; no job", async () => {
    const send = await connect();
    await send(telegram, { userId: OWNER, chatId: "42", text: "/model" });
    expect(answers[0]?.text).toBe(
      "Model (pickle's): default (claude-sonnet-4-6); fallbacks: backup (backup-model)\n" +
        "Named models: default, backup\n" +
        "Switch with /model NAME (for this conversation; /new goes back to the agent's).",
    );
    expect(await storage.queue.list()).toEqual([]);
  });

  it("/model NAME switches the owner's conversation, kept across a restart; /new goes back", async () => {
    const send = await connect();
    await send(telegram, { userId: OWNER, chatId: "42", text: "/model Backup" });
    expect(answers[0]?.text).toBe(
      "This conversation now uses backup (backup-model); no fallbacks. /new goes back to the agent's model.",
    );
    await storage.close();
    storage = await openStorage(testConfig(ws.dir), clock);
    const again = await connect(inbox());
    await again(telegram, { userId: OWNER, chatId: "42", text: "/status" });
    expect(answers[1]?.text).toContain("\nModel: backup (backup-model); no fallbacks\n");
    expect((await storage.history.currentSession("telegram:42"))?.model).toBe("backup");
    await again(telegram, { userId: OWNER, chatId: "42", text: "/new" });
    expect((await storage.history.currentSession("telegram:42"))?.model).toBeNull();
  });

  it("/model NAME names a model it does not know, and refuses a user who is not the owner", async () => {
    const send = await connect();
    await send(telegram, { userId: OWNER, chatId: "42", text: "/model bakup" });
    expect(answers[0]?.text).toBe(
      'There is no named model "bakup" (did you mean "backup"?). Named models: default, backup.',
    );
    await send(telegram, { userId: STRANGER, text: "let me in" });
    const [request] = await storage.pairing.pending(clock.now());
    await storage.pairing.approve(request?.code as string, clock.now());
    await send(telegram, { userId: STRANGER, text: "/model backup" });
    expect(answers.at(-1)?.text).toBe("Only the owner can switch this chat's model.");
    expect((await storage.history.listSessions()).map((session) => session.model)).toEqual([]);
  });

  it("falls back to default_agent when the chat's chosen agent no longer exists", async () => {
    await storage.history.createSession({ key: "telegram:42", agentId: "retired" });
    const send = await connect();
    await send(telegram, { userId: OWNER, chatId: "42", text: "hi" });
    expect(await storage.queue.list()).toMatchObject([{ agentId: "pickle" }]);
  });
});

describe("ChatInbox: /memory and /forget", () => {
  async function remember(person: string, entry: string, agentId = "pickle") {
    await storage.memory.update({ agentId, scope: person }, { by: "agent", at: 1 }, () => ({
      text: entry,
      change: { action: "add", entry, previous: null },
    }));
  }

  it("/memory shows the sender their own memory in a private chat, never another's", async () => {
    await remember(`telegram:${OWNER}`, "Their cat is called Miso.");
    await remember("telegram:999", "Bob's secret plan.");
    const send = await connect();
    await send(telegram, { userId: OWNER, chatId: OWNER, text: "/memory" });
    expect(answers).toEqual([
      {
        chatId: OWNER,
        text: "What pickle remembers about you (25 of 1400 characters (2%)):\nTheir cat is called Miso.\n\nAsk me to change or remove something, or send /forget to clear it all.",
      },
    ]);
    expect(await storage.queue.list()).toEqual([]);
  });

  it("/memory in a group shows nothing and points to a private chat", async () => {
    await remember(`telegram:${OWNER}`, "Their cat is called Miso.");
    const send = await connect();
    await send(telegram, { userId: OWNER, chatId: "-100", direct: false, text: "/memory" });
    expect(answers).toEqual([
      {
        chatId: "-100",
        text: "What I remember about you is shown only in a private chat with me: send /memory there.",
      },
    ]);
  });

  it("/memory says when there is nothing, and when the agent keeps no memory", async () => {
    const send = await connect();
    await send(telegram, { userId: OWNER, chatId: OWNER, text: "/memory" });
    await send(telegram, { userId: OWNER, chatId: OWNER, text: "/agent coder" });
    await send(telegram, { userId: OWNER, chatId: OWNER, text: "/memory" });
    expect(answers[0]?.text).toBe("pickle remembers nothing about you yet.");
    expect(answers[2]?.text).toBe("coder keeps no memory (its AGENT.md says memory: false).");
  });

  it("/forget asks first; /forget confirm clears the sender's memory, records it, and retakes the snapshot", async () => {
    await remember(`telegram:${OWNER}`, "Their cat is called Miso.");
    await remember("telegram:999", "Bob likes tea.");
    const session = await storage.history.createSession({
      key: `telegram:${OWNER}`,
      agentId: "pickle",
    });
    await storage.recall.snapshot({
      sessionId: session.id,
      sessionKey: session.key,
      agentId: "pickle",
      person: `telegram:${OWNER}`,
      snapshot: "Their cat is called Miso.",
      takenAt: 1,
    });
    const send = await connect();
    await send(telegram, { userId: OWNER, chatId: OWNER, text: "/forget" });
    expect(answers[0]?.text).toBe(
      "This clears everything pickle remembers about you, for good. To do it, send /forget confirm",
    );
    expect((await storage.memory.read("pickle", `telegram:${OWNER}`)).text).not.toBe("");

    await send(telegram, { userId: OWNER, chatId: OWNER, text: "/forget confirm" });
    expect(answers[1]?.text).toContain("Done: pickle remembers nothing about you now.");
    expect((await storage.memory.read("pickle", `telegram:${OWNER}`)).text).toBe("");
    expect((await storage.memory.read("pickle", "telegram:999")).text).toBe("Bob likes tea.");
    const [change] = await storage.memory.changes({ scope: `telegram:${OWNER}` });
    expect(change).toMatchObject({
      action: "clear",
      by: "chat",
      sessionId: session.id,
      previous: "Their cat is called Miso.",
    });
    expect((await storage.recall.session(session.id))?.snapshot).toBeNull();

    await send(telegram, { userId: OWNER, chatId: OWNER, text: "/forget confirm" });
    expect(answers[2]?.text).toBe("pickle remembers nothing about you; nothing to clear.");
    expect(await storage.queue.list()).toEqual([]);
  });

  it("/forget in a group clears only the sender's own memory and quotes none of it", async () => {
    await remember(`telegram:${OWNER}`, "Their cat is called Miso.");
    const send = await connect();
    await send(telegram, { userId: OWNER, chatId: "-100", direct: false, text: "/forget confirm" });
    expect(answers[0]?.text).not.toContain("Miso");
    expect((await storage.memory.read("pickle", `telegram:${OWNER}`)).text).toBe("");
  });
});
