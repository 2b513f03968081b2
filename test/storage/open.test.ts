/**
 * openStorage: each local config combination (queue sqlite|memory × history sqlite|jsonl)
 * opens working stores, and what is durable survives a reopen.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import BetterSqlite from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Config } from "../../src/config/index.js";
import type { ChatMessage, ClaimedJob, Storage } from "../../src/ports/index.js";
import { DATABASE_FILE, openStorage } from "../../src/storage/index.js";
import { TestClock } from "../helpers/clock.js";
import { testConfig } from "../helpers/config.js";
import { makeWorkspace, type TempWorkspace } from "../helpers/workspace.js";

const combinations = [
  { queue: "sqlite", history: "sqlite" },
  { queue: "sqlite", history: "jsonl" },
  { queue: "memory", history: "sqlite" },
  { queue: "memory", history: "jsonl" },
] as const;

const hello: ChatMessage = { role: "user", content: [{ type: "text", text: "hello" }] };

describe.each(combinations)("openStorage: queue $queue, history $history", (backends) => {
  let ws: TempWorkspace;
  let config: Config;
  let storage: Storage;
  const clock = new TestClock();

  beforeEach(async () => {
    ws = makeWorkspace();
    config = testConfig(ws.dir, {
      queue: { backend: backends.queue },
      history: { backend: backends.history },
    });
    storage = await openStorage(config, clock);
  });

  afterEach(async () => {
    await storage.close();
    ws.remove();
  });

  it("runs a job through the queue, the checkpoint and the history", async () => {
    const job = await storage.queue.enqueue({
      agentId: "pickle",
      sessionKey: "console:main",
      message: "hello",
      mode: "chat",
      replyTo: { kind: "console" },
    });
    expect(job.maxAttempts).toBe(config.workers.max_attempts);
    const [claimed] = await storage.queue.claim("worker", 1);
    if (!claimed) throw new Error("nothing claimed");
    const session = await storage.history.createSession({ key: "console:main", agentId: "pickle" });
    expect(await storage.checkpoint(claimed, session.id, hello)).toBe(true);
    expect(await storage.queue.complete(claimed)).toBe(true);
    expect(await storage.queue.counts()).toMatchObject({ done: 1, running: 0 });
    expect(await storage.history.loadContext(session.id, 10)).toEqual([hello]);
    expect(await storage.history.currentSession("console:main")).toMatchObject({
      id: session.id,
    });
  });

  it("opens the outbox, pairing, approvals and cron state in the workspace database, and no cluster", async () => {
    const address = { dedupeKey: "job:1", platform: "telegram" as const, chatId: "42" };
    expect(await storage.outbox.submit(address, "hi", clock.now())).toMatchObject({
      state: "pending",
    });
    const request = await storage.pairing.requestCode(
      { platform: "telegram", userId: "7", userName: "Alice", chatId: "42" },
      clock.now(),
    );
    expect(request?.code).toMatch(/^\w{8}$/);
    expect(await storage.cronState.recordFired("daily", clock.now(), { disable: false })).toBe(
      true,
    );
    expect(await storage.approvals.grants()).toEqual([]);
    expect(storage.cluster).toBeNull();
    expect(existsSync(join(config.history.path, DATABASE_FILE))).toBe(true);
  });

  it(`keeps ${backends.queue === "sqlite" ? "queued jobs" : "no job (memory queue)"} and the history across a reopen`, async () => {
    await storage.queue.enqueue({
      agentId: "pickle",
      sessionKey: "console:main",
      message: "later",
      mode: "chat",
      replyTo: { kind: "console" },
    });
    const session = await storage.history.createSession({ key: "console:main", agentId: "pickle" });
    await storage.history.append(session.id, hello);
    await storage.outbox.submit(
      { dedupeKey: "job:1", platform: "telegram", chatId: "42" },
      "hi",
      clock.now(),
    );
    await storage.close();

    storage = await openStorage(config, clock);
    const queued = backends.queue === "sqlite" ? 1 : 0;
    expect((await storage.queue.counts()).queued).toBe(queued);
    expect(await storage.history.loadContext(session.id, 10)).toEqual([hello]);
    expect(await storage.outbox.get("job:1")).toMatchObject({ text: "hi" });
  });
});

describe("openStorage: a database from before the checkpointed column (migration 006)", () => {
  it('marks jobs checkpointed by the old "." convention, and only those', async () => {
    const ws = makeWorkspace();
    const config = testConfig(ws.dir, { queue: { backend: "sqlite" } });
    const clock = new TestClock();
    try {
      let storage = await openStorage(config, clock);
      const job = (text: string) =>
        storage.queue.enqueue({
          agentId: "pickle",
          sessionKey: `telegram:${text}`,
          message: text,
          mode: "chat",
          replyTo: { kind: "silent" },
        });
      const interrupted = await job("what is brine?");
      const dot = await job(".");
      const [claimed] = await storage.queue.claim("old-server", 1);
      const session = await storage.history.createSession({ key: "telegram:x", agentId: "pickle" });
      await storage.checkpoint(claimed as ClaimedJob, session.id, hello);
      await storage.close();
      // Turn the file back into what version 005 left: no column, the marker only (and none
      // of the later tables).
      const db = new BetterSqlite(join(ws.dir, "history", DATABASE_FILE));
      db.exec(
        `DROP TABLE approval_requests; DROP TABLE approval_grants; DROP INDEX jobs_parent;
        DROP TABLE pairing_replacements; DROP TABLE usage; DROP TABLE schedules;
        DROP TRIGGER messages_search_insert; DROP VIEW messages_search_scope;
        DROP TABLE memories; DROP TABLE memory_changes; DROP TABLE person_links;
        DROP TABLE session_memory; DROP TABLE messages_search;
        ${[
          ...["waiting_for", "parent_id", "tool_results", "stop_requested", "checkpointed"],
          ...["task", "batch", "batch_step", "sender", "model", "attachments"],
        ]
          .map((column) => `ALTER TABLE jobs DROP COLUMN ${column};`)
          .join(" ")}
        ALTER TABLE sessions DROP COLUMN model;
        PRAGMA user_version = 5;`,
      );
      db.close();

      storage = await openStorage(config, clock);
      expect(await storage.queue.get(interrupted.id)).toMatchObject({
        message: ".",
        checkpointed: true,
      });
      expect(await storage.queue.get(dot.id)).toMatchObject({ message: ".", checkpointed: false });
      await storage.close();
    } finally {
      ws.remove();
    }
  });
});
