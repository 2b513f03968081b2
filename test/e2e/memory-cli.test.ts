/**
 * `picklebot memory show|edit|clear|link|unlink|links` on a workspace with no server, bad
 * input included. `edit` runs with EDITOR set to a small script that writes a chosen text.
 */
import { chmodSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
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

/** `picklebot memory edit` with an editor that replaces the file's text with `text`. */
function editTo(text: string | Buffer, ...args: string[]) {
  const script = join(ws.dir, "editor.sh");
  writeFileSync(join(ws.dir, "edited.txt"), text);
  writeFileSync(
    script,
    `#!/bin/sh\ncp "$1" "${ws.dir}/seen.txt"\ncp "${ws.dir}/edited.txt" "$1"\n`,
  );
  chmodSync(script, 0o755);
  return runCli(["memory", "edit", ...args, "--workspace", ws.dir], {
    env: { EDITOR: script, VISUAL: undefined },
  });
}

async function seed(scope: string, entries: string[]): Promise<void> {
  await withStorage(async (storage) => {
    await storage.memory.update(
      { agentId: "pickle", scope },
      { by: "agent", at: 1, jobId: "j1", callId: "c1", sessionId: "s1" },
      () => ({
        text: memoryText(entries),
        change: { action: "add", entry: entries.join(" "), previous: null },
      }),
    );
  });
}

async function stored(scope: string): Promise<string> {
  return withStorage(async (storage) => (await storage.memory.read("pickle", scope)).text);
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

  it("shows, edits and links a Slack person's memory by their member id", async () => {
    await seed("slack:U0ALICE01", ["Cat: Miso"]);
    const one = await memory("show", "slack:U0ALICE01");
    expect(one).toMatchObject({ code: 0, stderr: "" });
    expect(one.stdout).toContain("agent pickle's memory of slack:U0ALICE01: ");
    expect((await editTo("Cat: Miso\n§\nLikes tea\n", "slack:U0ALICE01")).code).toBe(0);
    const linked = await memory("link", "telegram:1001", "slack:U0ALICE01");
    expect(linked).toMatchObject({ code: 0, stderr: "" });
    expect(await stored("telegram:1001")).toBe("Cat: Miso\n§\nLikes tea");
    const bad = await memory("show", "slack:alice");
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain("slack:<member id>");
  });

  it("refuses what is not a person key, and a link back to itself", async () => {
    const bad = await memory("link", "telegram:ana", "owner");
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain(
      '"telegram:ana" is not a person key; write telegram:<user id>, discord:<user id>, slack:<member id> or owner',
    );
    const loop = await memory("link", "owner", "owner");
    expect(loop.code).toBe(1);
    expect(loop.stderr).toContain("owner cannot be linked to owner");
  });

  it("shows every memory, one memory's text, and its history", async () => {
    expect(await memory("show")).toMatchObject({ code: 0, stdout: "no memory saved yet\n" });
    await seed("telegram:1001", ["Cat: Miso", "Likes tea"]);
    const all = await memory("show");
    expect(all.code).toBe(0);
    expect(all.stdout).toMatch(/pickle\s+telegram:1001\s+2\s+21 of 1400 characters \(2%\)/);
    const one = await memory("show", "telegram:1001");
    expect(one.stdout).toBe(
      "agent pickle's memory of telegram:1001: 21 of 1400 characters (2%)\nCat: Miso\n§\nLikes tea\n",
    );
    const history = await memory("show", "telegram:1001", "--history");
    expect(history.stdout).toMatch(
      /telegram:1001\s+add\s+agent \(job j1, call c1\)\s+Cat: Miso Likes tea/,
    );
  });

  it("edits a memory in $EDITOR, records the change, and clears it", async () => {
    await seed("agent", ["The server is tater"]);
    const edited = await editTo("The server is tater\n§\nBackups run at 3am\n", "agent");
    expect(edited).toMatchObject({ code: 0, stderr: "" });
    expect(edited.stdout).toBe("saved the notes of agent pickle: 40 of 2200 characters (2%)\n");
    expect(readFileSync(join(ws.dir, "seen.txt"), "utf8")).toBe("The server is tater\n");
    expect(await stored("agent")).toBe("The server is tater\n§\nBackups run at 3am");

    const cleared = await memory("clear", "agent");
    expect(cleared).toMatchObject({
      code: 0,
      stdout: "cleared the notes of agent pickle: 0 of 2200 characters (0%)\n",
    });
    expect(await stored("agent")).toBe("");
    const history = JSON.parse((await memory("show", "agent", "--history", "--json")).stdout);
    expect(
      history.map((change: { action: string; by: string }) => [change.action, change.by]),
    ).toEqual([
      ["clear", "cli"],
      ["edit", "cli"],
      ["add", "agent"],
    ]);
    expect(history[0].previous).toBe("The server is tater\n§\nBackups run at 3am");

    const again = await memory("clear", "agent");
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(
      "the notes of agent pickle was not changed: nothing to clear: it is empty.",
    );
  });

  it.each([
    [
      "over its budget",
      `${"x".repeat(1401)}\n`,
      "agent pickle's memory of owner would be 1401 characters and its budget is 1400; shorten or remove entries",
    ],
    [
      "a secret",
      "Cat: Miso\n§\nkey sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789\n",
      'entry 2 ("key sk-ant-api03-',
    ],
    [
      "a mistyped separator",
      "Cat: Miso\n§ Likes tea\n",
      'the line "§ Likes tea" starts with "§" but holds more',
    ],
    [
      "a control character",
      "Cat: Miso\n§\nLikes\u0000 tea\n",
      "entry 2 holds a control character (\\x00), which is not text",
    ],
    [
      "the same entry twice",
      "Cat: Miso\n§\ncat:  miso\n",
      'entries 1 and 2 say the same ("cat: miso")',
    ],
  ])(
    "refuses an edit with %s, keeps the memory and the edited text",
    async (_what, text, reason) => {
      await seed("owner", ["Cat: Miso"]);
      const refused = await editTo(text, "owner");
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain("agent pickle's memory of owner was not changed: ");
      expect(refused.stderr).toContain(reason);
      const kept = /your text is kept in (\S+), copy from it/.exec(refused.stderr)?.[1] ?? "";
      expect(readFileSync(kept, "utf8")).toBe(text);
      expect(await stored("owner")).toBe("Cat: Miso");
    },
  );

  it("refuses a file the editor saved in another encoding than UTF-8, and keeps it", async () => {
    await seed("owner", ["Cat: Miso"]);
    const utf16 = Buffer.from("\ufeffCat: Miso\n", "utf16le");
    const refused = await editTo(utf16, "owner");
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(
      "agent pickle's memory of owner was not changed: the edited file is not UTF-8 text",
    );
    const kept = /your text is kept in (\S+), copy from it/.exec(refused.stderr)?.[1] ?? "";
    expect(readFileSync(kept)).toEqual(utf16);
    expect(await stored("owner")).toBe("Cat: Miso");
  });

  it("refuses a bad scope, an unknown agent, no editor, and a failing editor", async () => {
    const scope = await memory("show", "ana");
    expect(scope.code).toBe(1);
    expect(scope.stderr).toContain(
      '"ana" names no memory; write agent (its notes) or telegram:<user id>',
    );
    const agent = await memory("clear", "agent", "--agent", "nobody");
    expect(agent.code).toBe(1);
    expect(agent.stderr).toContain('unknown agent "nobody" (known: pickle)');
    const noEditor = await runCli(["memory", "edit", "agent", "--workspace", ws.dir], {
      env: { EDITOR: undefined, VISUAL: undefined },
    });
    expect(noEditor.code).toBe(1);
    expect(noEditor.stderr).toContain("no editor: set EDITOR");
    const failing = await runCli(["memory", "edit", "agent", "--workspace", ws.dir], {
      env: { EDITOR: "false", VISUAL: undefined },
    });
    expect(failing.code).toBe(1);
    expect(failing.stderr).toContain(
      "the editor (false) ended with exit code 1; nothing was changed",
    );
    expect(existsSync(join(ws.dir, "seen.txt"))).toBe(false);
    ws.write(
      "agents/quiet/AGENT.md",
      "---\nname: Quiet\ndescription: Forgets\nmemory: false\n---\nHi.\n",
    );
    const off = await memory("show", "agent", "--agent", "quiet");
    expect(off.code).toBe(1);
    expect(off.stderr).toContain("agent quiet has no memory: its AGENT.md says memory: false");
    expect(await memory("show", "--history")).toMatchObject({
      code: 0,
      stdout: "no changes recorded\n",
    });
  });
});
