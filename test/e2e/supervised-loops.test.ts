/**
 * Every background loop runs under the supervisor: a database whose write lock is held
 * longer than its busy timeout (a backup, a DB browser holding the file) makes the agent
 * worker's claims and the inbox's stores fail; each logs it and starts again with backoff,
 * the process lives on, and a message that arrived meanwhile is not lost: Telegram hands
 * it over again and it is answered. `picklebot server` runs as a child process with the
 * Telegram bus on the fake.
 */
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DATABASE_FILE } from "../../src/storage/index.js";
import { type FakeAnthropic, lastUserText, startFakeAnthropic } from "../fakes/anthropic.js";
import { type FakeTelegram, startFakeTelegram } from "../fakes/telegram.js";
import { busWorkspace, startBusServer, telegramYaml } from "../helpers/bus.js";
import { isAlive } from "../helpers/cli.js";
import { killAllServers } from "../helpers/server.js";
import { waitFor } from "../helpers/wait.js";
import type { TempWorkspace } from "../helpers/workspace.js";

const OWNER = 4242;
/** Longer than the SQLite busy timeout (5 s) of every connection picklebot opens. */
const LOCKED_MS = 7_000;

let model: FakeAnthropic;
let telegram: FakeTelegram;
let ws: TempWorkspace;

beforeEach(async () => {
  model = await startFakeAnthropic({
    defaultReply: (request) => ({ text: `echo: ${lastUserText(request)}` }),
  });
  telegram = await startFakeTelegram();
  ws = busWorkspace(model.url, telegramYaml(telegram, { allowedUserIds: [OWNER] }));
});

afterEach(async () => {
  await killAllServers();
  await telegram.close();
  await model.close();
  ws.remove();
});

/**
 * Holds the workspace database's write lock (as a backup or a DB browser may) while
 * `meanwhile` runs, and at least `ms`.
 */
async function holdDatabase(ms: number, meanwhile: () => Promise<unknown>): Promise<void> {
  const db = new Database(join(ws.dir, "history", DATABASE_FILE));
  try {
    db.exec("BEGIN IMMEDIATE");
    db.exec("UPDATE jobs SET updated_at = updated_at");
    await Promise.all([meanwhile(), sleep(ms)]);
    db.exec("COMMIT");
  } finally {
    db.close();
  }
}

describe("background loops under the supervisor", () => {
  it("a database locked past its busy timeout restarts the loops, not the process", async () => {
    const server = await startBusServer(ws.dir, ["telegram"]);
    telegram.sendUserMessage({ chatId: OWNER, userId: OWNER, text: "before" });
    await telegram.waitFor(() => telegram.messages(OWNER).includes("echo: before"), 10_000);

    // A message that arrives while nothing can be written: not stored, so not confirmed.
    // The lock is held until the server has hit it (its busy timeout is 5 s).
    await holdDatabase(LOCKED_MS, async () => {
      telegram.sendUserMessage({ chatId: OWNER, userId: OWNER, text: "during" });
      await waitFor(
        () => server.logs.some((line) => String(line.error).includes("database is locked")),
        "the server to hit the lock",
        30_000,
      );
    });

    expect(isAlive(server.pid)).toBe(true);
    // Once the lock is gone, the message comes again from Telegram and is answered.
    await telegram.waitFor(() => telegram.messages(OWNER).includes("echo: during"), 30_000);
    telegram.sendUserMessage({ chatId: OWNER, userId: OWNER, text: "after" });
    await telegram.waitFor(() => telegram.messages(OWNER).includes("echo: after"), 30_000);
    expect(isAlive(server.pid)).toBe(true);
  });
});
