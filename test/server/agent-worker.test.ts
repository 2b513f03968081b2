/**
 * The AgentWorker and the agent loop, in-process: memory (or SQLite) queue, SQLite history
 * on a temp file, the real Anthropic SDK against the fake API, and replies through the chat
 * frontend to an in-memory chat platform (test/helpers/core.ts).
 */
import BetterSqlite from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { type ChatMessage, type Job, RESUME_MARKER } from "../../src/ports/index.js";
import { AgentWorker, STILL_TRYING } from "../../src/server/agent-worker.js";
import { DATABASE_FILE } from "../../src/storage/index.js";
import {
  type FakeReply,
  type FakeReplySource,
  isMemorySaveCall,
  isSummaryCall,
  lastUserText,
  messageText,
  type RecordedRequest,
  requestAt,
} from "../fakes/anthropic.js";
import { CHAT_ID, CHAT_KEY, type Core, type CoreOptions, openCore } from "../helpers/core.js";
import { waitFor } from "../helpers/wait.js";

let core: Core;

async function startCore(options: CoreOptions = {}): Promise<Core> {
  core = await openCore(options);
  return core;
}

afterEach(async () => {
  await core?.close();
});

function user(text: string): ChatMessage {
  return { role: "user", content: [{ type: "text", text }] };
}

function assistant(text: string): ChatMessage {
  return { role: "assistant", content: [{ type: "text", text }] };
}

/** A session of the chat holding `messages`, as a crashed attempt left it. */
async function sessionWith(...messages: ChatMessage[]): Promise<string> {
  const session = await core.storage.history.createSession({ key: CHAT_KEY, agentId: "pickle" });
  for (const message of messages) await core.storage.history.append(session.id, message);
  return session.id;
}

async function stored(sessionId: string): Promise<ChatMessage[]> {
  return core.storage.history.loadContext(sessionId, 1000);
}

const isDone = (job: Job) => job.state === "done";
const isFailed = (job: Job) => job.state === "failed";
const isStopped = (job: Job) => job.state === "stopped";
/** Requeued after a failure, with `attempts` counted (not merely still queued, unclaimed). */
const retried = (attempts: number) => (job: Job) =>
  job.state === "queued" && job.attempts === attempts && job.errors.length > 0;

describe("AgentWorker: a turn", () => {
  it("checkpoints the message, runs a tool call, answers, and delivers the reply", async () => {
    await startCore();
    core.model.script(
      { toolUses: [{ name: "read", input: { path: "notes.md" }, id: "toolu_1" }] },
      { text: "Pickles are cucumbers." },
    );
    core.start();
    const job = await core.enqueue("What do my notes say?");
    const done = await core.waitForJob(job.id, isDone);

    expect(done).toMatchObject({ message: RESUME_MARKER, attempts: 1 });
    expect(core.model.requests).toHaveLength(2);
    expect(lastUserText(requestAt(core.model, 1))).toContain("cucumbers in brine");
    const messages = await stored(done.sessionId as string);
    expect(messages.map((message) => message.role)).toEqual([
      "user",
      "assistant",
      "user",
      "assistant",
    ]);
    expect(messages[2]?.content[0]).toMatchObject({ type: "tool_result", tool_use_id: "toolu_1" });
    await waitFor(() => core.platform.texts(CHAT_ID).at(-1) === "Pickles are cucumbers.");
    expect(core.platform.texts(CHAT_ID)).toEqual(["Pickles are cucumbers."]);
  });

  it("continues the chat's current session on the next message", async () => {
    await startCore();
    core.start();
    const first = await core.waitForJob((await core.enqueue("one")).id, isDone);
    const second = await core.waitForJob((await core.enqueue("two")).id, isDone);
    expect(second.sessionId).toBe(first.sessionId);
    expect(await stored(second.sessionId as string)).toHaveLength(4);
    const sent = core.model.requests[1]?.body.messages ?? [];
    expect(sent.map((message) => messageText(message))).toEqual(["one", "ok", "two"]);
  });

  it("runs a message queued before /agent switched the chat in the session it was sent to; the switch stays current", async () => {
    await startCore({
      files: { "agents/coder/AGENT.md": "---\nname: Coder\ndescription: Code\n---\nYou code.\n" },
    });
    const before = await core.storage.history.createSession({ key: CHAT_KEY, agentId: "pickle" });
    const queued = await core.enqueue("sent before the switch", { agentId: "pickle" });
    const switched = await core.storage.history.createSession({ key: CHAT_KEY, agentId: "coder" });
    core.start();
    const done = await core.waitForJob(queued.id, isDone);
    expect(done.sessionId).toBe(before.id);
    expect(await core.storage.history.currentSession(CHAT_KEY)).toMatchObject({ id: switched.id });
    const next = await core.waitForJob((await core.enqueue("hi", { agentId: "coder" })).id, isDone);
    expect(next.sessionId).toBe(switched.id);
  });
});

