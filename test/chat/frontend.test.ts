/**
 * ChatFrontend, DeferredChatFrontend and OutboxDelivery in-process: replies streamed and
 * delivered to the in-memory chat platform, through the SQLite outbox of a temp workspace,
 * on the test clock.
 */
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { silentLogger } from "../../src/base/log.js";
import { DeferredChatFrontend } from "../../src/chat/deferred.js";
import { OutboxDelivery } from "../../src/chat/delivery.js";
import { ChatFrontend } from "../../src/chat/frontend.js";
import { OutboxFiles } from "../../src/chat/outbox-files.js";
import type { ReplyTarget, Storage } from "../../src/ports/index.js";
import { openStorage } from "../../src/storage/index.js";
import { FakeChatPlatform, rateLimited, refused, serverError } from "../fakes/chat-platform.js";
import { TestClock } from "../helpers/clock.js";
import { testConfig } from "../helpers/config.js";
import { waitFor } from "../helpers/wait.js";
import { makeWorkspace, type TempWorkspace } from "../helpers/workspace.js";

const CHAT = "42";
const target: ReplyTarget = { kind: "telegram", chatId: CHAT };

let ws: TempWorkspace;
let storage: Storage;
let clock: TestClock;
let platform: FakeChatPlatform;
let delivery: OutboxDelivery;
const loops: AbortController[] = [];

function frontend(editIntervalMs: number): ChatFrontend {
  return new ChatFrontend({
    platform,
    outbox: storage.outbox,
    delivery,
    clock,
    logger: silentLogger(),
    editIntervalMs,
  });
}

/** Runs the outbox retry loop until the test ends. */
function runRetryLoop(): void {
  const controller = new AbortController();
  loops.push(controller);
  void delivery.run(controller.signal);
}

/** What the core sent or edited, successfully, in order. */
function textCalls(): string[] {
  return platform.calls
    .filter((call) => call.method !== "typing" && call.error === null)
    .map((call) => `${call.method} ${call.text}`);
}

beforeEach(async () => {
  ws = makeWorkspace();
  clock = new TestClock();
  storage = await openStorage(testConfig(ws.dir), clock);
  platform = new FakeChatPlatform({ maxMessageLength: 40 });
  delivery = new OutboxDelivery({
    platform,
    outbox: storage.outbox,
    files: new OutboxFiles(join(ws.dir, "history")),
    holder: "test",
    clock,
    logger: silentLogger(),
    pollMs: 10,
  });
});

afterEach(async () => {
  for (const loop of loops.splice(0)) loop.abort();
  await storage.close();
  ws.remove();
});

