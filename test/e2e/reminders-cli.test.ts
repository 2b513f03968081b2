/**
 * The owner's view of the reminders agents set up in chats: `picklebot cron list` shows
 * them with their chat and creator, `picklebot cron cancel <id>` cancels one.
 */
import { afterEach, beforeEach, expect, it } from "vitest";
import type { NewSchedule } from "../../src/ports/index.js";
import { runCli } from "../helpers/cli.js";
import { withWorkspaceStorage } from "../helpers/config.js";
import { makeWorkspace, type TempWorkspace } from "../helpers/workspace.js";

let ws: TempWorkspace;

beforeEach(() => {
  ws = makeWorkspace({ "picklebot.yaml": "timezone: UTC\n" });
});

afterEach(() => ws.remove());

function schedule(id: string, overrides: Partial<NewSchedule> = {}): NewSchedule {
  return {
    id,
    agentId: "pickle",
    chat: { kind: "telegram", chatId: "4242" },
    createdBy: "agent pickle",
    kind: "message",
    text: "Call the dentist",
    at: Date.parse("2099-12-01T08:00:00Z"),
    cron: null,
    timezone: "Europe/Berlin",
    createdAt: Date.now(),
    ...overrides,
  };
}

async function cli(...args: string[]) {
  return runCli([...args, "--workspace", ws.dir]);
}

it("lists the chats' schedules after the crons, with chat, creator and next run; cancels one by id", async () => {
  await withWorkspaceStorage(ws.dir, async (storage) => {
    await storage.schedules.create(schedule("aaaaaa"), 20);
    const weekly = { at: null, cron: "0 8 * * 1-5", kind: "task" as const, text: "Rain today?" };
    await storage.schedules.create(
      schedule("bbbbbb", { ...weekly, chat: { kind: "discord", chatId: "99" } }),
      20,
    );
  });
  const list = await cli("cron", "list");
  expect(list.code).toBe(0);
  expect(list.stdout).toContain(
    "reminders and recurring tasks set up in chats (cancel: picklebot cron cancel <id>)",
  );
  expect(list.stdout).toMatch(
    /aaaaaa\s+telegram:4242\s+agent pickle\s+message: Call the dentist\s+once\s+2099-12-01 09:00:00 Europe\/Berlin/,
  );
  expect(list.stdout).toMatch(
    /bbbbbb\s+discord:99\s+agent pickle\s+task: Rain today\?\s+0 8 \* \* 1-5/,
  );

  const json = await cli("cron", "list", "--schedules", "--json");
  expect(JSON.parse(json.stdout)).toEqual([
    expect.objectContaining({ id: "aaaaaa", chat: "telegram:4242", createdBy: "agent pickle" }),
    expect.objectContaining({ id: "bbbbbb", chat: "discord:99", repeat: "0 8 * * 1-5" }),
  ]);

  const cancel = await cli("cron", "cancel", "aaaaaa");
  expect(cancel.stdout).toBe('cancelled aaaaaa (message "Call the dentist" for telegram:4242)\n');
  const after = await cli("cron", "list", "--schedules", "--json");
  expect(JSON.parse(after.stdout).map((row: { id: string }) => row.id)).toEqual(["bbbbbb"]);

  const again = await cli("cron", "cancel", "aaaaaa");
  expect(again.code).not.toBe(0);
  expect(again.stderr).toContain(
    'no active schedule "aaaaaa"; `picklebot cron list --schedules` shows the active ones',
  );
});
