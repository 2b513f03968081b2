import { appendFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Clock } from "../../src/ports/index.js";
import { JsonlHistoryStore } from "../../src/storage/jsonl/history.js";
import { TestClock } from "../helpers/clock.js";
import { assistantText, historyContract, toolCalls, toolResults, userText } from "./contract.js";

function tempDir(): string {
  return mkdtempSync(join(tmpdir(), "picklebot-history-jsonl-"));
}

historyContract("jsonl", async (clock: Clock) => {
  const dir = tempDir();
  let store = new JsonlHistoryStore({ dir, clock });
  return {
    store,
    async reopen() {
      await store.close();
      store = new JsonlHistoryStore({ dir, clock });
      return store;
    },
    async cleanup() {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

describe("JsonlHistoryStore", () => {
  let dir: string;
  let store: JsonlHistoryStore;
  const clock = new TestClock();
  const indexPath = () => join(dir, "index.jsonl");
  const sessionPath = (id: string) => join(dir, "sessions", `${id}.jsonl`);
  const reopen = () => new JsonlHistoryStore({ dir, clock });

  beforeEach(() => {
    dir = tempDir();
    store = reopen();
  });

  afterEach(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it("writes one JSON line per message, with its job id, to the session's own file", async () => {
    const session = await store.createSession({ key: "telegram:1", agentId: "pickle" });
    await store.append(session.id, userText("hello"), { jobId: "job-1" });
    await store.append(session.id, assistantText("hi"));
    const lines = readFileSync(sessionPath(session.id), "utf8").trimEnd().split("\n");
    expect(lines.map((line) => JSON.parse(line))).toEqual([
      { ...userText("hello"), job_id: "job-1", created_at: clock.now() },
      { ...assistantText("hi"), job_id: null, created_at: clock.now() },
    ]);
  });

  it("skips a torn last line left by a crash, and appends after it cleanly", async () => {
    const session = await store.createSession({ key: "k", agentId: "pickle" });
    await store.append(session.id, userText("before the crash"));
    appendFileSync(sessionPath(session.id), '{"role":"assistant","content":[{"type":"te');

    const restarted = reopen();
    expect(await restarted.loadContext(session.id, 10)).toEqual([userText("before the crash")]);
    await restarted.append(session.id, userText("after the restart"));
    expect(await restarted.loadContext(session.id, 10)).toEqual([
      userText("before the crash"),
      userText("after the restart"),
    ]);
  });

  it("skips a torn last index line, and keeps recording sessions after it", async () => {
    const kept = await store.createSession({ key: "k", agentId: "pickle" });
    appendFileSync(indexPath(), '{"event":"session_created","session_id":"s_to');

    const restarted = reopen();
    expect(await restarted.getSession(kept.id)).toEqual(kept);
    clock.advance(1);
    const next = await restarted.createSession({ key: "k", agentId: "pickle" });
    expect((await reopen().currentSession("k"))?.id).toBe(next.id);
  });

  it("only appends to the index: its earlier bytes never change", async () => {
    const snapshots = [readIndex()];
    const session = await store.createSession({ key: "k", agentId: "pickle" });
    snapshots.push(readIndex());
    await store.append(session.id, userText("title here"), { jobId: "job-1" });
    snapshots.push(readIndex());
    await store.append(session.id, toolCalls("t1"), {
      usage: { input: 1, output: 2, cacheRead: 3, cacheWrite: 4 },
    });
    snapshots.push(readIndex());
    await store.append(session.id, toolResults("t1"));
    snapshots.push(readIndex());
    await store.append(session.id, userText("title here"), { jobId: "job-1" });
    expect(readIndex()).toBe(snapshots.at(-1));
    for (let step = 1; step < snapshots.length; step++) {
      const [earlier, later] = [snapshots[step - 1] ?? "", snapshots[step] ?? ""];
      expect(later.length).toBeGreaterThan(earlier.length);
      expect(later.startsWith(earlier)).toBe(true);
    }
  });

  it("sees sessions and messages another store on the same folder wrote since", async () => {
    const other = reopen();
    expect(await store.listSessions()).toEqual([]);
    const session = await other.createSession({ key: "console:main", agentId: "pickle" });
    await other.append(session.id, userText("from the other process"));
    expect((await store.currentSession("console:main"))?.title).toBe("from the other process");
    expect(await store.loadContext(session.id, 10)).toEqual([userText("from the other process")]);
  });

  it("creates no files until something is written", async () => {
    const missing = new JsonlHistoryStore({ dir: join(dir, "not-yet"), clock });
    expect(await missing.listSessions()).toEqual([]);
    expect(await missing.currentSession("k")).toBeNull();
    await missing.createSession({ key: "k", agentId: "pickle" });
    expect(readFileSync(join(dir, "not-yet", "index.jsonl"), "utf8")).toContain("session_created");
  });

  it("takes injected session ids, and refuses ids unsafe as file names", async () => {
    const fixed = new JsonlHistoryStore({ dir, clock, newId: () => "s_fixed" });
    expect((await fixed.createSession({ key: "k", agentId: "pickle" })).id).toBe("s_fixed");
    const unsafe = new JsonlHistoryStore({ dir, clock, newId: () => "../escape" });
    await expect(unsafe.createSession({ key: "k", agentId: "pickle" })).rejects.toThrow(
      /"\.\.\/escape"/,
    );
  });

  function readIndex(): string {
    try {
      return readFileSync(indexPath(), "utf8");
    } catch {
      return "";
    }
  }
});
