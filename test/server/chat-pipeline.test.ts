/**
 * The chat path in one process: a person writes on the in-memory chat platform, the
 * MessageBusWorker's inbox enqueues, the AgentWorker runs the turn against the fake
 * Anthropic API, and the chat senders stream and deliver the reply (test/helpers/core.ts).
 */
import { afterEach, describe, expect, it } from "vitest";
import { lastUserText, requestAt } from "../fakes/anthropic.js";
import { rateLimited } from "../fakes/chat-platform.js";
import {
  CHAT_ID,
  CHAT_KEY,
  type Core,
  type CoreOptions,
  OWNER_ID,
  openCore,
} from "../helpers/core.js";
import { waitFor } from "../helpers/wait.js";

let core: Core;

afterEach(async () => {
  await core?.close();
});

const CODER_MD = `---
name: Coder
description: Writes and reviews code
---
You are Coder, a careful programmer.
`;

async function startChat(options: CoreOptions = {}): Promise<Core> {
  core = await openCore(options);
  core.start({ bus: true });
  await waitFor(() => core.platform.state === "connected", "the bus to connect");
  return core;
}

function say(text: string, userId = OWNER_ID) {
  return core.platform.push({ chatId: CHAT_ID, userId, text });
}

/** Waits until the chat shows exactly `expected`. */
async function chatShows(expected: string[]): Promise<void> {
  await waitFor(
    () => JSON.stringify(core.platform.texts(CHAT_ID)) === JSON.stringify(expected),
    () =>
      `the chat to show ${JSON.stringify(expected)}; it shows ${JSON.stringify(core.platform.texts(CHAT_ID))}`,
  );
}