describe("AgentWorker: resuming a checkpointed job", () => {
  it("delivers a complete reply found in history again, with no model call", async () => {
    await startCore();
    const sessionId = await sessionWith(user("hi"), assistant("Hello there."));
    const job = await core.enqueueInterrupted(sessionId);
    core.start();
    await core.waitForJob(job.id, isDone);
    expect(core.model.requests).toHaveLength(0);
    await waitFor(() => core.platform.texts(CHAT_ID).length === 1);
    expect(core.platform.texts(CHAT_ID)).toEqual(["Hello there."]);
    expect(await stored(sessionId)).toHaveLength(2);
  });

  it("runs tool calls left without results, then calls the model", async () => {
    await startCore();
    const sessionId = await sessionWith(user("read my notes"), {
      role: "assistant",
      content: [{ type: "tool_use", id: "toolu_9", name: "read", input: { path: "notes.md" } }],
    });
    core.model.script({ text: "They are about pickles." });
    const job = await core.enqueueInterrupted(sessionId);
    core.start();
    await core.waitForJob(job.id, isDone);
    expect(core.model.requests).toHaveLength(1);
    expect(lastUserText(requestAt(core.model, 0))).toContain("cucumbers in brine");
    const messages = await stored(sessionId);
    expect(messages.map((message) => message.role)).toEqual([
      "user",
      "assistant",
      "user",
      "assistant",
    ]);
    expect(messages[2]?.content[0]).toMatchObject({ type: "tool_result", tool_use_id: "toolu_9" });
  });

  it("calls the model on the history as it stands, without appending the message again", async () => {
    await startCore();
    const sessionId = await sessionWith(user("what is brine?"));
    core.model.script({ text: "Salty water." });
    const job = await core.enqueueInterrupted(sessionId);
    core.start();
    await core.waitForJob(job.id, isDone);
    const sent = core.model.requests[0]?.body.messages ?? [];
    expect(sent.map((message) => messageText(message))).toEqual(["what is brine?"]);
    expect(await stored(sessionId)).toEqual([user("what is brine?"), assistant("Salty water.")]);
  });
});

describe('AgentWorker: a message that is exactly "." (the resume marker\'s text)', () => {
  it("is answered as the first message of a chat", async () => {
    await startCore();
    core.model.script({ text: "A dot? How can I help?" });
    core.start();
    const done = await core.waitForJob((await core.enqueue(".")).id, isDone);
    expect(done.attempts).toBe(1);
    expect(
      messageText(requestAt(core.model, 0).body.messages[0] ?? { role: "user", content: "" }),
    ).toBe(".");
    await waitFor(() => core.platform.texts(CHAT_ID).at(-1) === "A dot? How can I help?");
  });

  it("is stored and answered later in a chat, not taken for a resume of the last turn", async () => {
    await startCore();
    core.model.script({ text: "First answer." }, { text: "Second answer." });
    core.start();
    const first = await core.waitForJob((await core.enqueue("hello")).id, isDone);
    await core.waitForJob((await core.enqueue(".")).id, isDone);
    expect(core.model.requests).toHaveLength(2);
    expect(await stored(first.sessionId as string)).toEqual([
      user("hello"),
      assistant("First answer."),
      user("."),
      assistant("Second answer."),
    ]);
    await waitFor(() => core.platform.texts(CHAT_ID).at(-1) === "Second answer.");
  });
});

