import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { systemClock } from "../../src/base/clock.js";
import { openStorage } from "../../src/storage/index.js";
import {
  type FakeAnthropic,
  type FakeReply,
  isMemorySaveCall,
  isSummaryCall,
  lastUserText,
  messageText,
  type RecordedRequest,
  requestAt,
  startFakeAnthropic,
} from "../fakes/anthropic.js";
import { CLI, childEnv, runCli } from "../helpers/cli.js";
import { testConfig } from "../helpers/config.js";
import {
  DELEGATING_PICKLE,
  delegatingModel,
  isResearcher,
  RESEARCHER_AGENT,
} from "../helpers/subagents.js";
import { waitFor } from "../helpers/wait.js";
import {
  fakeModelConfig,
  filesUnder,
  makeWorkspace,
  type TempWorkspace,
} from "../helpers/workspace.js";

let fake: FakeAnthropic;
let ws: TempWorkspace;

beforeEach(async () => {
  fake = await startFakeAnthropic();
  ws = makeWorkspace({ "picklebot.yaml": fakeModelConfig(fake.url) });
});

afterEach(async () => {
  await fake.close();
  ws.remove();
});

const chat = (input: string, args: string[] = []) =>
  runCli(["chat", "--workspace", ws.dir, ...args], { input });

/** The text of every message the model was sent in one request, in order. */
function sentTexts(requestIndex: number): string[] {
  const request = fake.requests[requestIndex];
  if (!request) throw new Error(`no request ${requestIndex}`);
  return request.body.messages.map((message) =>
    messageText(message, (block) => String(block.type)),
  );
}

/** `picklebot chat` on a pseudo-terminal (`script`): type into it, wait for its screen. */
function terminalChat() {
  const command = `${process.execPath} ${CLI} chat --workspace ${ws.dir}`;
  const child = spawn("script", ["-qfec", command, "/dev/null"], { env: childEnv() });
  let screen = "";
  child.stdout.on("data", (chunk: Buffer) => (screen += chunk));
  return {
    screen: () => screen,
    type: (text: string) => child.stdin.write(text),
    shows: (text: string) =>
      waitFor(() => screen.includes(text), `the terminal to show ${JSON.stringify(text)}`, 15_000),
    exited: new Promise((resolve) => child.on("close", resolve)),
  };
}

