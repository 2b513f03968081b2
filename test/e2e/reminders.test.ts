/**
 * Reminders end to end: `picklebot server` as a child process with the fake Telegram and
 * the fake Anthropic API. The model calls `schedule`; the server is SIGKILLed before the
 * reminder is due and started again; the reminder arrives once, in the chat that asked.
 */
import type Database from "better-sqlite3";
import { afterEach, beforeEach, expect, it } from "vitest";
import { type FakeAnthropic, lastUserText, startFakeAnthropic } from "../fakes/anthropic.js";
import { type FakeTelegram, startFakeTelegram } from "../fakes/telegram.js";
import { busWorkspace, startBusServer, telegramYaml } from "../helpers/bus.js";
import { killAllServers, openWorkspaceDb } from "../helpers/server.js";
import { waitFor } from "../helpers/wait.js";
import type { TempWorkspace } from "../helpers/workspace.js";

const OWNER = 4242;

let model: FakeAnthropic;
let telegram: FakeTelegram;
let ws: TempWorkspace;
let db: Database.Database | null = null;

beforeEach(async () => {
  model = await startFakeAnthropic({
    defaultReply: (request) => ({ text: `echo: ${lastUserText(request)}` }),
  });
  telegram = await startFakeTelegram();
  ws = busWorkspace(model.url, telegramYaml(telegram, { allowedUserIds: [OWNER] }), {
    "agents/pickle/AGENT.md":
      "---\nname: Pickle\ndescription: Reminds\ntools: [schedule]\n---\nYou set reminders.\n",
  });
});

afterEach(async () => {
  await killAllServers();
  db?.close();
  db = null;
  await telegram.close();
  await model.close();
  ws.remove();
});

interface ScheduleRow {
  id: string;
  at: number;
  state: string;
  platform: string;
  chat_id: string;
}

it("a reminder made 'in 1 minute' survives a SIGKILL and arrives once, in the chat that asked, at its minute", async () => {
  telegram.openChat(OWNER);
  model.script({
    toolUses: [
      {
        name: "schedule",
        input: { action: "create", when: "in 1 minute", message: "Call the dentist" },
      },
    ],
  });
  const first = await startBusServer(ws.dir, ["telegram"]);
  telegram.sendUserMessage({ chatId: OWNER, userId: OWNER, text: "remind me in a minute" });
  const confirmation = await telegram.waitFor(
    () => telegram.messages(OWNER).find((text) => text.startsWith("echo: Scheduled")),
    20_000,
  );
  db = openWorkspaceDb(ws.dir);
  const stored = db.prepare("SELECT * FROM schedules").all() as ScheduleRow[];
  expect(stored).toEqual([
    expect.objectContaining({ state: "active", platform: "telegram", chat_id: String(OWNER) }),
  ]);
  const [reminder] = stored as [ScheduleRow];
  expect(confirmation).toMatch(
    /^echo: Scheduled [a-z2-9]{6}: message "Call the dentist" at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\. Tell the person/,
  );

  await first.kill();
  expect(db.prepare("SELECT state FROM schedules").get()).toEqual({ state: "active" });
  const second = await startBusServer(ws.dir, ["telegram"]);
  // A real minute: the server has no test clock, and the reminder is due a minute after it was made.
  await telegram.waitFor(() => telegram.messages(OWNER).includes("Call the dentist"), 90_000);
  const fired = await second.waitForLog((line) => line.msg === "schedule fired");
  expect(fired.schedule).toBe(reminder.id);
  expect(fired.occurrence).toBe(new Date(reminder.at).toISOString());
  // Never early: the line that sent it was written at or after the reminder's minute.
  expect(Number(fired.time)).toBeGreaterThanOrEqual(reminder.at);
  expect(db.prepare("SELECT state FROM schedules").get()).toEqual({ state: "done" });

  // Once: another crash and start sends nothing more. (The kill waits for the outbox to
  // record the delivery: a kill between Telegram's answer and that record resends a
  // message, the outbox's own window, which the chat chaos run covers.)
  const delivered = db.prepare("SELECT state FROM outbox WHERE dedupe_key LIKE 'schedule:%'");
  await waitFor(
    () => (delivered.get() as { state: string } | undefined)?.state === "delivered",
    "the reminder recorded as delivered",
    10_000,
  );
  await second.kill();
  await startBusServer(ws.dir, ["telegram"]);
  const entries = db.prepare("SELECT count(*) AS n FROM outbox WHERE dedupe_key LIKE 'schedule:%'");
  expect(entries.get()).toEqual({ n: 1 });
  expect(telegram.messages(OWNER).filter((text) => text === "Call the dentist")).toHaveLength(1);
}, 180_000);
