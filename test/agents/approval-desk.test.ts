/**
 * Approvals, in-process: a tool call the agent's policy marks `ask` parks its job and puts
 * a question with Allow once / Always allow / Deny buttons in the job's chat; a press (or
 * the CLI's answer, or the expiry) decides it once, wakes the job and edits the question
 * to show the outcome. The in-memory chat platform, the real SDK against the fake model.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { ChatMessage, Job, ToolResultBlock } from "../../src/ports/index.js";
import { CAREFUL_AGENT, echoHiModel } from "../helpers/approvals.js";
import { CHAT_ID, type Core, OWNER_ID, openCore } from "../helpers/core.js";
import {
  DELEGATING_PICKLE,
  delegatingModel,
  isResearcher,
  RESEARCHER_AGENT,
} from "../helpers/subagents.js";
import { waitFor } from "../helpers/wait.js";

let core: Core;

afterEach(async () => {
  await core?.close();
});

async function start(): Promise<Core> {
  core = await openCore({
    files: { "agents/pickle/AGENT.md": CAREFUL_AGENT },
    defaultReply: echoHiModel,
  });
  core.start({ bus: true });
  return core;
}

/** The question's message, once it shows buttons. */
async function question() {
  return waitFor(
    () => core.platform.shown(CHAT_ID).find((message) => message.choices !== undefined),
    "the approval question",
  );
}

async function results(job: Job): Promise<ToolResultBlock[]> {
  const fresh = (await core.storage.queue.get(job.id)) as Job;
  const stored: ChatMessage[] = await core.storage.history.loadContext(
    fresh.sessionId as string,
    100,
  );
  return stored.flatMap((message) =>
    message.content.filter((block): block is ToolResultBlock => block.type === "tool_result"),
  );
}

const isDone = (job: Job) => job.state === "done";

/** The notice the newest acknowledged press got. */
function lastNotice(): string | undefined {
  return core.platform.succeeded("acknowledgeChoice").at(-1)?.text;
}