describe("AgentWorker: failures", () => {
  const transient: Array<[string, FakeReply]> = [
    ["a 429", { error: { status: 429, message: "rate limited" } }],
    ["a 500", { error: { status: 500, message: "internal error" } }],
    ["a 529", { error: { status: 529, message: "overloaded" } }],
    ["a stream cut short (network)", { cutAfterChunks: 1, text: "a partial answer here" }],
  ];

  it.each(transient)(
    "requeues the job with backoff after %s, giving the attempt back, then runs it again",
    async (_, reply) => {
      await startCore();
      core.model.script(reply, { text: "Recovered." });
      core.start();
      const job = await core.enqueue("hello");
      const waiting = await core.waitForJob(job.id, retried(0), "the requeue");
      expect(waiting.runAt).toBeGreaterThan(core.clock.now());
      expect(waiting.errors).toHaveLength(1);
      expect(waiting.message).toBe(RESUME_MARKER);

      core.clock.advance(waiting.runAt - core.clock.now());
      const done = await core.waitForJob(job.id, isDone);
      expect(done.attempts).toBe(1);
      const messages = await stored(done.sessionId as string);
      expect(messages.filter((message) => message.role === "user")).toHaveLength(1);
      // The retry's reply replaces whatever the failed attempt streamed: one message.
      await waitFor(() => core.platform.texts(CHAT_ID).at(-1) === "Recovered.");
      expect(core.platform.texts(CHAT_ID)).toEqual(["Recovered."]);
    },
  );

  it("waits at least as long as a 429's retry-after", async () => {
    await startCore();
    core.model.script({ error: { status: 429, retryAfterS: 30 } });
    core.start();
    const job = await core.enqueue("hello");
    const waiting = await core.waitForJob(job.id, retried(0));
    expect(waiting.runAt).toBeGreaterThanOrEqual(core.clock.now() + 30_000);
  });

  it("fails the job at once on a 400 from the model, and tells the user", async () => {
    await startCore();
    core.model.script({ error: { status: 400, message: "messages: invalid" } });
    core.start();
    const job = await core.enqueue("hello");
    const failed = await core.waitForJob(job.id, isFailed);
    expect(failed.attempts).toBe(1);
    expect(failed.errors).toHaveLength(1);
    await waitFor(() => core.platform.texts(CHAT_ID).length === 1, "the failure notice");
  });

  it("fails a job of an unknown agent at once, with no model call, and tells the user", async () => {
    await startCore();
    core.start();
    const job = await core.enqueue("hello", { agentId: "nobody" });
    const failed = await core.waitForJob(job.id, isFailed);
    expect(failed.attempts).toBe(1);
    expect(failed.lastError).toContain("nobody");
    expect(core.model.requests).toHaveLength(0);
    await waitFor(() => core.platform.texts(CHAT_ID).length === 1, "the failure notice");
  });

  it("fails a chat and a cron job of a broken default AGENT.md at once, with no model call", async () => {
    const broken = "---\nname: Narrow\ntools: [read]\n---\nOnly read.\n";
    await startCore({ files: { "agents/pickle/AGENT.md": broken } });
    core.start();
    const chat = await core.enqueue("hello");
    const cron = await core.enqueue("daily summary", {
      mode: "job",
      sessionKey: "cron:daily:1",
      replyTo: { kind: "silent" },
    });
    for (const job of [chat, cron]) {
      const failed = await core.waitForJob(job.id, isFailed);
      expect(failed.attempts).toBe(1);
      expect(failed.lastError).toMatch(/agent "pickle" is broken .*description: missing/);
    }
    expect(core.model.requests).toHaveLength(0);
    await waitFor(() => core.platform.texts(CHAT_ID).length === 1, "the failure notice");
    // The person is told what happened and who can fix it, not where the server's files are.
    const notice = core.platform.texts(CHAT_ID)[0] ?? "";
    expect(notice).toContain('agent "pickle" is broken');
    expect(notice).toContain("picklebot doctor");
    expect(notice).not.toMatch(/\/\S*AGENT\.md|description: missing/);
  });

  it("rides out an outage longer than max_attempts would: one notice, then the answer", async () => {
    await startCore();
    const overloaded = { error: { status: 529, message: "Overloaded" } };
    core.model.script(...Array.from({ length: 8 }, () => overloaded), { text: "Back again." });
    core.start();
    const job = await core.enqueue("hello", { maxAttempts: 2 });
    for (let failures = 1; failures <= 8; failures++) {
      const waiting = await core.waitForJob(
        job.id,
        (j) => j.state === "queued" && j.errors.length === failures,
      );
      expect(waiting.attempts).toBe(0);
      core.clock.advance(waiting.runAt - core.clock.now());
    }
    const done = await core.waitForJob(job.id, isDone);
    expect(done.attempts).toBe(1);
    await waitFor(() => core.platform.texts(CHAT_ID).at(-1) === "Back again.");
    // The notice was shown once, in the message the answer then replaced.
    expect(core.platform.texts(CHAT_ID)).toEqual(["Back again."]);
    const notices = core.platform.calls.filter((call) => call.text === STILL_TRYING);
    expect(notices).toHaveLength(1);
  });

  it("counts outage failures once the outage outlasts workers.outage_budget_s", async () => {
    await startCore({ outageBudgetS: 0 });
    const overloaded = { error: { status: 529, message: "Overloaded" } };
    core.model.script(overloaded, overloaded);
    core.start();
    const job = await core.enqueue("hello", { maxAttempts: 2 });
    const waiting = await core.waitForJob(job.id, retried(1));
    core.clock.advance(waiting.runAt - core.clock.now());
    const failed = await core.waitForJob(job.id, isFailed);
    expect(failed.attempts).toBe(2);
  });

  it("fails the job and tells the user once max_attempts are spent", async () => {
    await startCore({ outageBudgetS: 0 });
    core.model.script({ error: { status: 500 } }, { error: { status: 503 } });
    core.start();
    const job = await core.enqueue("hello", { maxAttempts: 2 });
    const waiting = await core.waitForJob(job.id, retried(1));
    expect(core.platform.texts(CHAT_ID)).toEqual([]);
    core.clock.advance(waiting.runAt - core.clock.now());
    const failed = await core.waitForJob(job.id, isFailed);
    expect(failed.attempts).toBe(2);
    expect(failed.errors.map((error) => error.attempt)).toEqual([1, 2]);
    await waitFor(() => core.platform.texts(CHAT_ID).length === 1, "the failure notice");
  });

  it("requeues a job that runs past job_timeout_s", async () => {
    await startCore({ jobTimeoutS: 0.2 });
    core.model.script({ hang: true }, { text: "In time." });
    core.start();
    const job = await core.enqueue("hello");
    const waiting = await core.waitForJob(job.id, retried(1), "the timeout's requeue");
    expect(waiting.errors).toHaveLength(1);
    core.clock.advance(waiting.runAt - core.clock.now());
    await core.waitForJob(job.id, isDone);
    await waitFor(() => core.platform.texts(CHAT_ID).at(-1) === "In time.");
  });
});

