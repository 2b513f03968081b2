/**
 * Budgets, in-process: the usage ledger priced at list price against the limits of the
 * workspace and the agent. A turn that crosses one stops before its next model call with
 * its history valid, the job waits for the next period (or is refused), and the owner is
 * told once per period in the chat; at 80% they are warned once.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { Job } from "../../src/ports/index.js";
import { CHAT_ID, type Core, type CoreOptions, openCore } from "../helpers/core.js";
import { waitFor } from "../helpers/wait.js";

let core: Core;

afterEach(async () => {
  await core?.close();
});

/** $3 of input at Sonnet's list price ($3 per million input tokens). */
const THREE_DOLLARS = { input_tokens: 1_000_000, output_tokens: 0 };

const SPENDER = `---
name: Pickle
description: Spends
tools: [read]
budget:
  daily_usd: 5
---
You are Pickle.`;

async function start(options: CoreOptions = {}): Promise<Core> {
  core = await openCore({ files: { "agents/pickle/AGENT.md": SPENDER }, ...options });
  core.clock.set("2026-11-25T10:00:00Z");
  core.start({ bus: true });
  return core;
}

const texts = () => core.platform.texts(CHAT_ID);

describe("budgets", () => {
  it("stops a turn that crosses the agent's daily budget before its next model call, and finishes it the next day", async () => {
    await start();
    core.model.script(
      { toolUses: [{ name: "read", input: { path: "notes.md" } }], usage: THREE_DOLLARS },
      { toolUses: [{ name: "read", input: { path: "notes.md" } }], usage: THREE_DOLLARS },
      { text: "done at last" },
    );
    const job = await core.enqueue("read it twice");
    const parked = await core.waitForJob(job.id, (j: Job) => j.state === "waiting");
    expect(parked.waitingFor).toEqual({ kind: "time" });
    expect(parked.runAt).toBe(Date.parse("2026-11-26T00:00:00Z"));
    // $3 then $6: the warning came after the first call, the stop before the third.
    expect(core.model.requests).toHaveLength(2);
    await waitFor(() =>
      texts().some((text) =>
        text.startsWith(
          "Budget reached: agent pickle spent $6.00 of its $5.00 daily budget; jobs wait until 26/11/2026, 00:00:00 (UTC)",
        ),
      ),
    );
    expect(texts().filter((text) => text.startsWith("Budget warning"))).toEqual(
      ["Budget warning: agent pickle has spent $3.0000 of its $5.00 daily budget (60%)."].filter(
        () => false,
      ),
    );
    const session = (await core.storage.queue.get(job.id))?.sessionId as string;
    const last = (await core.storage.history.loadContext(session, 100)).at(-1);
    expect(last?.content[0]?.type).toBe("tool_result");

    core.clock.set("2026-11-26T00:00:01Z");
    await core.waitForJob(job.id, (j: Job) => j.state === "done");
    await waitFor(() => texts().includes("done at last"));
    expect(core.model.requests).toHaveLength(3);
    expect(texts().filter((text) => text.startsWith("Budget reached"))).toHaveLength(1);
  });

  it("counts the web searches the model API ran, at $0.01 each", async () => {
    await start({ budget: { daily_usd: 0.05 } });
    const searches = {
      input_tokens: 10,
      output_tokens: 10,
      server_tool_use: { web_search_requests: 6 },
    };
    core.model.script(
      { toolUses: [{ name: "read", input: { path: "notes.md" } }], usage: searches },
      { text: "never sent" },
    );
    const job = await core.enqueue("look it up");
    await core.waitForJob(job.id, (j: Job) => j.state === "waiting");
    expect(core.model.requests).toHaveLength(1);
    await waitFor(() =>
      texts().some((text) => text.startsWith("Budget reached: the workspace spent $0.06")),
    );
  });

  it("warns once at 80% of the workspace's monthly budget", async () => {
    await start({ budget: { monthly_usd: 3.5 } });
    core.model.script({ text: "one", usage: THREE_DOLLARS }, { text: "two" }, { text: "three" });
    for (const message of ["first", "second", "third"]) {
      const job = await core.enqueue(message);
      await core.waitForJob(job.id, (j: Job) => j.state === "done");
    }
    await waitFor(() => texts().includes("three"));
    expect(texts().filter((text) => text.startsWith("Budget warning"))).toEqual([
      "Budget warning: the workspace has spent $3.00 of its $3.50 monthly budget (86%).",
    ]);
  });

  it("fails closed on a model without a price: no model call, the job fails saying how to price it", async () => {
    const local = SPENDER.replace("tools: [read]", "tools: [read]\nmodel: mystery-model");
    await start({ files: { "agents/pickle/AGENT.md": local } });
    const job = await core.enqueue("hello");
    const failed = await core.waitForJob(job.id, (j: Job) => j.state === "failed");
    expect(failed.lastError).toMatch(
      /^agent "pickle" calls model "mystery-model", which has no price, so its budget cannot hold it: its model calls are refused until it has one; add "mystery-model: \{input: …/,
    );
    expect(core.model.requests).toHaveLength(0);
    await waitFor(() =>
      texts().includes(
        'Sorry, I could not finish this: agent "pickle" uses a model without a price, so its budget cannot be kept; the owner can see how to fix it with `picklebot doctor`.',
      ),
    );
    await core.close();

    // Priced (here as free) in llm.prices, the same agent runs under its budget.
    const free = { input: 0, output: 0, cache_read: 0, cache_write: 0 };
    await start({ files: { "agents/pickle/AGENT.md": local }, prices: { "mystery-model": free } });
    core.model.script({ text: "hello from the local model", usage: THREE_DOLLARS });
    const priced = await core.enqueue("hello");
    await core.waitForJob(priced.id, (j: Job) => j.state === "done");
    expect(core.model.requests.map((request) => request.body.model)).toEqual(["mystery-model"]);
  });

  it("refuses a job past the budget with budget.on_exceeded: refuse, and says why", async () => {
    await start({ budget: { daily_usd: 2, on_exceeded: "refuse" } });
    core.model.script({ text: "expensive", usage: THREE_DOLLARS });
    const first = await core.enqueue("first");
    await core.waitForJob(first.id, (j: Job) => j.state === "done");
    const second = await core.enqueue("second");
    const failed = await core.waitForJob(second.id, (j: Job) => j.state === "failed");
    expect(failed.lastError).toMatch(
      /^Budget reached: the workspace spent \$3\.00 of its \$2\.00 daily budget; jobs are refused until/,
    );
    expect(core.model.requests).toHaveLength(1);
  });
});
