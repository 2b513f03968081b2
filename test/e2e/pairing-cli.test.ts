/** `picklebot pairing` on a workspace with no server: listing, and each kind of bad input. */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openStorage } from "../../src/storage/index.js";
import { WELCOME_TEXT } from "../../src/storage/pairing-approval.js";
import { runCli } from "../helpers/cli.js";
import { TestClock } from "../helpers/clock.js";
import { testConfig } from "../helpers/config.js";
import { makeWorkspace, type TempWorkspace } from "../helpers/workspace.js";

let ws: TempWorkspace;

beforeEach(() => {
  ws = makeWorkspace({
    "picklebot.yaml": "telegram:\n  allowed_user_ids: [4242]\nhttp:\n  port: 0\n",
  });
});

afterEach(() => ws.remove());

function pairing(...args: string[]) {
  return runCli(["pairing", ...args, "--workspace", ws.dir]);
}

describe("picklebot pairing", () => {
  it("lists nothing on a fresh workspace", async () => {
    const result = await pairing("list");
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(
      "no pending pairing codes\n\nno approved users (besides allowed_user_ids)\n",
    );
    expect(JSON.parse((await pairing("list", "--json")).stdout)).toEqual({
      pending: [],
      approved: [],
      replaced: [],
    });
  });

  it("escapes a display name's control characters and line feeds: one line per user", async () => {
    const storage = await openStorage(testConfig(ws.dir), new TestClock());
    const hostile = "\x1b]0;pwned\x07\x1b[2JEve\napproved user 666 (owner)";
    await storage.pairing.requestCode(
      { platform: "telegram", userId: "13", userName: hostile, chatId: "13" },
      Date.now(),
    );
    await storage.pairing.requestCode(
      { platform: "telegram", userId: "14", userName: "Bob", chatId: "14" },
      Date.now(),
    );
    await storage.close();

    const result = await pairing("list");
    expect(result.code).toBe(0);
    const controls = [...result.stdout].filter((char) => {
      const code = char.charCodeAt(0);
      return (code < 0x20 && char !== "\n") || (code >= 0x7f && code <= 0x9f);
    });
    expect(controls).toEqual([]);
    const lines = result.stdout.split("\n");
    expect(lines.filter((line) => line.includes("approved user 666"))).toEqual([
      expect.stringMatching(
        /^\w{8} +telegram +13 +\\x1b\]0;pwned\\x07\\x1b\[2JEve\\napproved user 666 \(owner\) /,
      ),
    ]);
    expect(lines.filter((line) => line.includes(" telegram "))).toHaveLength(2);
    expect(JSON.parse((await pairing("list", "--json")).stdout).pending[0].userName).toBe(hostile);
  });

  it("tells the owner how many requests a flood replaced, and clears every pending code", async () => {
    const storage = await openStorage(testConfig(ws.dir), new TestClock());
    const now = Date.now();
    for (let n = 0; n < 5; n += 1) {
      const applicant = { platform: "telegram" as const, userId: `${n}`, chatId: `${n}` };
      await storage.pairing.requestCode({ ...applicant, userName: `throwaway${n}` }, now + n);
    }
    await storage.close();

    const listed = await pairing("list");
    expect(listed.stdout).toContain(
      "2 pending telegram requests were replaced by newer ones in the last 24 h (at most 3 are kept)",
    );
    expect(listed.stdout.match(/throwaway/g)).toHaveLength(3);
    expect(JSON.parse((await pairing("list", "--json")).stdout).replaced).toEqual([
      { platform: "telegram", count: 2 },
    ]);

    const cleared = await pairing("clear");
    expect(cleared.code).toBe(0);
    expect(cleared.stdout).toBe(
      "dropped 3 pending pairing codes; whoever writes to the bot next gets a new one\n",
    );
    expect((await pairing("list")).stdout).toContain("no pending pairing codes");
  });

  it("approves a code and queues the person's welcome in the chat they asked from", async () => {
    const storage = await openStorage(testConfig(ws.dir), new TestClock());
    const applicant = { platform: "discord" as const, userId: "31", userName: "Ana", chatId: "77" };
    const request = await storage.pairing.requestCode(applicant, Date.now());
    await storage.close();

    const result = await pairing("approve", request.code);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("approved discord user 31 (Ana); they are told in their chat");
    const after = await openStorage(testConfig(ws.dir), new TestClock());
    try {
      const due = await after.outbox.due("discord", Date.now() + 1000, 10);
      expect(due).toMatchObject([{ chatId: "77", text: WELCOME_TEXT, state: "pending" }]);
    } finally {
      await after.close();
    }
  });

  it("refuses a code that is not pending, saying how to get one", async () => {
    const result = await pairing("approve", "ABCD2345");
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      'picklebot: pairing code "ABCD2345" is not pending (codes are valid for 1 hour); see the pending ones with picklebot pairing list, or ask the user to write to the bot again for a new code\n',
    );
  });

  it("refuses to revoke an unknown platform or user, and points at picklebot.yaml for allowed ids", async () => {
    const badPlatform = await pairing("revoke", "matrix:123");
    expect(badPlatform.code).toBe(1);
    expect(badPlatform.stderr).toContain(
      '"matrix:123" names no platform; write telegram:<id>, discord:<id>, slack:<id>',
    );

    const unknown = await pairing("revoke", "999");
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('no approved user "999"');

    const inYaml = await pairing("revoke", "telegram:4242");
    expect(inYaml.code).toBe(0);
    expect(inYaml.stdout).toContain("4242 is also in telegram.allowed_user_ids in picklebot.yaml");
  });

  it("explains its usage when the code is missing", async () => {
    const result = await pairing("approve");
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("missing required argument 'code'");
  });
});