describe("AgentWorker: /stop", () => {
  it("cancels the running job of a session: stopped, not retried, and the user told", async () => {
    await startCore();
    core.model.script({ hang: true });
    core.start();
    const job = await core.enqueue("write me a long story");
    await waitFor(() => core.model.requests.length === 1, "the model call");
    expect(core.worker.stopSession("telegram:other")).toBe(false);
    expect(core.worker.stopSession(CHAT_KEY)).toBe(true);
    const stopped = await core.waitForJob(job.id, isStopped);
    expect(stopped.attempts).toBe(1);
    await waitFor(() => core.platform.texts(CHAT_ID).length === 1, "the stop notice");
    expect(core.worker.running).toEqual([]);
    expect(core.worker.stopSession(CHAT_KEY)).toBe(false);
  });
});

describe("AgentWorker: a turn that ends during a tool call is closed in history", () => {
  const BASH_AGENT = {
    "agents/pickle/AGENT.md":
      "---\nname: Pickle\ndescription: Runs commands\ntools: [bash]\n---\nYou run commands.\n",
  };
  const longCommand = {
    toolUses: [{ name: "bash", input: { command: "sleep 30" }, id: "toolu_1" }],
  };

  /** Waits until the job's turn is inside its tool call (the call is stored, the tool runs). */
  async function waitForToolCall(jobId: string): Promise<string> {
    let sessionId = "";
    await waitFor(async () => {
      sessionId = (await core.storage.queue.get(jobId))?.sessionId ?? "";
      return sessionId !== "" && (await stored(sessionId)).at(-1)?.role === "assistant";
    }, "the tool call");
    return sessionId;
  }

  function lastRequestBlocks(): Array<Record<string, unknown>> {
    const messages = requestAt(core.model, core.model.requests.length - 1).body.messages;
    return messages.at(-1)?.content as Array<Record<string, unknown>>;
  }

  it("/stop: the call gets a 'stopped by the user' result, the turn ends with the stop, and the next message is answered", async () => {
    await startCore({ files: BASH_AGENT });
    core.model.script(longCommand, { text: "Stopped it. Hello!" });
    core.start();
    const job = await core.enqueue("run the long thing");
    const sessionId = await waitForToolCall(job.id);
    expect(core.worker.stopSession(CHAT_KEY)).toBe(true);
    await core.waitForJob(job.id, isStopped);
    expect((await stored(sessionId)).slice(-2)).toEqual([
      {
        role: "user",
        content: [
          {
            type: "tool_result",
            tool_use_id: "toolu_1",
            content: "This tool call did not finish: stopped by the user.",
            is_error: true,
          },
        ],
      },
      { role: "assistant", content: [{ type: "text", text: "[stopped by the user]" }] },
    ]);

    await core.waitForJob((await core.enqueue("hello?")).id, isDone);

    expect(core.model.refused).toEqual([]);
    expect(lastRequestBlocks()[0]).toMatchObject({ type: "text", text: "hello?" });
    await waitFor(() => core.platform.texts(CHAT_ID).at(-1) === "Stopped it. Hello!");
  });

  it("a last attempt that times out: the call gets a 'timed out' result", async () => {
    await startCore({ files: BASH_AGENT, jobTimeoutS: 1 });
    core.model.script(longCommand);
    core.start();
    const job = await core.enqueue("run the long thing", { maxAttempts: 1 });
    const sessionId = await waitForToolCall(job.id);
    await core.waitForJob(job.id, isFailed);
    expect((await stored(sessionId)).at(-1)?.content).toMatchObject([
      {
        tool_use_id: "toolu_1",
        content: "This tool call did not finish: timed out.",
        is_error: true,
      },
    ]);
    await core.waitForJob((await core.enqueue("still there?")).id, isDone);
    expect(core.model.refused).toEqual([]);
  });

  it("a tool call left open by older data is answered as interrupted, not sent as it is", async () => {
    await startCore();
    await sessionWith(user("read notes"), {
      role: "assistant",
      content: [{ type: "tool_use", id: "toolu_old", name: "read", input: { path: "notes.md" } }],
    });
    core.start();
    await core.waitForJob((await core.enqueue("hello")).id, isDone);
    expect(core.model.refused).toEqual([]);
    expect(lastRequestBlocks()[0]).toMatchObject({
      type: "tool_result",
      tool_use_id: "toolu_old",
      is_error: true,
    });
  });
});