describe("chat path in-process", () => {
  it("answers a message of an allowed user in the chat, streamed and delivered once", async () => {
    await startChat();
    core.model.script({ text: "Hello, Alice.", chunks: 3 });
    say("hi");
    await chatShows(["Hello, Alice."]);
    expect(lastUserText(requestAt(core.model, 0))).toBe("hi");
    expect(await core.storage.queue.counts()).toMatchObject({ done: 1, queued: 0, running: 0 });
  });

  it("a send that hangs holds up nothing: the job is done, and the chat's next message runs", async () => {
    await startChat();
    const release = core.platform.hangSendsTo(CHAT_ID);
    say("first");
    await waitFor(async () => (await core.storage.queue.counts()).done === 1, "the first job done");
    say("/status");
    say("second");
    await waitFor(
      async () => (await core.storage.queue.counts()).done === 2,
      "the second job done",
    );
    expect(core.platform.texts(CHAT_ID)).toEqual([]);
    release();
    await waitFor(
      () => core.platform.texts(CHAT_ID).length === 3,
      "the replies, once the chat answers",
    );
    expect(core.platform.texts(CHAT_ID)).toContain("ok");
  });

  it("refuses a stranger with a pairing code and never calls the model", async () => {
    await startChat();
    say("let me in", "666");
    await waitFor(() => core.platform.texts(CHAT_ID).length === 1, "the refusal");
    const [request] = await core.storage.pairing.pending(core.clock.now());
    expect(core.platform.texts(CHAT_ID)[0]).toContain(request?.code);
    expect(core.model.requests).toHaveLength(0);
    expect(await core.storage.queue.list()).toEqual([]);
  });

  it("starts a fresh session on /new: the next turn sends the model only the new message", async () => {
    await startChat();
    core.model.script({ text: "Noted." }, { text: "I do not know." });
    say("remember pickles");
    await chatShows(["Noted."]);
    say("/new");
    await waitFor(() => core.platform.texts(CHAT_ID).length === 2, "the /new answer");
    say("what did I say?");
    await waitFor(() => core.platform.texts(CHAT_ID)[2] === "I do not know.", "the answer");
    expect(core.model.requests[1]?.body.messages).toHaveLength(1);
    const sessions = await core.storage.history.listSessions({ key: `telegram:${CHAT_ID}` });
    expect(sessions).toHaveLength(2);
  });

  it("answers /status with the agent, the conversation size and the queue", async () => {
    await startChat();
    say("hi");
    await chatShows(["ok"]);
    say("/status");
    const status = await waitFor(() => core.platform.texts(CHAT_ID)[1], "the status");
    expect(status).toMatch(
      /^Agent: pickle\nModel: default \([\w.-]+\); no fallbacks\nConversation: 2 messages, context ~0k of 200k tokens \(0%\); \d+ tokens used in all\nLast answer: [\w.-]+\nQueue: nothing running, 0 waiting$/,
    );
  });

  it("/compact summarises the conversation in line with its messages; the next request starts from the summary", async () => {
    await startChat();
    say("hi");
    await chatShows(["ok"]);
    core.model.script({ text: "Nothing to save." }, { text: "Notes: the user said hi." });
    say("/compact");
    await waitFor(() => core.platform.texts(CHAT_ID).length === 2, "the compaction's answer");
    expect(core.platform.texts(CHAT_ID)[1]).toMatch(
      /^Compacted: 2 messages summarised, context ~0k → ~0k tokens\.$/,
    );
    say("and now?");
    await waitFor(() => core.platform.texts(CHAT_ID).length === 3, "the next answer");
    const sent = requestAt(core.model, core.model.requests.length - 1).body.messages;
    expect(sent).toHaveLength(1);
    expect(lastUserText(requestAt(core.model, core.model.requests.length - 1))).toContain(
      "Notes: the user said hi.",
    );
  });

  it("stops a reply in progress on /stop: the job ends stopped, is not retried, and the chat says so", async () => {
    await startChat();
    core.model.script({ hang: true });
    say("tell me a long story");
    await waitFor(() => core.model.requests.length === 1, "the model call");
    say("/stop");
    await waitFor(async () => (await core.storage.queue.counts()).stopped === 1, "the stopped job");
    expect((await core.storage.queue.counts()).failed).toBe(0);
    await waitFor(() => core.platform.texts(CHAT_ID).length === 2, "the stop answer and notice");
    expect(core.model.requests).toHaveLength(1);
  });

  it("waits out a 429 from the platform, then shows the reply once", async () => {
    await startChat();
    core.platform.failNext("send", rateLimited(0.05));
    say("hello");
    await waitFor(() => core.platform.calls.some((call) => call.error !== null), "the 429");
    // Whether the stream or the delivery met the 429, the reply goes out once its wait passed.
    await waitFor(async () => (await core.storage.queue.counts()).done === 1, "the job done");
    core.clock.advance(60_000);
    await chatShows(["ok"]);
    expect(core.platform.succeeded("send")).toHaveLength(1);
  });

  it("/agent NAME switches the chat: the next message runs that agent in a new session", async () => {
    await startChat({ files: { "agents/coder/AGENT.md": CODER_MD } });
    say("hi");
    await chatShows(["ok"]);
    say("/agent");
    await waitFor(() => core.platform.texts(CHAT_ID).length === 2, "the agent list");
    expect(core.platform.texts(CHAT_ID)[1]).toContain("• coder: Coder, Writes and reviews code");
    expect(core.platform.texts(CHAT_ID)[1]).toContain("▸ pickle: Pickle, General assistant");
    say("/agent coder");
    await waitFor(() => core.platform.texts(CHAT_ID).length === 3, "the switch answer");
    expect(core.platform.texts(CHAT_ID)[2]).toMatch(/^Switched to coder \(Coder\)/);
    say("write me a function");
    await waitFor(() => core.platform.texts(CHAT_ID).length === 4, "the coder's answer");

    const request = requestAt(core.model, core.model.requests.length - 1);
    expect(JSON.stringify(request.body.system)).toContain("You are Coder, a careful programmer.");
    expect(request.body.messages).toHaveLength(1);
    const jobs = await core.storage.queue.list({ state: "done" });
    expect(jobs.find((job) => job.message !== "hi")).toMatchObject({ agentId: "coder" });
    const sessions = await core.storage.history.listSessions({ key: CHAT_KEY });
    expect(sessions.map((session) => session.agentId)).toEqual(["coder", "pickle"]);
    expect(sessions[0]?.messageCount).toBe(2);
  });

  it("a chat bound in picklebot.yaml runs its agent from the first message and refuses /agent", async () => {
    await startChat({
      files: { "agents/coder/AGENT.md": CODER_MD },
      bindings: [{ chat: CHAT_KEY, agent: "coder" }],
    });
    say("hello");
    await chatShows(["ok"]);
    expect(JSON.stringify(requestAt(core.model, 0).body.system)).toContain("You are Coder");
    say("/agent pickle");
    await waitFor(() => core.platform.texts(CHAT_ID).length === 2, "the refusal");
    expect(core.platform.texts(CHAT_ID)[1]).toContain("pinned to coder by bindings[0]");
    expect(await core.storage.history.currentSession(CHAT_KEY)).toMatchObject({ agentId: "coder" });
  });
});
