/** `picklebot pairing` on a workspace with no server: listing, and each kind of bad input. */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";
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
    });
  });

  it("refuses a code that is not pending, saying how to get one", async () => {
    const result = await pairing("approve", "ABCD2345");
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      'picklebot: pairing code "ABCD2345" is not pending (codes are valid for 1 hour); see the pending ones with picklebot pairing list, or ask the user to write to the bot again for a new code\n',
    );
  });

  it("refuses to revoke an unknown platform or user, and points at picklebot.yaml for allowed ids", async () => {
    const badPlatform = await pairing("revoke", "slack:123");
    expect(badPlatform.code).toBe(1);
    expect(badPlatform.stderr).toContain(
      '"slack:123" names no platform; write telegram:<id>, discord:<id>',
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