const BIG = { "big.txt": "Pickling notes, line after line of them.\n".repeat(5000) };
/** Reads big.txt for each new message, answers after the result; summarises when asked. */
const answer = (request: RecordedRequest): FakeReply => {
  if (isSummaryCall(request)) {
    return { text: `SUMMARY #${core.model.requests.length}: the user keeps reading big.txt.` };
  }
  const last = request.body.messages.at(-1);
  const blocks = Array.isArray(last?.content) ? last.content : [];
  const answered = blocks.some((block) => block.type === "tool_result");
  return answered
    ? { text: "Read it." }
    : { toolUses: [{ name: "read", input: { path: "big.txt" } }] };
};

/**
 * Starts a core whose model reads big.txt for each message (see `answer`), in a window of
 * `contextWindow` (the model's real one: `limit`), and sends `turns` messages, each done
 * in one attempt; resolves the chat's session id.
 */
async function readBigTimes(
  turns: number,
  { contextWindow = 20_000, limit = 20_000 }: { contextWindow?: number; limit?: number } = {},
): Promise<string> {
  await startCore({ files: BIG, contextWindow, promptTokenLimit: limit, defaultReply: answer });
  core.start();
  let sessionId = "";
  for (let turn = 1; turn <= turns; turn++) {
    const done = await core.waitForJob((await core.enqueue(`take ${turn}`)).id, isDone);
    expect(done.attempts).toBe(1);
    sessionId = done.sessionId as string;
  }
  return sessionId;
}