describe("ChatFrontend: streaming", () => {
  it("sends the first text, then edits the same message as the reply grows", async () => {
    const reply = frontend(0).openReply(target, { jobId: "j1" });
    reply.update("Pickles");
    await waitFor(() => platform.texts(CHAT)[0] === "Pickles", "the first text");
    reply.update("Pickles are");
    await waitFor(() => platform.texts(CHAT)[0] === "Pickles are", "the edit");
    await reply.finish("Pickles are great.");
    await delivery.settled();
    expect(platform.texts(CHAT)).toEqual(["Pickles are great."]);
    expect(platform.succeeded("send")).toHaveLength(1);
  });

  it("throttles edits: text that arrives within the interval goes out with the next edit", async () => {
    // The test clock stands still, so the next edit is never due before finish().
    const reply = frontend(60_000).openReply(target, { jobId: "j1" });
    reply.update("One");
    await waitFor(() => platform.texts(CHAT).length === 1, "the first text");
    reply.update("One two");
    reply.update("One two three");
    await reply.finish("One two three four.");
    await delivery.settled();
    expect(textCalls()).toEqual(["send One", "edit One two three four."]);
  });

  it("throttles edits to the platform's own interval when it is longer (Slack's chat.update)", async () => {
    platform = new FakeChatPlatform({ maxMessageLength: 40, editIntervalMs: 60_000 });
    delivery = new OutboxDelivery({
      platform,
      outbox: storage.outbox,
      files: new OutboxFiles(join(ws.dir, "history")),
      holder: "test",
      clock,
      logger: silentLogger(),
      pollMs: 10,
    });
    const reply = frontend(0).openReply(target, { jobId: "j1" });
    reply.update("One");
    await waitFor(() => platform.texts(CHAT).length === 1, "the first text");
    reply.update("One two");
    // Time for an edit the interval should hold back (a slow host only lets more through).
    await sleep(200);
    await reply.finish("One two three.");
    await delivery.settled();
    expect(textCalls()).toEqual(["send One", "edit One two three."]);
  });

  it("shows typing until text appears", async () => {
    const reply = frontend(0).openReply(target, { jobId: "j1" });
    reply.typing();
    expect(platform.succeeded("typing")).toHaveLength(1);
    await reply.finish("Done.");
    await delivery.settled();
    expect(platform.texts(CHAT)).toEqual(["Done."]);
  });

  it("continues in new messages past the platform's limit", async () => {
    const reply = frontend(0).openReply(target, { jobId: "j1" });
    const long = "The first sentence is here. The second sentence follows it. And a third one.";
    reply.update(long.slice(0, 30));
    await waitFor(() => platform.texts(CHAT).length === 1);
    reply.update(long);
    await waitFor(() => platform.texts(CHAT).length > 1, "a second message");
    await reply.finish(long);
    await delivery.settled();
    const texts = platform.texts(CHAT);
    expect(texts.length).toBeGreaterThan(1);
    for (const text of texts) expect(text.length).toBeLessThanOrEqual(40);
    expect(texts.join(" ")).toBe(long);
  });

  it("waits out a 429 while streaming, then shows the text", async () => {
    platform.failNext("send", rateLimited(0.05));
    const reply = frontend(0).openReply(target, { jobId: "j1" });
    reply.update("Hello");
    await waitFor(() => platform.texts(CHAT)[0] === "Hello", "the text after the 429");
    expect(platform.calls.filter((call) => call.error !== null)).toHaveLength(1);
    await reply.finish("Hello.");
    await delivery.settled();
    expect(platform.texts(CHAT)).toEqual(["Hello."]);
  });
});

