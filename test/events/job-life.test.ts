/**
 * The event contract: a job's life (enqueued, a tool call, a reply delivered) publishes the
 * same events, in the same order and with the same fields, on SQLite and on PostgreSQL.
 */
import { afterEach, describe, expect, it } from "vitest";
import { announcingEnqueues } from "../../src/events/enqueued.js";
import { EventHub } from "../../src/events/hub.js";
import type { PicklebotEvent } from "../../src/ports/index.js";
import {
  CHAT_ID,
  CHAT_KEY,
  type Core,
  type CoreOptions,
  OWNER_ID,
  openCore,
} from "../helpers/core.js";
import { postgresSkipReason, useMigratedDatabase } from "../helpers/postgres.js";
import { waitFor } from "../helpers/wait.js";

/** What a job's life looks like on the stream, ids and times left out. */
const LIFE = [
  { type: "job.enqueued", agentId: "pickle", sessionKey: CHAT_KEY, attempts: 0 },
  { type: "job.started", agentId: "pickle", sessionKey: CHAT_KEY, attempts: 1 },
  { type: "job.checkpointed", agentId: "pickle", sessionKey: CHAT_KEY, attempts: 1 },
  { type: "model.started", agentId: "pickle" },
  { type: "model.ended", agentId: "pickle" },
  { type: "tool.started", agentId: "pickle", tool: "read", callId: "toolu_1" },
  { type: "tool.ended", agentId: "pickle", tool: "read", callId: "toolu_1", isError: false },
  { type: "model.started", agentId: "pickle" },
  { type: "model.ended", agentId: "pickle" },
  { type: "job.done", agentId: "pickle", sessionKey: CHAT_KEY, attempts: 1 },
];

function jobLifeContract(name: string, options: () => CoreOptions) {
  describe(`events of a job's life: ${name}`, () => {
    let core: Core | undefined;
    afterEach(async () => {
      await core?.close();
    });

    it("publishes enqueued, started, checkpointed, each call, delivered and done, in order", async () => {
      const hub = new EventHub({ instance: "local" });
      core = await openCore({ ...options(), events: hub });
      core.model.script(
        { toolUses: [{ name: "read", input: { path: "notes.md" }, id: "toolu_1" }] },
        { text: "Pickles are cucumbers." },
      );
      core.start({ bus: true });
      const queue = announcingEnqueues(core.storage.queue, hub);
      const job = await queue.enqueue({
        agentId: "pickle",
        sessionKey: CHAT_KEY,
        message: "What do my notes say?",
        mode: "chat",
        replyTo: { kind: "telegram", chatId: CHAT_ID },
      });
      // The reply may reach the chat before the worker records the job done: wait for both.
      const seen = (type: string) => hub.since(0).some((event) => event.type === type);
      await waitFor(
        () => seen("message.delivered") && seen("job.done"),
        "the reply's delivery and the job's end",
      );
      const events = hub.since(0);
      const life = events.filter((event) => event.type !== "message.delivered");
      expect(life).toMatchObject(LIFE);
      const session = (await core.storage.queue.get(job.id))?.sessionId;
      for (const event of life) {
        expect(event).toMatchObject({ jobId: job.id, instance: "local" });
        if (event.type.startsWith("model.") || event.type.startsWith("tool.")) {
          expect(event).toMatchObject({ sessionId: session });
        }
      }
      // (With 1-hour cache writes, when the prompt is long enough to cache, `cacheWrite1h` too.)
      expect(ended(events).usage).toMatchObject({
        input: expect.any(Number),
        output: expect.any(Number),
        cacheRead: expect.any(Number),
        cacheWrite: expect.any(Number),
      });
      expect(events.find((event) => event.type === "message.delivered")).toMatchObject({
        platform: "telegram",
        chatId: CHAT_ID,
        jobId: job.id,
      });
    });

    it("publishes memory.changed for an entry the memory tool saved, within its call", async () => {
      const hub = new EventHub({ instance: "local" });
      core = await openCore({ ...options(), events: hub });
      core.model.script(
        {
          toolUses: [
            {
              name: "memory",
              input: { action: "add", about: "person", text: "Their cat is called Miso." },
              id: "toolu_m",
            },
          ],
        },
        { text: "Saved." },
      );
      core.start({ bus: true });
      const job = await core.enqueue("remember my cat is called Miso", {
        sender: { person: `telegram:${OWNER_ID}`, direct: true },
      });
      await waitFor(() => hub.since(0).some((event) => event.type === "job.done"), "the job's end");
      const session = (await core.storage.queue.get(job.id))?.sessionId;
      const types = hub.since(0).map((event) => event.type);
      expect(types.slice(types.indexOf("tool.started"), types.indexOf("tool.ended") + 1)).toEqual([
        "tool.started",
        "memory.changed",
        "tool.ended",
      ]);
      expect(hub.since(0).find((event) => event.type === "memory.changed")).toMatchObject({
        agentId: "pickle",
        scope: `telegram:${OWNER_ID}`,
        action: "add",
        by: "agent",
        jobId: job.id,
        sessionId: session,
        callId: "toolu_m",
      });
    });

    it("publishes job.stopped, not job.failed, for a job the person stopped", async () => {
      const hub = new EventHub({ instance: "local" });
      core = await openCore({ ...options(), events: hub });
      core.model.script({ hang: true });
      core.start();
      const job = await core.enqueue("tell me a long story");
      await waitFor(() => core?.model.requests.length === 1, "the model call");
      core.worker.stopSession(CHAT_KEY);
      await waitFor(() => hub.since(0).some((event) => event.type === "job.stopped"), "the stop");
      const ends = hub
        .since(0)
        .filter(
          (event) =>
            event.type.startsWith("job.") &&
            event.type !== "job.started" &&
            event.type !== "job.checkpointed",
        );
      expect(ends).toMatchObject([
        { type: "job.stopped", jobId: job.id, error: "stopped by the user", attempts: 1 },
      ]);
    });
  });
}

function ended(events: PicklebotEvent[]) {
  const event = events.find((candidate) => candidate.type === "model.ended");
  if (event?.type !== "model.ended") throw new Error("no model.ended event");
  return event;
}

jobLifeContract("sqlite", () => ({ queue: "sqlite" }));

const skipReason = await postgresSkipReason();
describe.skipIf(skipReason !== null)("postgres", () => {
  const database = useMigratedDatabase("events");
  jobLifeContract("postgres", () => ({ postgresUrl: database().url }));
});