describe("AgentWorker: a conversation larger than the context window", () => {
  it("caps each tool result with a note on how to read on, and never sends a prompt over the window", async () => {
    const sessionId = await readBigTimes(3);
    expect(core.model.refused.map((request) => request.refusal)).toEqual([]);
    const results = (await stored(sessionId)).flatMap((message) =>
      message.content.filter((block) => block.type === "tool_result"),
    );
    expect(results).toHaveLength(3);
    for (const result of results) {
      expect(result.content).toMatch(
        /\[cut to fit the context window: 6000 of 205000 characters shown; read the rest with read \{"path": "big.txt", "offset": 6000\}\]$/,
      );
    }
  });

  it('answers after a "prompt is too long" refusal: the request is made again, smaller', async () => {
    // The window picklebot believes in is larger than the model's real one.
    await readBigTimes(6, { contextWindow: 60_000 });
    // Once: the window the refusal named is used from then on, for every later turn.
    expect(core.model.refused).toHaveLength(1);
    expect(core.model.refused[0]?.refusal).toMatch(
      /prompt is too long: \d+ tokens > 20000 maximum/,
    );
  });
});

/** Tool results of a request's messages, in order. */
function toolResultsOf(request: RecordedRequest): string[] {
  return request.body.messages.flatMap((message) =>
    Array.isArray(message.content)
      ? message.content.filter((b) => b.type === "tool_result").map((b) => String(b.content))
      : [],
  );
}

/** Messages stored for a session, compaction and prune points included. */
function storedCount(sessionId: string): number {
  const db = new BetterSqlite(`${core.ws.dir}/history/${DATABASE_FILE}`, { readonly: true });
  try {
    const row = db
      .prepare("SELECT count(*) AS n FROM messages WHERE session_id = ?")
      .get(sessionId) as { n: number };
    return row.n;
  } finally {
    db.close();
  }
}

const compactions = () => core.lines.filter((line) => line.msg === "session compacted");

