/** `picklebot memory link|unlink|links` on a workspace with no server, bad input included. */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { memoryText } from "../../src/base/memory-text.js";
import type { Storage } from "../../src/ports/index.js";
import { openStorage } from "../../src/storage/index.js";
import { runCli } from "../helpers/cli.js";
import { TestClock } from "../helpers/clock.js";
import { testConfig } from "../helpers/config.js";
import { makeWorkspace, type TempWorkspace } from "../helpers/workspace.js";

let ws: TempWorkspace;

beforeEach(() => {
  ws = makeWorkspace({ "picklebot.yaml": "http:\n  port: 0\n" });
});

afterEach(() => ws.remove());

function memory(...args: string[]) {
  return runCli(["memory", ...args, "--workspace", ws.dir]);
}

async function withStorage<T>(use: (storage: Storage) => Promise<T>): Promise<T> {
  const storage = await openStorage(testConfig(ws.dir), new TestClock());
  try {
    return await use(storage);
  } finally {
    await storage.close();
  }
}

describe("picklebot memory", () => {
  it("links a person's second platform to their memory, merging what it had, and unlinks", async () => {
    await withStorage(async (storage) => {
      for (const [scope, entry] of [
        ["telegram:1001", "Cat: Miso"],
        ["discord:2002", "Likes tea"],
      ] as const) {
        await storage.memory.update({ agentId: "pickle", scope }, { by: "cli", at: 1 }, () => ({
          text: memoryText([entry]),
          change: { action: "add", entry, previous: null },
        }));
      }
    });
    expect(await memory("links")).toMatchObject({ code: 0, stdout: "no linked person keys\n" });

    const linked = await memory("link", "discord:2002", "telegram:1001");
    expect(linked).toMatchObject({ code: 0, stderr: "" });
    expect(linked.stdout).toBe(
      "linked discord:2002 to telegram:1001: both now share telegram:1001's memory and their conversations are searched together\n",
    );
    await withStorage(async (storage) => {
      expect((await storage.memory.read("pickle", "discord:2002")).text).toBe(
        "Cat: Miso\n§\nLikes tea",
      );
    });
    const listed = JSON.parse((await memory("links", "--json")).stdout);
    expect(listed).toEqual([
      { person: "discord:2002", linkedTo: "telegram:1001", at: expect.any(Number) },
    ]);

    expect((await memory("unlink", "discord:2002")).code).toBe(0);
    const again = await memory("unlink", "discord:2002");
    expect(again).toMatchObject({ code: 1 });
    expect(again.stderr).toContain("discord:2002 is not linked to anyone");
  });

  it("refuses what is not a person key, and a link back to itself", async () => {
    const bad = await memory("link", "telegram:ana", "owner");
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain(
      '"telegram:ana" is not a person key; write telegram:<user id>, discord:<user id> or owner',
    );
    const loop = await memory("link", "owner", "owner");
    expect(loop.code).toBe(1);
    expect(loop.stderr).toContain("owner cannot be linked to owner");
  });
});
