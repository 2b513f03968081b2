/**
 * Heartbeats in-process (test/helpers/core.ts): the owner sets one with `/heartbeat` in the
 * chat on the fake Telegram, the ChatHeartbeatWorker fires its ticks on the test clock, the
 * AgentWorker runs them against the fake Anthropic API and the chat senders deliver what
 * is worth saying. A tick runs only in an idle chat, sends nothing on NOTHING_TO_REPORT,
 * coalesces after downtime, fires once across two leaders, and stops at a reached budget.
 */
import { afterEach, describe, expect, it } from "vitest";
import { reachedBudget, unpricedBudgetedModel } from "../../src/agents/budget.js";
import { loadAgents } from "../../src/agents/definition.js";
import { configuredHeartbeats } from "../../src/cron/chat-heartbeats.js";
import { ChatHeartbeatWorker } from "../../src/cron/heartbeat-worker.js";
import type { Job } from "../../src/ports/index.js";
import { lastUserText } from "../fakes/anthropic.js";
import { CHAT_ID, type Core, type CoreOptions, OWNER_ID, openCore } from "../helpers/core.js";
import { recordingLogger } from "../helpers/log.js";
import { waitFor } from "../helpers/wait.js";

let core: Core;

afterEach(async () => {
  await core?.close();
});

/** A Wednesday at 10:00 UTC: ticks of every 30m fall at 10:30, 11:00… */
const START = "2026-11-25T10:00:00Z";

async function startChat(options: CoreOptions = {}): Promise<Core> {
  core = await openCore({ queue: "sqlite", ...options });
  core.clock.set(START);
  core.start({ bus: true });
  await waitFor(() => core.platform.state === "connected", "the bus to connect");
  return core;
}

const texts = (chatId = CHAT_ID) => core.platform.texts(chatId);

function say(text: string, userId = OWNER_ID, chatId = CHAT_ID) {
  return core.platform.push({ chatId, userId, text });
}

/** Says `text` and waits for the chat's answer, which it returns. */
async function command(text: string, userId = OWNER_ID, chatId = CHAT_ID): Promise<string> {
  const before = texts(chatId).length;
  say(text, userId, chatId);
  return waitFor(() => texts(chatId)[before] ?? null, `an answer to ${text}`);
}

/** A leader's heartbeat worker on the core's storage (a second one is another process). */
function heartbeatWorker(logLines = recordingLogger()): ChatHeartbeatWorker {
  const { storage, config, clock, ws } = core;
  const { agents } = loadAgents(ws.dir);
  return new ChatHeartbeatWorker({
    store: storage.schedules,
    cronState: storage.cronState,
    configured: configuredHeartbeats(config),
    queue: storage.queue,
    outbox: storage.outbox,
    reachedBudget: (agentId) =>
      reachedBudget({ ledger: storage.usage, config, agents, clock }, agentId),
    unpricedModel: (agentId) => unpricedBudgetedModel({ config, agents }, agentId),
    clock,
    logger: logLines.logger,
    maxAttempts: 3,
  });
}

/** The heartbeat's tick jobs, oldest first. */
async function tickJobs(): Promise<Job[]> {
  const jobs = await core.storage.queue.list({ sessionKeyPrefix: "heartbeat:" });
  return jobs.reverse();
}

/** Waits until `count` tick jobs exist and are all done. */
async function ticksDone(count: number): Promise<Job[]> {
  return waitFor(async () => {
    const jobs = await tickJobs();
    return jobs.length === count && jobs.every((job) => job.state === "done") ? jobs : null;
  }, `${count} heartbeat ticks to be done`);
}

/** Model calls in the ledger whose session is a heartbeat's. */
async function heartbeatCalls() {
  const calls = await core.storage.usage.calls({ since: 0 });
  return calls.filter((call) => call.sessionKey.startsWith("heartbeat:"));
}