describe("AgentWorker: compaction", () => {
  it("leaves old tool outputs out first, without a model call, keeping the last two turns' outputs and every raw message", async () => {
    const sessionId = await readBigTimes(16);
    expect(core.model.refused).toEqual([]);
    expect(core.model.requests.filter(isSummaryCall)).toEqual([]);
    const prunes = compactions();
    expect(prunes.length).toBeGreaterThan(0);
    expect(prunes.every((line) => line.how === "pruned")).toBe(true);
    // Nothing was deleted: 16 turns of 4 messages, and the prune points.
    expect(storedCount(sessionId)).toBe(16 * 4 + prunes.length);
    // Requests after a prune point send older outputs as notes (how many older turns still
    // fit the window, the last request's among them, depends on the tools' sizes).
    const isNote = (text: string) => text.startsWith("[output left out to save context");
    expect(core.model.requests.some((request) => toolResultsOf(request).some(isNote))).toBe(true);
    const results = toolResultsOf(requestAt(core.model, core.model.requests.length - 1));
    // The turns just before the last prune point, and those after it, keep their outputs.
    expect(results.slice(-2).every((text) => text.startsWith("Pickling notes"))).toBe(true);
  });

  /**
   * Sends `turns` long messages (no tool calls, so there are no outputs to leave out),
   * each answered "Noted." in one attempt, while summary calls get `summaryReply`;
   * resolves the chat's session id.
   */
  async function talkLong(turns: number, summaryReply: FakeReplySource): Promise<string> {
    await startCore({
      contextWindow: 20_000,
      promptTokenLimit: 20_000,
      defaultReply: (request) =>
        isSummaryCall(request)
          ? typeof summaryReply === "function"
            ? summaryReply(request)
            : summaryReply
          : { text: "Noted." },
    });
    core.start();
    let sessionId = "";
    for (let turn = 1; turn <= turns; turn++) {
      const message = `Message ${turn}: ${"my pickles are crunchy. ".repeat(160)}`;
      const done = await core.waitForJob((await core.enqueue(message)).id, isDone);
      expect(done.attempts).toBe(1);
      sessionId = done.sessionId as string;
    }
    expect(core.model.refused).toEqual([]);
    return sessionId;
  }

  it("summarises older turns when leaving tool outputs out is not enough, and sends the summary", async () => {
    const sessionId = await talkLong(14, answer);
    const summaries = core.model.requests.filter(isSummaryCall);
    expect(summaries.length).toBeGreaterThan(0);
    expect(summaries.length).toBeLessThan(14);
    expect(compactions().map((line) => line.how)).toEqual(summaries.map(() => "summarised"));
    // Each summary call comes right after its memory save call (the pickle agent has memory).
    const calls = core.model.requests;
    const saves = calls.filter(isMemorySaveCall);
    expect(saves).toHaveLength(summaries.length);
    for (const summary of summaries) {
      expect(isMemorySaveCall(calls[calls.indexOf(summary) - 1] as RecordedRequest)).toBe(true);
    }
    // Nothing was deleted: 14 turns of 2 messages, the memory save markers and the points.
    expect(storedCount(sessionId)).toBe(14 * 2 + saves.length + summaries.length);
    const last = requestAt(core.model, core.model.requests.length - 1).body.messages;
    const texts = last.map((message) => messageText(message));
    expect(texts[0]).toContain("Summary of the earlier conversation");
    expect(texts[0]).toContain("SUMMARY #");
    // The summary is followed by the latest turns before it, word for word, then the new one.
    const kept = Number(compactions().at(-1)?.kept);
    expect(kept).toBeGreaterThanOrEqual(2);
    const keptTurns = kept / 2;
    const said = texts.map((text) => /Message (\d+):/.exec(text)?.[1]).filter(Boolean);
    expect(said.slice(-keptTurns - 1).map(Number)).toEqual(
      Array.from({ length: keptTurns + 1 }, (_, index) => 14 - keptTurns + index),
    );
    expect(texts.filter((text) => text === "Noted.").length).toBeGreaterThanOrEqual(keptTurns);
  });

  it("summarises a chat of many short messages before max_messages would make every request start later", async () => {
    await startCore({
      maxMessages: 20,
      defaultReply: (request) => (isSummaryCall(request) ? answer(request) : { text: "Yes." }),
    });
    core.start();
    // At 14 messages (70% of 20) the summary keeps the last 2 turns, 5 messages at most
    // (a quarter of max_messages): the next one would come at turn 12.
    for (let turn = 1; turn <= 11; turn++) {
      await core.waitForJob((await core.enqueue(`short ${turn}`)).id, isDone);
    }
    expect(core.model.requests.filter(isSummaryCall)).toHaveLength(1);
    expect(compactions().map((line) => line.how)).toEqual(["summarised"]);
    const first = requestAt(core.model, core.model.requests.length - 1).body.messages[0];
    expect(messageText(first ?? { role: "user", content: "" })).toContain("SUMMARY #");
  });

  /**
   * Two turns, the first a message that the estimate (3 characters a token) puts past the
   * threshold and the API's count (4 characters a token, as the fake counts) below it.
   */
  async function nearlyFull(countTokens: boolean) {
    await startCore({ contextWindow: 20_000, countTokens });
    core.start();
    await core.waitForJob((await core.enqueue("brine ".repeat(4_400))).id, isDone);
    await core.waitForJob((await core.enqueue("and?")).id, isDone);
    return { counted: core.model.counts.length, compacted: compactions().length };
  }

  it("trusts the API's token count over its own estimate near the threshold", async () => {
    expect(await nearlyFull(true)).toEqual({ counted: 1, compacted: 0 });
  });

  it("decides on the estimate where the API cannot count (no count_tokens)", async () => {
    expect(await nearlyFull(false)).toEqual({ counted: 0, compacted: 1 });
  });

  it("goes on when the summary call fails: the turn is answered, old turns left out", async () => {
    await talkLong(14, { error: { status: 500, message: "summary failed" } });
    const first = requestAt(core.model, core.model.requests.length - 1).body.messages[0];
    expect(messageText(first ?? { role: "user", content: "" })).toContain(
      "Earlier messages of this conversation are left out",
    );
    expect(
      core.lines.some(
        (line) =>
          line.msg ===
          "could not compact the session; its oldest turns are left out of requests instead",
      ),
    ).toBe(true);
  });
});