describe("ChatFrontend: the final reply", () => {
  it("splits a long reply at the platform's limit", async () => {
    const text = `${"word ".repeat(20).trim()}\n\n${"more ".repeat(10).trim()}`;
    await frontend(0).openReply(target, { jobId: "j1" }).finish(text);
    await delivery.settled();
    const texts = platform.texts(CHAT);
    expect(texts.length).toBeGreaterThan(2);
    for (const part of texts) expect(part.length).toBeLessThanOrEqual(40);
    expect(texts.join(" ").replace(/\s+/g, " ")).toBe(text.replace(/\s+/g, " "));
  });

  it("falls back to plain text when the platform rejects the Markdown", async () => {
    platform.rejectMarkdown = true;
    const reply = frontend(0).openReply(target, { jobId: "j1" });
    reply.update("a *broken");
    await waitFor(() => platform.texts(CHAT).length === 1);
    await reply.finish("a *broken* _reply");
    await delivery.settled();
    expect(platform.shown(CHAT)).toEqual([
      { messageId: expect.any(String), text: "a *broken* _reply", format: "plain" },
    ]);
    expect((await storage.outbox.get("job:j1"))?.state).toBe("delivered");
  });

  it("delivers a resumed job's reply once", async () => {
    await frontend(0).openReply(target, { jobId: "j1" }).finish("The answer.");
    await delivery.settled();
    // The job ran again (a crash after delivery, before completion) and resumed from history.
    await frontend(0).openReply(target, { jobId: "j1" }).finish("The answer.");
    await delivery.settled();
    expect(platform.texts(CHAT)).toEqual(["The answer."]);
    expect(platform.succeeded("send")).toHaveLength(1);
  });

  it("lets a retried job continue the message its failed attempt streamed", async () => {
    const first = frontend(0).openReply(target, { jobId: "j1" });
    first.update("Half an ans");
    await waitFor(() => platform.texts(CHAT).length === 1);
    // The attempt failed here; the retry opens the same job's reply again.
    await frontend(0).openReply(target, { jobId: "j1" }).finish("A whole answer.");
    await delivery.settled();
    expect(platform.texts(CHAT)).toEqual(["A whole answer."]);
    expect(platform.succeeded("send")).toHaveLength(1);
  });

  it("adds the failure notice to the text streamed so far", async () => {
    const reply = frontend(0).openReply(target, { jobId: "j1" });
    reply.update("Partial");
    await waitFor(() => platform.texts(CHAT).length === 1);
    await reply.fail("Stopped.");
    await delivery.settled();
    expect(platform.texts(CHAT)).toEqual(["Partial\n\nStopped."]);
  });

  it("waits out a 429 on delivery: kept pending until retry_after, then sent by the retry loop", async () => {
    platform.failNext("send", rateLimited(30));
    await frontend(0).openReply(target, { jobId: "j1" }).finish("Later.");
    await delivery.settled();
    const pending = await storage.outbox.get("job:j1");
    expect(pending).toMatchObject({ state: "pending", attempts: 1 });
    expect(pending?.nextAttemptAt).toBeGreaterThanOrEqual(clock.now() + 30_000);
    expect(await storage.outbox.due("telegram", clock.now(), 10)).toEqual([]);
    expect(platform.texts(CHAT)).toEqual([]);

    runRetryLoop();
    clock.advance(30_000 + 10_000);
    await waitFor(() => platform.texts(CHAT)[0] === "Later.", "the retried delivery");
    expect(await storage.outbox.get("job:j1")).toMatchObject({ state: "delivered" });
  });

  it("retries a 5xx from the outbox, and keeps a reply the platform refused for good", async () => {
    platform.failNext("send", serverError());
    await frontend(0).openReply(target, { jobId: "j1" }).finish("Soon.");
    await delivery.settled();
    expect(await storage.outbox.get("job:j1")).toMatchObject({ state: "pending" });

    platform.failNext("send", refused());
    await frontend(0).openReply({ kind: "telegram", chatId: "gone" }, { jobId: "j2" }).finish("x");
    await delivery.settled();
    expect(await storage.outbox.get("job:j2")).toMatchObject({ state: "failed" });

    runRetryLoop();
    clock.advance(600_000);
    await waitFor(() => platform.texts(CHAT)[0] === "Soon.", "the retried delivery");
    expect(await storage.outbox.get("job:j2")).toMatchObject({ state: "failed" });
  });
});

describe("DeferredChatFrontend: a platform this process cannot send to", () => {
  function deferred(): DeferredChatFrontend {
    return new DeferredChatFrontend({
      kind: "telegram",
      outbox: storage.outbox,
      clock,
      logger: silentLogger(),
    });
  }

  it("leaves the reply in the outbox, once per job, for the process with the platform", async () => {
    const reply = deferred().openReply(target, { jobId: "j1" });
    reply.typing();
    reply.update("Pick");
    await reply.finish("Pickled.");
    // A retry of the job that finishes again changes nothing.
    await deferred().openReply(target, { jobId: "j1" }).finish("Pickled again.");
    expect(platform.calls).toEqual([]);
    expect(await storage.outbox.get("job:j1")).toMatchObject({
      state: "pending",
      text: "Pickled.",
    });

    runRetryLoop();
    await waitFor(() => platform.texts(CHAT)[0] === "Pickled.", "the delivery");
    expect(platform.texts(CHAT)).toEqual(["Pickled."]);
  });

  it("leaves a failure in the outbox with the text the agent had written", async () => {
    const reply = deferred().openReply(target, { jobId: "j2" });
    reply.update("Half a");
    await reply.fail("⚠️ the model is unavailable");
    expect(await storage.outbox.get("job:j2")).toMatchObject({
      state: "pending",
      text: "Half a\n\n⚠️ the model is unavailable",
    });
  });
});