describe("picklebot chat (scripted, stdin not a TTY)", () => {
  it("prints the model's reply for each line", async () => {
    fake.script({ text: "Hello! How can I help?" }, (request) => ({
      text: `echo: ${lastUserText(request)}`,
    }));
    const result = await chat("hi\nwhat time is it?\n");
    expect(result.stderr).toBe("");
    expect(result.stdout).toBe("Hello! How can I help?\necho: what time is it?\n");
    expect(result.code).toBe(0);
    expect(sentTexts(1)).toEqual(["hi", "Hello! How can I help?", "what time is it?"]);
  });

  it("runs a tool loop that writes a file in the workspace and answers from it", async () => {
    fake.script(
      {
        toolUses: [{ name: "write", input: { path: "notes/todo.md", content: "- buy pickles\n" } }],
      },
      { toolUses: [{ name: "read", input: { path: "notes/todo.md" } }] },
      (request) => {
        const last = request.body.messages.at(-1)?.content;
        const result = Array.isArray(last) ? String(last[0]?.content) : "";
        return { text: `Your list says: ${result.trim()}` };
      },
    );
    const result = await chat("remember to buy pickles\n");
    expect(readFileSync(join(ws.dir, "notes/todo.md"), "utf8")).toBe("- buy pickles\n");
    expect(result.stdout).toBe("Your list says: - buy pickles\n");
    expect(result.stderr).toContain("· write notes/todo.md");
    expect(result.code).toBe(0);
  });

  it("runs an agent that lists post_message: the post shows in the terminal, apart from the reply", async () => {
    ws.write(
      "agents/herald/AGENT.md",
      "---\nname: Herald\ndescription: posts updates\ntools: [read, post_message]\n---\nPost updates.\n",
    );
    fake.script(
      { toolUses: [{ name: "post_message", input: { text: "Halfway there." } }] },
      (request) => {
        const last = request.body.messages.at(-1)?.content;
        const block = Array.isArray(last) ? last[0] : undefined;
        return {
          text: `tool said (${block?.is_error ? "error" : "ok"}): ${String(block?.content)}`,
        };
      },
    );
    const result = await chat("tell me how it goes\n", ["--agent", "herald"]);
    expect(result.stdout).toBe("post: Halfway there.\ntool said (ok): posted to the terminal\n");
    expect(result.stderr).toContain("· post_message: Halfway there.");
    expect(result.code).toBe(0);
    // Its listed tools, then the memory tools every agent with memory gets.
    expect(fake.requests[0]?.body.tools?.map((tool) => tool.name)).toEqual([
      "read",
      "post_message",
      "memory",
      "session_search",
      "session_read",
    ]);
  });

  /**
   * Twelve short lines in a workspace whose requests hold 20 messages: the eighth finds 14
   * stored (and the twelfth again), past COMPACT_BEFORE of `history.max_messages`, so the turn driver compacts
   * first, as the server's worker does; summary calls get `summary`, the rest "Yes.".
   */
  async function chatPastMaxMessages(summary: FakeReply) {
    ws.write("picklebot.yaml", fakeModelConfig(fake.url, "history:\n  max_messages: 20\n"));
    const reply = (request: RecordedRequest): FakeReply =>
      isSummaryCall(request) ? summary : { text: "Yes." };
    fake.script(...Array.from({ length: 40 }, () => reply));
    const lines = Array.from({ length: 12 }, (_, turn) => `short ${turn + 1}`);
    const result = await chat(`${lines.join("\n")}\n`);
    const summaries = fake.requests.filter(isSummaryCall).length;
    return { result, summaries };
  }

  it("compacts a long conversation before the message joins it, as the server does: the next requests start from the summary", async () => {
    const { result, summaries } = await chatPastMaxMessages({
      text: "SUMMARY: the user said short things.",
    });
    // At the eighth line, and at the twelfth: the summary keeps the last 2 turns (5
    // messages at most, a quarter of max_messages), so 14 are stored again 4 lines later.
    expect(summaries).toBe(2);
    const notes = result.stdout.split("\n").filter((line) => line.startsWith("("));
    expect(notes).toHaveLength(2);
    for (const note of notes) {
      expect(note).toMatch(
        /^\(conversation compacted: \d+ messages summarised, the last 4 kept as they were, context ~\d+k → ~\d+k tokens\)$/,
      );
    }
    expect(result.stdout.split("\n").filter((line) => line === "Yes.")).toHaveLength(12);
    expect(result.code).toBe(0);
    const last = fake.requests.at(-1)?.body.messages ?? [];
    expect(messageText(last[0] ?? { role: "user", content: "" })).toContain(
      "SUMMARY: the user said",
    );
    expect(sentTexts(fake.requests.length - 1).at(-1)).toBe("short 12");
  });

  it("goes on when the summary call fails: the turn is answered, its oldest turns left out", async () => {
    const { result, summaries } = await chatPastMaxMessages({
      error: { status: 400, message: "summary refused" },
    });
    expect(summaries).toBeGreaterThan(0);
    // Every turn from the eighth tries again, says why it could not, and is answered.
    const notes = result.stdout.split("\n").filter((line) => line.startsWith("("));
    expect(notes).toHaveLength(5);
    for (const note of notes) {
      expect(note).toMatch(
        /^\(could not summarise the conversation: .*summary refused; its oldest turns are left out instead\)$/,
      );
    }
    expect(result.stdout.split("\n").filter((line) => line === "Yes.")).toHaveLength(12);
    expect(result.code).toBe(0);
    // The requests keep to max_messages, starting later, and end with the message.
    const sent = sentTexts(fake.requests.length - 1);
    expect(sent.length).toBeLessThanOrEqual(20);
    expect(sent.at(-1)).toBe("short 12");
  });

  it("runs a subagent in place and answers with what it found", async () => {
    ws.write("agents/pickle/AGENT.md", DELEGATING_PICKLE);
    ws.write("agents/researcher/AGENT.md", RESEARCHER_AGENT);
    const answer = delegatingModel(["dill"]);
    fake.script(answer, answer, answer);
    const result = await chat("What about dill?\n");
    expect(result.stdout).toBe("answer: found: dill\n");
    expect(result.code).toBe(0);
    expect(fake.requests.filter(isResearcher)).toHaveLength(1);
  });

  it("asks y/n/a before a call the policy marks ask: the next input line answers", async () => {
    ws.write(
      "agents/pickle/AGENT.md",
      "---\nname: Pickle\ndescription: x\ntools: [bash]\napprovals:\n  bash: ask\n---\nYou are Pickle.\n",
    );
    const echo = { toolUses: [{ name: "bash", input: { command: "echo hi" } }] };
    const answer = (request: Parameters<typeof lastUserText>[0]) => ({
      text: `got: ${lastUserText(request)}`,
    });
    fake.script(echo, answer, echo, answer, echo, answer);
    const result = await chat("first\ny\nsecond\nn\nthird\na\n");
    expect(result.stdout).toBe(
      "got: hi\ngot: bash: the owner denied this call; do not try again unless asked\ngot: hi\n",
    );
    expect(result.stderr).toContain(
      "pickle wants to run bash: echo hi\nAllow? [y] once, [a] always, [n] no: ",
    );
    // "a" stored the grant: the next run asks nothing.
    fake.script(echo, answer);
    const again = await chat("fourth\n");
    expect(again.stdout).toBe("got: hi\n");
    expect(again.stderr).not.toContain("wants to run");
  });

  it("asks before an edit when picklebot.yaml says write: ask (a write policy covers edit)", async () => {
    ws.write(
      "picklebot.yaml",
      fakeModelConfig(fake.url, "approvals:\n  policy:\n    write: ask\n"),
    );
    ws.write("scripts/check.sh", "echo safe\n");
    const edit = {
      toolUses: [
        {
          name: "edit",
          input: { path: "scripts/check.sh", old_text: "echo safe", new_text: "rm -rf ~" },
        },
      ],
    };
    fake.script(edit, (request) => ({ text: `got: ${lastUserText(request)}` }));
    const result = await chat("tidy the script\nn\n");
    expect(result.stderr).toContain(
      "pickle wants to run edit scripts/check.sh\nAllow? [y] once, [a] always, [n] no: ",
    );
    expect(result.stdout).toBe(
      "got: edit: the owner denied this call; do not try again unless asked\n",
    );
    expect(readFileSync(join(ws.dir, "scripts/check.sh"), "utf8")).toBe("echo safe\n");
  });

  it("refuses a path outside the workspace and tells the model", async () => {
    fake.script(
      { toolUses: [{ name: "write", input: { path: "../escaped.txt", content: "x" } }] },
      (request) => {
        const last = request.body.messages.at(-1)?.content;
        const block = Array.isArray(last) ? last[0] : undefined;
        return {
          text: `tool said (${block?.is_error ? "error" : "ok"}): ${String(block?.content)}`,
        };
      },
    );
    const result = await chat("write outside\n");
    expect(existsSync(join(ws.dir, "..", "escaped.txt"))).toBe(false);
    expect(result.stdout).toMatch(
      /^tool said \(error\): path "\.\.\/escaped\.txt" is outside the workspace/,
    );
  });

  it("resumes a stored session with --session and sends the earlier turns", async () => {
    fake.script({ text: "Nice to meet you, Ada." });
    await chat("my name is Ada\n");
    const list = await chat("/sessions\n");
    const sessionId = list.stdout.match(/^(s_\w+)/m)?.[1];
    expect(sessionId).toBeDefined();

    fake.script((request) => ({ text: `you said ${request.body.messages.length} things` }));
    const resumed = await chat("what is my name?\n", ["--session", sessionId ?? ""]);
    expect(resumed.code).toBe(0);
    const last = fake.requests.length - 1;
    expect(sentTexts(last)).toEqual([
      "my name is Ada",
      "Nice to meet you, Ada.",
      "what is my name?",
    ]);
  });

  it("waits out a 429 and then answers", async () => {
    fake.script({ error: { status: 429, retryAfterS: 0 } }, { text: "worth the wait" });
    const result = await chat("hello\n");
    expect(result.stdout).toBe("worth the wait\n");
    expect(result.code).toBe(0);
    expect(fake.requests).toHaveLength(2);
  });

  it("shows a 400 as an error and keeps the session usable", async () => {
    fake.script(
      { error: { status: 400, message: "messages: text content blocks must be non-empty" } },
      { text: "all good now" },
    );
    const result = await chat("first\nsecond\n");
    expect(result.stderr).toContain("error: The Anthropic API answered with status 400");
    expect(result.stderr).toContain("text content blocks must be non-empty");
    expect(result.stdout).toBe("all good now\n");
    expect(result.code).toBe(1);
    // The unanswered message is sent again, with the next one, in one user message.
    const sent = fake.requests[1]?.body.messages ?? [];
    expect(sent).toHaveLength(1);
    const texts = ((sent[0]?.content ?? []) as Array<{ text?: string }>).map((block) => block.text);
    expect(texts.slice(0, 2)).toEqual(["first", "second"]);
  });

  it("names the missing API key instead of crashing", async () => {
    ws.write("picklebot.yaml", `llm:\n  base_url: ${fake.url}\n`);
    const result = await chat("hello\n");
    expect(result.stderr).toContain("No Anthropic API key: set ANTHROPIC_API_KEY");
    expect(result.code).toBe(1);
    expect(fake.requests).toHaveLength(0);
  });

  it("refuses --session while the session's chat has a job in progress, naming it", async () => {
    fake.script({ text: "noted" });
    await chat("remember this\n");
    const sessionId = (await chat("/sessions\n")).stdout.match(/^(s_\w+)/m)?.[1] ?? "";
    const storage = await openStorage(testConfig(ws.dir), systemClock);
    let jobId: string;
    try {
      const [session] = await storage.history.listSessions({ limit: 1 });
      const job = await storage.queue.enqueue({
        agentId: "pickle",
        sessionKey: session?.key ?? "",
        message: "sent from the chat while the terminal was away",
        mode: "chat",
        replyTo: { kind: "silent" },
      });
      jobId = job.id;
    } finally {
      await storage.close();
    }
    const requests = fake.requests.length;

    const result = await chat("hello again\n", ["--session", sessionId]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`has work in progress: job ${jobId} (queued)`);
    expect(result.stderr).toContain("picklebot jobs cancel");
    expect(fake.requests).toHaveLength(requests);
  });

  it("answers /usage, /status and /agent itself: no model request, nothing billed", async () => {
    fake.script({ text: "Hello." });
    const result = await chat("hi\n/usage\n/status\n/agent\n");
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(fake.requests).toHaveLength(1);
    const [reply, usage, everywhere, agent, model, conversation, last, agents] =
      result.stdout.split("\n");
    expect(reply).toBe("Hello.");
    expect(usage).toMatch(/^This conversation: 1 model calls, \$[\d.]+ \(\d+ in, \d+ out, /);
    expect(everywhere).toMatch(/^Today: \$[\d.]+; this month: \$[\d.]+ \(every chat and cron\)$/);
    expect(agent).toBe("Agent: pickle");
    expect(model).toBe("Model: default (claude-sonnet-4-6); no fallbacks");
    expect(conversation).toMatch(/^Conversation: 2 messages, context ~\d+k of \d+k tokens/);
    expect(last).toBe("Last answer: claude-sonnet-4-6");
    expect(agents).toBe("Agents (this chat: pickle):");
    expect(result.stdout).not.toContain("Queue:");
  });

  it("/memory shows the owner's memory and /forget confirm clears it: no model request", async () => {
    const storage = await openStorage(testConfig(ws.dir), systemClock);
    await storage.memory.update(
      { agentId: "pickle", scope: "owner" },
      { by: "cli", at: 1 },
      () => ({
        text: "Their cat is called Miso.",
        change: { action: "add", entry: "Their cat is called Miso.", previous: null },
      }),
    );
    await storage.close();
    const result = await chat("/memory\n/forget\n/forget confirm\n/memory\n");
    expect(result).toMatchObject({ code: 0, stderr: "" });
    expect(fake.requests).toHaveLength(0);
    expect(result.stdout.split("\n")).toEqual([
      "What pickle remembers about you (25 of 1400 characters (2%)):",
      "Their cat is called Miso.",
      "",
      "Ask me to change or remove something, or send /forget to clear it all.",
      "This clears everything pickle remembers about you, for good. To do it, send /forget confirm",
      "Done: pickle remembers nothing about you now. What you said earlier in this conversation is still part of it; /new starts afresh.",
      "pickle remembers nothing about you yet.",
      "",
    ]);
  });

  it("/compact summarises the conversation now, after one memory save call, and says so", async () => {
    fake.script({ text: "Hello." }, { text: "Nothing to save." }, { text: "SUMMARY: hi." });
    const result = await chat("hi\n/compact\n");
    expect(result.stderr).toBe("");
    expect(result.stdout).toMatch(
      /^Hello\.\nCompacted: 2 messages summarised, context ~\d+k → ~\d+k tokens\.\n$/,
    );
    expect(fake.requests).toHaveLength(3);
    expect(isMemorySaveCall(requestAt(fake, 1))).toBe(true);
    expect(isSummaryCall(requestAt(fake, 2))).toBe(true);
  });

  it("refuses an unknown /word with the list of its commands, and sends nothing to the model", async () => {
    const result = await chat("/foo bar\n/stop\n");
    expect(fake.requests).toHaveLength(0);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain("/foo is not a command here; nothing was sent to the agent.\n");
    for (const command of [
      "new",
      "status",
      "usage",
      "compact",
      "agent",
      "memory",
      "forget",
      "sessions",
      "help",
      "exit",
    ]) {
      expect(result.stderr).toContain(`\n/${command}: `);
    }
    // /stop is a chat's: here Ctrl+C stops a reply.
    expect(result.stderr).toContain("/stop is not a command here");
    expect(result.stderr).toContain("Ctrl+C stops a reply in progress.");
    expect(result.code).toBe(1);
  });

  it("replaces a configured secret typed in a message before it is stored or sent", async () => {
    const secret = "sk-ant-typed-into-the-terminal-0123";
    ws.write(".env", `PB_MODEL_CREDENTIAL=${secret}\n`);
    ws.write(
      "picklebot.yaml",
      fakeModelConfig(fake.url).replace("test-key", `\${PB_MODEL_CREDENTIAL}`),
    );
    fake.script((request) => ({ text: `you said: ${lastUserText(request)}` }));
    const result = await chat(`my key is ${secret}, keep it\n`);
    expect(result.stdout).toBe("you said: my key is [redacted], keep it\n");
    expect(JSON.stringify(fake.requests.map((request) => request.body))).not.toContain(secret);
    expect(filesUnder(join(ws.dir, "history"))).not.toContain(secret);
  });

  it("reports an unknown session id in one sentence", async () => {
    const result = await chat("", ["--session", "s_nope"]);
    expect(result.stderr).toMatch(/^picklebot: no session "s_nope"/);
    expect(result.code).toBe(1);
  });

  it("reports a broken picklebot.yaml with the key and exits 1", async () => {
    ws.write("picklebot.yaml", "workers:\n  agent_concurency: 2\n");
    const result = await chat("hello\n");
    expect(result.stderr).toContain("picklebot.yaml: workers.agent_concurency: unknown key");
    expect(result.stderr).toContain('did you mean "agent_concurrency"?');
    expect(result.stderr).not.toContain("    at ");
    expect(result.code).toBe(1);
  });
});

describe("picklebot chat (interactive, on a terminal)", () => {
  it("streams the reply while it is generated, and Ctrl+D leaves", async () => {
    let release: () => void = () => {};
    const resume = new Promise<void>((resolve) => (release = resolve));
    fake.script({ text: "Streaming word by word", chunks: 3, pauseAfterChunks: 1, resume });
    const command = `${process.execPath} ${CLI} chat --workspace ${ws.dir}`;
    const child = spawn("script", ["-qfec", command, "/dev/null"], { env: childEnv() });
    let screen = "";
    child.stdout.on("data", (chunk: Buffer) => (screen += chunk));
    await waitFor(() => screen.includes("you ›"), 'the terminal to show "you ›"', 15_000);
    child.stdin.write("hi\n");
    await waitFor(() => screen.includes("Strea"), 'the terminal to show "Strea"', 15_000);
    // The first piece is on screen while the model is still generating the rest.
    expect(screen).not.toContain("word by word");
    release();
    await waitFor(
      () => screen.includes("word by word"),
      'the terminal to show "word by word"',
      15_000,
    );
    child.stdin.write("\x04");
    const code = await new Promise((resolve) => child.on("close", resolve));
    expect(code).toBe(0);
  });

  it("sends a paste of three lines as one message, in one request", async () => {
    fake.script((request) => ({ text: `got ${lastUserText(request).split("\n").length} lines` }));
    const chat = terminalChat();
    await chat.shows("you ›");
    // A paste reaches the program in one read, as this one write does.
    chat.type("first line\nsecond line\nthird line\n");
    await chat.shows("got 3 lines");
    chat.type("/exit\n");
    expect(await chat.exited).toBe(0);
    expect(fake.requests).toHaveLength(1);
    expect(sentTexts(0)).toEqual(["first line\nsecond line\nthird line"]);
  });

  it("takes a bracketed paste that ends mid-line as one message with the line Enter ends", async () => {
    fake.script((request) => ({ text: `got ${lastUserText(request).split("\n").length} lines` }));
    const chat = terminalChat();
    await chat.shows("you ›");
    chat.type("\x1b[200~alpha\nbeta\ngam\x1b[201~");
    chat.type("ma\r");
    await chat.shows("got 3 lines");
    chat.type("/exit\n");
    expect(await chat.exited).toBe(0);
    expect(fake.requests).toHaveLength(1);
    expect(sentTexts(0)).toEqual(["alpha\nbeta\ngamma"]);
    // The terminal was asked to mark pastes, and to stop at the end.
    expect(chat.screen()).toContain("\x1b[?2004h");
    expect(chat.screen()).toContain("\x1b[?2004l");
  });

  it("Ctrl+C stops the reply in progress but not the program, and /new starts a session", async () => {
    fake.script({ hang: true }, { text: "still here" });
    const chat = terminalChat();
    await chat.shows("you ›");
    chat.type("tell me a very long story\n");
    await waitFor(() => fake.requests.length === 1, "the model call", 15_000);
    chat.type("\x03");
    await chat.shows("error: stopped");
    chat.type("/new\n");
    await chat.shows("Started a new conversation");
    chat.type("are you there?\n");
    await chat.shows("still here");
    chat.type("/exit\n");
    expect(await chat.exited).toBe(0);
    // The new session does not carry the stopped turn.
    expect(sentTexts(1)).toEqual(["are you there?"]);
  });

  it("Ctrl+C keeps the reply shown so far and the stop: the next message starts a turn of its own", async () => {
    const held = new Promise<void>(() => {});
    fake.script({
      text: "Once upon a time there was a pickle",
      chunks: 4,
      pauseAfterChunks: 1,
      resume: held,
    });
    const chat = terminalChat();
    await chat.shows("you ›");
    chat.type("tell me a very long story\n");
    await chat.shows("Once");
    chat.type("\x03");
    await chat.shows("error: stopped");
    chat.type("a short one then\n");
    await chat.shows("ok");
    chat.type("/exit\n");
    expect(await chat.exited).toBe(0);
    expect(fake.refused).toEqual([]);
    const [asked, stopped, next] = sentTexts(1);
    expect([asked, next]).toEqual(["tell me a very long story", "a short one then"]);
    expect(stopped).toMatch(/^Once.*\n\n\[stopped by the user\]$/s);
  });

  it("Ctrl+C during a tool call closes the turn: the next message of the session is answered", async () => {
    ws.write(
      "agents/pickle/AGENT.md",
      "---\nname: Pickle\ndescription: Runs commands\ntools: [bash]\n---\nYou run commands.\n",
    );
    fake.script(
      { toolUses: [{ name: "bash", input: { command: "sleep 30" }, id: "toolu_1" }] },
      { text: "fine, stopped" },
    );
    const chat = terminalChat();
    await chat.shows("you ›");
    chat.type("run the slow thing\n");
    await chat.shows("sleep 30");
    chat.type("\x03");
    await chat.shows("error: stopped");
    chat.type("what happened?\n");
    await chat.shows("fine, stopped");
    chat.type("/exit\n");
    expect(await chat.exited).toBe(0);
    expect(fake.refused).toEqual([]);
    expect(sentTexts(1)).toEqual([
      "run the slow thing",
      "tool_use",
      "tool_result",
      "[stopped by the user]",
      "what happened?",
    ]);
    const closing = fake.requests[1]?.body.messages[2]?.content as Array<Record<string, unknown>>;
    expect(closing[0]).toMatchObject({
      type: "tool_result",
      tool_use_id: "toolu_1",
      content: "This tool call did not finish: stopped by the user.",
      is_error: true,
    });
  });
});