describe("AgentWorker: a lost lock (another worker took the job)", () => {
  /** Hands the job to worker-b behind worker-a's back, as a rescue by another process would. */
  function stealJob(workspace: string, jobId: string): void {
    const db = new BetterSqlite(`${workspace}/history/${DATABASE_FILE}`);
    try {
      db.prepare("UPDATE jobs SET locked_by = 'worker-b', lock_token = 'stolen' WHERE id = ?").run(
        jobId,
      );
    } finally {
      db.close();
    }
  }

  it("stops before the checkpoint: no message written, no model call, the job left to its owner", async () => {
    await startCore({
      queue: "sqlite",
      checkpoint: (storage) => async (job, sessionId, message) => {
        stealJob(core.ws.dir, job.id);
        return storage.checkpoint(job, sessionId, message);
      },
    });
    core.start();
    const job = await core.enqueue("hello");
    await waitFor(() => core.lines.some((line) => line.msg === "job interrupted"));
    expect(core.model.requests).toHaveLength(0);
    expect(await core.storage.queue.get(job.id)).toMatchObject({
      state: "running",
      lockedBy: "worker-b",
      message: "hello",
    });
    const session = await core.storage.history.currentSession(CHAT_KEY);
    expect(session?.messageCount ?? 0).toBe(0);
  });

  it("does not complete a job whose lock it lost while the model answered", async () => {
    await startCore({ queue: "sqlite" });
    let release = () => {};
    const resume = new Promise<void>((resolve) => {
      release = resolve;
    });
    core.model.script({ text: "one two three four", chunks: 4, pauseAfterChunks: 1, resume });
    core.start();
    const job = await core.enqueue("hello");
    await waitFor(() => core.model.requests.length === 1, "the model call");
    stealJob(core.ws.dir, job.id);
    release();
    await waitFor(() =>
      core.lines.some((line) => line.msg === "job finished after its lock was lost"),
    );
    const after = await core.storage.queue.get(job.id);
    expect(after).toMatchObject({ state: "running", lockedBy: "worker-b" });
    const messages = await stored(after?.sessionId as string);
    expect(messages.map((message) => message.role)).toEqual(["user", "assistant"]);
  });
});

describe("AgentWorker: a job with nothing to answer", () => {
  it("fails at once, without retries, when its session has no message to answer", async () => {
    await startCore();
    const sessionId = await sessionWith();
    const job = await core.enqueueInterrupted(sessionId, { maxAttempts: 5 });
    core.start();
    const failed = await core.waitForJob(job.id, isFailed);
    expect(failed.attempts).toBe(2);
    expect(failed.lastError).toContain("has no message to answer");
    expect(core.model.requests).toHaveLength(0);
  });
});

describe("AgentWorker: options", () => {
  it.each([
    ["concurrency", { concurrency: 0 }],
    ["concurrency", { concurrency: Number.NaN }],
    ["jobTimeoutMs", { jobTimeoutMs: -1 }],
  ])("rejects a nonsense %s", async (name, overrides) => {
    await startCore();
    expect(() => new AgentWorker({ ...core.workerOptions, ...overrides })).toThrow(name);
  });
});
