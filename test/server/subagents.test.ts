/**
 * Agents that delegate and wait, in-process: a `subagent` call becomes a child job, the
 * parent parks (holding no worker) until the child ends, and resumes with the child's
 * answer as the call's result. The real SDK against the fake model, which answers each
 * agent by its system prompt.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import type { ChatMessage, Job, ToolResultBlock } from "../../src/ports/index.js";
import { AgentWorker, PARKED_JOBS_WOKEN } from "../../src/server/agent-worker.js";
import { CHAT_ID, type Core, type CoreOptions, openCore } from "../helpers/core.js";
import {
  isResearcher,
  lastResults,
  delegatingModel as model,
  DELEGATING_PICKLE as PICKLE,
  RESEARCHER_AGENT as RESEARCHER,
} from "../helpers/subagents.js";
import { waitFor } from "../helpers/wait.js";

let core: Core;

afterEach(async () => {
  await core?.close();
});

const CODER = `---
name: Coder
description: Writes code
tools: [read]
---
You write code.`;

async function start(tasks: string[], options: CoreOptions = {}): Promise<Core> {
  core = await openCore({
    files: {
      "agents/pickle/AGENT.md": PICKLE,
      "agents/researcher/AGENT.md": RESEARCHER,
      "agents/coder/AGENT.md": CODER,
    },
    defaultReply: model(tasks),
    ...options,
  });
  return core;
}

async function childrenOf(job: Job): Promise<Job[]> {
  return core.storage.queue.list({ parentId: job.id });
}

async function stored(job: Job): Promise<ChatMessage[]> {
  const fresh = await core.storage.queue.get(job.id);
  if (!fresh?.sessionId) throw new Error(`job ${job.id} has no session`);
  return core.storage.history.loadContext(fresh.sessionId, 1000);
}

function resultsIn(messages: ChatMessage[]): ToolResultBlock[] {
  return messages.flatMap((message) =>
    message.content.filter((block): block is ToolResultBlock => block.type === "tool_result"),
  );
}

const isDone = (job: Job) => job.state === "done";

describe("subagent: a task handed to another agent through the queue", () => {
  it("runs the child as its own job and gives its answer to the parent, which answers the chat", async () => {
    await start(["pickle history"]);
    core.start();
    const parent = await core.enqueue("Tell me about pickles");
    await core.waitForJob(parent.id, isDone);
    const [child] = await childrenOf(parent);
    expect(child).toMatchObject({
      agentId: "researcher",
      state: "done",
      parentId: parent.id,
      mode: "job",
      replyTo: { kind: "silent" },
      sessionKey: `subagent:1:${parent.id}:toolu_sub_0`,
    });
    expect(resultsIn(await stored(parent))).toEqual([
      { type: "tool_result", tool_use_id: "toolu_sub_0", content: "found: pickle history" },
    ]);
    await waitFor(() => core.platform.texts(CHAT_ID).includes("answer: found: pickle history"));
    // Pickle: the call, then the answer; the researcher: one call. Nothing twice.
    expect(core.model.requests).toHaveLength(3);
    const parked = core.lines.filter((line) => line.msg === "job waiting for a subagent job");
    expect(parked.length).toBeGreaterThanOrEqual(1);
  });

  it("runs two calls of one turn in parallel and resumes the parent once with both answers", async () => {
    await start(["brine", "vinegar"]);
    core.start();
    const parent = await core.enqueue("Compare brine and vinegar pickles");
    await core.waitForJob(parent.id, isDone);
    const children = await childrenOf(parent);
    expect(children.map((child) => child.state)).toEqual(["done", "done"]);
    expect(resultsIn(await stored(parent)).map((result) => result.content)).toEqual([
      "found: brine",
      "found: vinegar",
    ]);
    // Pickle twice (call, answer) and each researcher once.
    expect(core.model.requests).toHaveLength(4);
  });

  it("does not deadlock with agent_concurrency 1: the waiting parent frees the only slot", async () => {
    await start(["brine", "dill"], { concurrency: 1 });
    core.start();
    const parent = await core.enqueue("Research two things");
    const done = await core.waitForJob(parent.id, isDone);
    expect(done.state).toBe("done");
    expect((await childrenOf(parent)).every(isDone)).toBe(true);
  });

  it("gives the parent a child's failure as an error result, and the parent still answers", async () => {
    await start(["x"], {
      defaultReply: (request) =>
        isResearcher(request)
          ? { error: { status: 400, message: "researcher refused" } }
          : model(["x"])(request),
    });
    core.start();
    const parent = await core.enqueue("Try it");
    await core.waitForJob(parent.id, isDone);
    const [result] = resultsIn(await stored(parent));
    expect(result?.is_error).toBe(true);
    expect(result?.content).toMatch(
      /the researcher subagent \(job \w+\) failed: .*researcher refused/,
    );
  });

  it("gives the parent a child that was stopped as an error result saying so, and the parent answers", async () => {
    // The researcher never answers; its job is stopped (as `picklebot jobs cancel` or /stop would).
    await start(["slow"], {
      defaultReply: (request) =>
        isResearcher(request) ? { hang: true } : model(["slow"])(request),
    });
    core.start();
    const parent = await core.enqueue("Research slowly");
    await core.waitForJob(parent.id, (job) => job.state === "waiting");
    const [child] = await childrenOf(parent);
    await core.waitForJob(child?.id as string, (job) => job.state === "running");
    expect(core.worker.stopSession(child?.sessionKey as string)).toBe(true);
    await core.waitForJob(child?.id as string, (job) => job.state === "stopped");
    await core.waitForJob(parent.id, isDone);
    const [result] = resultsIn(await stored(parent));
    expect(result).toMatchObject({ is_error: true });
    expect(result?.content).toMatch(
      /the researcher subagent \(job \w+\) was stopped before it finished/,
    );
  });

  it("refuses an agent outside the caller's subagents list, naming the ones it may call", async () => {
    core = await openCore({
      files: {
        "agents/pickle/AGENT.md": PICKLE,
        "agents/researcher/AGENT.md": RESEARCHER,
        "agents/coder/AGENT.md": CODER,
      },
      defaultReply: model(["write code"], "coder"),
    });
    core.start();
    const parent = await core.enqueue("Write code");
    await core.waitForJob(parent.id, isDone);
    expect(await childrenOf(parent)).toEqual([]);
    const [result] = resultsIn(await stored(parent));
    expect(result?.content).toBe(
      'subagent: "coder" is not an agent you can call; you can call: researcher',
    );
  });

  it("stops at the depth limit: a subagent at depth 3 cannot call another", async () => {
    await start(["deeper"]);
    core.start();
    const job = await core.enqueue("go", { sessionKey: "subagent:3:parent:call", mode: "job" });
    await core.waitForJob(job.id, isDone);
    const [result] = resultsIn(await stored(job));
    expect(result?.content).toMatch(/subagents may nest 3 deep and this one is at depth 3/);
  });

  it("wait: false answers at once with the child's job id", async () => {
    await start([]);
    core.model.script({
      toolUses: [
        {
          id: "toolu_bg",
          name: "subagent",
          input: { agent: "researcher", task: "t", wait: false },
        },
      ],
    });
    core.start();
    const parent = await core.enqueue("Start it in the background");
    await core.waitForJob(parent.id, isDone);
    const [child] = await childrenOf(parent);
    expect(child).toBeDefined();
    const [result] = resultsIn(await stored(parent));
    expect(result?.content).toContain(`Started job ${child?.id}`);
    await core.waitForJob(child?.id as string, isDone);
  });

  it("stops a child still running at subagent_timeout_s and gives the parent a timeout error", async () => {
    // The researcher never answers.
    await start(["slow"], {
      subagentTimeoutS: 60,
      defaultReply: (request) =>
        isResearcher(request) ? { hang: true } : model(["slow"])(request),
    });
    core.start();
    const parent = await core.enqueue("Research slowly");
    await core.waitForJob(parent.id, (job) => job.state === "waiting");
    const [child] = await childrenOf(parent);
    await core.waitForJob(child?.id as string, (job) => job.state === "running");
    core.clock.advance(61_000);
    await core.waitForJob(parent.id, isDone);
    const stopped = await core.waitForJob(child?.id as string, (job) => job.state === "stopped");
    expect(stopped.lastError).toBe("stopped by the user");
    const [result] = resultsIn(await stored(parent));
    expect(result).toMatchObject({ is_error: true });
    expect(result?.content).toMatch(/did not finish within 60 s and was stopped/);
  });

  it("/stop of a waiting parent stops it and its child, and closes the parent's turn", async () => {
    // The researcher never answers.
    await start(["slow"], {
      defaultReply: (request) =>
        isResearcher(request) ? { hang: true } : model(["slow"])(request),
    });
    core.start({ bus: true });
    const parent = await core.enqueue("Research slowly");
    await core.waitForJob(parent.id, (job) => job.state === "waiting");
    const [child] = await childrenOf(parent);
    await core.waitForJob(child?.id as string, (job) => job.state === "running");
    core.platform.push({ text: "/stop" });
    await core.waitForJob(parent.id, (job) => job.state === "stopped");
    await core.waitForJob(child?.id as string, (job) => job.state === "stopped");
    const [result] = resultsIn(await stored(parent));
    expect(result).toMatchObject({
      is_error: true,
      content: expect.stringMatching(/stopped by the user/),
    });
    await waitFor(() =>
      core.platform.texts(CHAT_ID).includes("Stopping the reply that was waiting."),
    );
  });
});

describe("a process that dies between parking a job and looking at its wait", () => {
  it.each(["memory", "sqlite"] as const)(
    "%s: the child ended before the park, so nothing woke the parent; the next worker wakes it at start",
    async (queue) => {
      await start(["brine"], { queue, concurrency: 2 });
      const real = core.storage.queue;
      // The first worker parks the parent only once its child is done (so the child's end
      // found it running and woke nothing), then dies before it looks at the child.
      let parked = false;
      const overrides: Partial<typeof real> = {
        park: async (job, parking) => {
          const [child] = await childrenOf(job);
          await core.waitForJob(child?.id as string, isDone);
          parked = await real.park(job, parking);
          return parked;
        },
        get: async (id) => {
          if (parked) throw new Error("the process died");
          return real.get(id);
        },
      };
      const dying = new Proxy(real, {
        get: (target, name) => {
          const value = Reflect.get(overrides, name) ?? Reflect.get(target, name);
          return typeof value === "function" ? value.bind(target) : value;
        },
      });
      const first = new AgentWorker({ ...core.workerOptions, queue: dying });
      const stopFirst = new AbortController();
      const crashed = first.run(stopFirst.signal).catch((error: unknown) => error);
      const parent = await core.enqueue("Tell me about brine");
      expect(await crashed).toMatchObject({ message: "the process died" });
      expect(await real.get(parent.id)).toMatchObject({ state: "waiting" });

      core.start();
      await core.waitForJob(parent.id, isDone, "the parent to be woken and finish");
      expect(resultsIn(await stored(parent))).toMatchObject([{ content: "found: brine" }]);
      expect(core.lines.find((line) => line.msg === PARKED_JOBS_WOKEN)).toMatchObject({
        woken: 1,
      });
    },
  );
});

describe("a snoozed tool call", () => {
  it("parks the job until the time a 429 named, then runs the call again and answers", async () => {
    let hits = 0;
    const site = createServer((_request, response) => {
      hits += 1;
      response.writeHead(hits === 1 ? 429 : 200, { "retry-after": "600" });
      response.end(hits === 1 ? "slow down" : "the page");
    });
    await new Promise<void>((resolve) => site.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(site.address() as AddressInfo).port}/`;
    try {
      core = await openCore({
        files: {
          "agents/pickle/AGENT.md":
            "---\nname: Pickle\ndescription: x\ntools: [web_fetch]\n---\nYou are Pickle.",
        },
      });
      core.model.script(
        { toolUses: [{ id: "toolu_web", name: "web_fetch", input: { url } }] },
        (request) => ({
          text: `read: ${lastResults(request)
            .map((r) => r.content)
            .join()}`,
        }),
      );
      core.start();
      const job = await core.enqueue("fetch it");
      const parked = await core.waitForJob(job.id, (j) => j.state === "waiting");
      expect(parked.waitingFor).toEqual({ kind: "time" });
      expect(hits).toBe(1);
      core.clock.set(parked.runAt + 1);
      await core.waitForJob(job.id, isDone);
      expect(hits).toBe(2);
      expect(core.model.requests).toHaveLength(2);
    } finally {
      site.close();
    }
  });
});