describe("heartbeats", () => {
  it("the owner sets, shows and stops the chat's heartbeat with /heartbeat", async () => {
    await startChat();
    expect(await command("/heartbeat")).toBe(
      "This chat has no heartbeat. Write /heartbeat every 30m <what to check>, /heartbeat off, or /heartbeat alone to see it.",
    );
    expect(await command("/heartbeat every 30m is my flight on time?")).toBe(
      'Heartbeat on: every 30 minutes when the chat has been quiet that long, pickle checks "is my flight on time?"; next tick at 2026-11-25 10:30:00 UTC. It says nothing when there is nothing to report; /heartbeat off stops it.',
    );
    expect(await command("/heartbeat")).toMatch(
      /^Heartbeat: every 30 minutes .*"is my flight on time\?"/,
    );
    // Setting it again replaces it: a chat has one heartbeat.
    await command("/heartbeat every 2h check the mail");
    const active = await core.storage.schedules.list({ states: ["active"] });
    expect(active.map(({ kind, text, cron }) => ({ kind, text, cron }))).toEqual([
      { kind: "heartbeat", text: "check the mail", cron: "0 */2 * * *" },
    ]);
    // /reminders lists reminders, not the heartbeat.
    expect(await command("/reminders")).toBe("This chat has no active schedules.");
    expect(await command("/heartbeat off")).toBe("Heartbeat off: no more checks in this chat.");
    expect(await command("/heartbeat off")).toBe("This chat has no heartbeat to turn off.");
    expect(await core.storage.schedules.list({ states: ["active"] })).toEqual([]);
  });

  it("in an idle chat, a tick that finds nothing sends nothing and costs one model call; a finding is delivered", async () => {
    await startChat();
    await command("/heartbeat every 30m is my flight on time?");
    const worker = heartbeatWorker();
    core.model.script({ text: "NOTHING_TO_REPORT" }, { text: "NOTHING_TO_REPORT" });

    core.clock.set("2026-11-25T10:30:00Z");
    await worker.fireDue();
    const [first] = await ticksDone(1);
    expect(first?.sessionKey).toBe(
      `heartbeat:${first?.sessionKey.split(":")[1]}:2026-11-25T10:30:00.000Z`,
    );
    expect(lastUserText(core.model.requests[0] as never)).toMatch(
      /reply with exactly NOTHING_TO_REPORT and nothing else[\s\S]*is my flight on time\?$/,
    );
    // Nothing went to the chat; the reply is in the tick's transcript and the ledger.
    expect(await core.storage.outbox.get(`job:${first?.id}`)).toBeNull();
    const transcript = await core.storage.history.loadContext(first?.sessionId as string, 10);
    expect(transcript.at(-1)?.content).toEqual([{ type: "text", text: "NOTHING_TO_REPORT" }]);

    core.clock.set("2026-11-25T11:00:00Z");
    await worker.fireDue();
    await ticksDone(2);
    expect(core.model.requests).toHaveLength(2);
    expect(await heartbeatCalls()).toHaveLength(2);

    core.model.script({ text: "Your flight LH123 is delayed by 2 hours." });
    core.clock.set("2026-11-25T11:30:00Z");
    await worker.fireDue();
    await ticksDone(3);
    await waitFor(() => texts().includes("Your flight LH123 is delayed by 2 hours."));
    // Only the /heartbeat answer and the finding: the two silent ticks sent nothing.
    expect(texts()).toHaveLength(2);
    expect(core.model.requests).toHaveLength(3);
  });

  it("skips a tick when the person wrote within the interval before it", async () => {
    await startChat();
    await command("/heartbeat every 30m anything new?");
    const logs = recordingLogger();
    const worker = heartbeatWorker(logs);
    core.model.script({ text: "Hello!" });
    core.clock.set("2026-11-25T10:20:00Z");
    say("hi");
    await waitFor(() => texts().includes("Hello!"));
    await waitFor(async () => (await core.storage.queue.counts()).done === 1, "the chat's job");

    core.clock.set("2026-11-25T10:30:00Z");
    await worker.fireDue();
    expect(await tickJobs()).toEqual([]);
    expect(logs.lines.map((line) => line.msg)).toContain("heartbeat tick: not idle");
    expect(core.model.requests).toHaveLength(1);
    // The skipped tick is not tried again; the next one finds the chat idle.
    await worker.fireDue();
    expect(await tickJobs()).toEqual([]);
    core.model.script({ text: "NOTHING_TO_REPORT" });
    core.clock.set("2026-11-25T11:00:00Z");
    await worker.fireDue();
    await ticksDone(1);
  });

  it("after downtime, runs one catch-up tick for the missed ones, and two leaders fire it once", async () => {
    await startChat();
    await command("/heartbeat every 30m anything new?");
    core.model.script({ text: "NOTHING_TO_REPORT" });
    // Down from 10:00 to 13:10: six ticks missed.
    core.clock.set("2026-11-25T13:10:00Z");
    await Promise.all([heartbeatWorker().fireDue(), heartbeatWorker().fireDue()]);
    const [only] = await ticksDone(1);
    expect(only?.sessionKey).toMatch(/:2026-11-25T13:00:00\.000Z$/);
    await heartbeatWorker().fireDue();
    expect(await tickJobs()).toHaveLength(1);
    expect(core.model.requests).toHaveLength(1);
  });

  it("a heartbeat of picklebot.yaml runs like one set in the chat, which cannot change it", async () => {
    await startChat({
      heartbeats: { chats: { [`telegram:${CHAT_ID}`]: { every: "1h", check: "the mail" } } },
    });
    expect(await command("/heartbeat")).toMatch(
      /^Heartbeat \(set in picklebot\.yaml\): every 1 hour .* checks "the mail"; next tick at 2026-11-25 11:00:00 UTC$/,
    );
    expect(await command("/heartbeat off")).toBe(
      `This chat's heartbeat is set in picklebot.yaml (heartbeats.chats."telegram:${CHAT_ID}"); change or remove it there.`,
    );
    const worker = heartbeatWorker();
    // The worker notes when it first saw the heartbeat; no tick before that fires.
    await worker.fireDue();
    expect(await tickJobs()).toEqual([]);
    core.model.script({ text: "NOTHING_TO_REPORT" });
    core.clock.set("2026-11-25T11:00:00Z");
    await worker.fireDue();
    const [tick] = await ticksDone(1);
    expect(tick?.sessionKey).toBe(`heartbeat:config-telegram-${CHAT_ID}:2026-11-25T11:00:00.000Z`);
    await heartbeatWorker().fireDue();
    expect(await tickJobs()).toHaveLength(1);
  });

  it("stops when the budget is reached, and tells the owner once", async () => {
    // Each tick costs $3 at Sonnet's list price; the workspace may spend $5 a day.
    await startChat({ budget: { daily_usd: 5 } });
    await command("/heartbeat every 30m anything new?");
    const worker = heartbeatWorker();
    const threeDollars = { input_tokens: 1_000_000, output_tokens: 0 };
    core.model.script(
      { text: "NOTHING_TO_REPORT", usage: threeDollars },
      { text: "NOTHING_TO_REPORT", usage: threeDollars },
    );
    for (const [at, ticks] of [
      ["10:30", 1],
      ["11:00", 2],
    ] as const) {
      core.clock.set(`2026-11-25T${at}:00Z`);
      await worker.fireDue();
      await ticksDone(ticks);
    }
    // $6 spent: the next ticks run nothing, and say so once.
    for (const at of ["11:30", "12:00", "12:30"]) {
      core.clock.set(`2026-11-25T${at}:00Z`);
      await worker.fireDue();
    }
    const paused = (text: string) => text.startsWith("Heartbeat paused:");
    await waitFor(() => texts().some(paused));
    expect(texts().filter(paused)).toEqual([
      "Heartbeat paused: the workspace spent $6.00 of its $5.00 daily budget. No checks run until 2026-11-26 00:00:00 UTC; raise the budget in picklebot.yaml or the agent's AGENT.md, or send /heartbeat off.",
    ]);
    expect(await tickJobs()).toHaveLength(2);
    expect(core.model.requests).toHaveLength(2);
    // The next day the budget is new and the heartbeat runs again.
    core.model.script({ text: "NOTHING_TO_REPORT" });
    core.clock.set("2026-11-26T00:00:00Z");
    await worker.fireDue();
    await ticksDone(3);
  });

  it("under a budget, with a model that has no price, runs no tick and tells the owner once", async () => {
    const agent = "---\nname: Pickle\ndescription: Helps\nmodel: mystery-model\n---\nYou help.\n";
    await startChat({ budget: { daily_usd: 5 }, files: { "agents/pickle/AGENT.md": agent } });
    await command("/heartbeat every 30m anything new?");
    const worker = heartbeatWorker();
    for (const at of ["10:30", "11:00", "11:30"]) {
      core.clock.set(`2026-11-25T${at}:00Z`);
      await worker.fireDue();
    }
    const paused = (text: string) => text.startsWith("Heartbeat paused:");
    await waitFor(() => texts().some(paused));
    expect(texts().filter(paused)).toEqual([
      'Heartbeat paused: agent "pickle" uses model "mystery-model", which has no price, so its budget cannot be kept. No checks run until it has one (the owner can see how with `picklebot doctor`), or send /heartbeat off.',
    ]);
    expect(texts().filter((text) => text.startsWith("Sorry"))).toEqual([]);
    expect(await tickJobs()).toEqual([]);
    expect(core.model.requests).toHaveLength(0);
  });

  it("the agent's schedule tool cannot cancel the heartbeat, in the chat or in a tick", async () => {
    const agent = "---\nname: Pickle\ndescription: Helps\ntools: [schedule]\n---\nYou help.\n";
    await startChat({ files: { "agents/pickle/AGENT.md": agent } });
    await command("/heartbeat every 30m anything new?");
    const [heartbeat] = await core.storage.schedules.list({ states: ["active"] });
    const id = heartbeat?.id as string;
    const cancel = { toolUses: [{ name: "schedule", input: { action: "cancel", id } }] };
    core.model.script(cancel, { text: "I could not." }, cancel, { text: "NOTHING_TO_REPORT" });
    say("cancel the heartbeat");
    await waitFor(() => texts().includes("I could not."));
    core.clock.set("2026-11-25T11:30:00Z");
    await heartbeatWorker().fireDue();
    await ticksDone(1);
    const refusal = `schedule: "${id}" is this chat's heartbeat, which only the owner turns off (/heartbeat off)`;
    expect(lastUserText(core.model.requests[1] as never)).toContain(refusal);
    expect(lastUserText(core.model.requests[3] as never)).toContain(refusal);
    expect((await core.storage.schedules.get(id))?.state).toBe("active");
  });

  describe("refuses, saying how to fix it", () => {
    it.each([
      [
        "/heartbeat every 1s anything?",
        'Heartbeat not set: "1s" is shorter than the shortest heartbeat interval, 30 minutes (heartbeats.min_interval_m); choose a longer one.',
      ],
      [
        "/heartbeat every soon anything?",
        'Heartbeat not set: "soon" is not an interval; write it like 30m or 2h: 5, 10, 15, 20 or 30 minutes, or 1, 2, 3, 4, 6, 8, 12 or 24 hours.',
      ],
      [
        "/heartbeat every 45m anything?",
        'Heartbeat not set: "45m" does not divide an hour or a day evenly; write it like 30m or 2h: 5, 10, 15, 20 or 30 minutes, or 1, 2, 3, 4, 6, 8, 12 or 24 hours.',
      ],
      [
        "/heartbeat every 30m",
        "Heartbeat not set: say what to check. Write /heartbeat every 30m <what to check>, /heartbeat off, or /heartbeat alone to see it.",
      ],
      [
        "/heartbeat sometimes",
        '"sometimes" is not a heartbeat. Write /heartbeat every 30m <what to check>, /heartbeat off, or /heartbeat alone to see it.',
      ],
    ])("%s", async (text, answer) => {
      await startChat();
      expect(await command(text)).toBe(answer);
      expect(await core.storage.schedules.list()).toEqual([]);
    });

    it("a person who is not the owner", async () => {
      await startChat();
      // A person the owner paired: admitted, but not the owner.
      await command("let me in", "8", "8");
      const [request] = await core.storage.pairing.pending(core.clock.now());
      await core.storage.pairing.approve(request?.code as string, core.clock.now());
      expect(await command("/heartbeat every 30m anything?", "8", "8")).toBe(
        "Only the owner can see or set this chat's heartbeat.",
      );
      expect(await core.storage.schedules.list()).toEqual([]);
    });
  });
});