describe("approvals in a chat", () => {
  it("Allow once: the job waits holding no worker, runs the call after the press, and the question shows who allowed it", async () => {
    await start();
    const job = await core.enqueue("say hi");
    const asked = await question();
    expect(asked.text).toContain("pickle wants to run bash: echo hi");
    expect(asked.choices?.map((choice) => choice.label)).toEqual([
      "Allow once",
      "Always allow",
      "Deny",
    ]);
    const waiting = await core.waitForJob(job.id, (j) => j.state === "waiting");
    expect(waiting.waitingFor).toMatchObject({ kind: "approval" });

    await core.platform.pressButton({
      messageId: asked.messageId,
      choiceId: asked.choices?.[0]?.id as string,
    });
    await core.waitForJob(job.id, isDone);
    expect(await results(job)).toEqual([
      { type: "tool_result", tool_use_id: "toolu_bash", content: "hi" },
    ]);
    await waitFor(() => core.platform.texts(CHAT_ID).includes("result: hi"));
    const answered = core.platform.shown(CHAT_ID).find((m) => m.messageId === asked.messageId);
    expect(answered?.choices).toBeUndefined();
    expect(answered?.text).toMatch(/✅ Allowed once by Alice\.$/);
    expect(lastNotice()).toBe("✅ Allowed once by Alice.");
    // One question, one model call before and one after: nothing ran twice.
    expect(core.model.requests).toHaveLength(2);
  });

  it("Deny: the call is refused, the model is told, and a second press is told it was decided", async () => {
    await start();
    const job = await core.enqueue("say hi");
    const asked = await question();
    const deny = asked.choices?.[2]?.id as string;
    const allow = asked.choices?.[0]?.id as string;
    // A double tap: both presses arrive before the buttons are gone.
    await Promise.all([
      core.platform.pressButton({ messageId: asked.messageId, choiceId: deny }),
      core.platform.pressButton({ messageId: asked.messageId, choiceId: allow }),
    ]);
    await core.waitForJob(job.id, isDone);
    const [result] = await results(job);
    expect(result).toMatchObject({ is_error: true });
    expect(result?.content).toMatch(/the owner denied this call/);
    const notices = core.platform.succeeded("acknowledgeChoice").map((call) => call.text);
    expect(notices).toEqual(["⛔ Denied by Alice.", "Already decided: ⛔ Denied by Alice."]);
  });

  it("Always allow: the next call of the tool runs without asking, until revoked", async () => {
    await start();
    const first = await core.enqueue("say hi");
    const asked = await question();
    await core.platform.pressButton({
      messageId: asked.messageId,
      choiceId: asked.choices?.[1]?.id as string,
    });
    await core.waitForJob(first.id, isDone);
    expect(await core.storage.approvals.grants()).toMatchObject([
      { agentId: "pickle", tool: "bash", pattern: "*" },
    ]);
    const second = await core.enqueue("say hi again");
    await core.waitForJob(second.id, isDone);
    const questions = core.platform.shown(CHAT_ID).filter((m) => m.text.includes("wants to run"));
    expect(questions).toHaveLength(1);
  });

  it("only an admitted user may answer; the question stays open", async () => {
    await start();
    const job = await core.enqueue("say hi");
    const asked = await question();
    await core.platform.pressButton({
      messageId: asked.messageId,
      choiceId: asked.choices?.[0]?.id as string,
      userId: "666",
      userName: "Mallory",
    });
    expect(lastNotice()).toBe("Only the owner can answer this.");
    expect((await core.storage.queue.get(job.id))?.state).toBe("waiting");
    expect(OWNER_ID).not.toBe("666");
  });

  it("no answer within the timeout counts as Deny, and the question says so", async () => {
    await start();
    const job = await core.enqueue("say hi");
    const asked = await question();
    await core.waitForJob(job.id, (j) => j.state === "waiting");
    core.clock.advance(3_600_000 + 1000);
    await core.waitForJob(job.id, isDone);
    const [result] = await results(job);
    expect(result?.content).toMatch(/did not answer the approval request in time/);
    await waitFor(() =>
      core.platform
        .shown(CHAT_ID)
        .some(
          (m) =>
            m.messageId === asked.messageId && m.text.endsWith("⌛ No answer in time: denied."),
        ),
    );
    const expired = core.platform.shown(CHAT_ID).find((m) => m.messageId === asked.messageId);
    expect(expired?.choices).toBeUndefined();
  });

  it("an answer from the CLI side (the store, then a wake) resumes the job, which edits the question", async () => {
    await start();
    const job = await core.enqueue("say hi");
    const asked = await question();
    const [pending] = await core.storage.approvals.pending();
    const answered = await core.storage.approvals.answer(
      pending?.id as string,
      "once",
      "cli",
      core.clock.now(),
    );
    expect(answered?.state).toBe("allowed");
    await core.storage.queue.wake(job.id);
    await core.waitForJob(job.id, isDone);
    await waitFor(() =>
      core.platform
        .shown(CHAT_ID)
        .some((m) => m.messageId === asked.messageId && m.text.endsWith("✅ Allowed once by cli.")),
    );
  });

  it("a deny rule refuses the call without asking; an allow rule runs it", async () => {
    await start();
    core.model.script(
      {
        toolUses: [
          { id: "toolu_w1", name: "write", input: { path: "notes/a.md", content: "a" } },
          { id: "toolu_w2", name: "write", input: { path: "secrets.txt", content: "b" } },
        ],
      },
      { text: "wrote" },
    );
    const job = await core.enqueue("write two files");
    await core.waitForJob(job.id, isDone);
    const [allowed, denied] = await results(job);
    expect(allowed).toMatchObject({ content: "wrote 1 bytes to notes/a.md" });
    expect(denied).toMatchObject({ is_error: true });
    expect(denied?.content).toBe(
      "write: the owner's approvals policy refuses this call (write **: deny)",
    );
    expect(core.platform.shown(CHAT_ID).some((m) => m.choices)).toBe(false);
  });
});

describe("approvals of a subagent", () => {
  it("asks in the chat of the job that started it, and the parent answers once it ran", async () => {
    core = await openCore({
      files: {
        "agents/pickle/AGENT.md": DELEGATING_PICKLE,
        "agents/researcher/AGENT.md": RESEARCHER_AGENT.replace(
          "tools: [read]",
          "tools: [bash]\napprovals:\n  bash: ask",
        ),
      },
      defaultReply: (request) =>
        isResearcher(request) ? echoHiModel(request) : delegatingModel(["look"])(request),
    });
    core.start({ bus: true });
    const parent = await core.enqueue("research it");
    const asked = await question();
    expect(asked.text).toContain("researcher wants to run bash: echo hi");
    await core.platform.pressButton({
      messageId: asked.messageId,
      choiceId: asked.choices?.[0]?.id as string,
    });
    await core.waitForJob(parent.id, isDone);
    await waitFor(() => core.platform.texts(CHAT_ID).includes("answer: result: hi"));
  });
});
