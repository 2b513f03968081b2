/**
 * `picklebot approvals` on a workspace with no server: a job parked on an approval is
 * answered from the shell and resumes, grants are listed and revoked, and each kind of bad
 * input gets one clear sentence.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { NewApprovalRequest, Storage } from "../../src/ports/index.js";
import { parkOnApproval } from "../helpers/approvals.js";
import { runCli } from "../helpers/cli.js";
import { withWorkspaceStorage } from "../helpers/config.js";
import { makeWorkspace, type TempWorkspace } from "../helpers/workspace.js";

const HOUR = 60 * 60 * 1000;

let ws: TempWorkspace;

beforeEach(() => {
  ws = makeWorkspace({ "picklebot.yaml": "http:\n  port: 0\n" });
});

afterEach(() => ws.remove());

function approvals(...args: string[]) {
  return runCli(["approvals", ...args, "--workspace", ws.dir]);
}

/** Runs `use` on the workspace's storage, closed before the CLI opens it. */
function withStorage<T>(use: (storage: Storage) => Promise<T>): Promise<T> {
  return withWorkspaceStorage(ws.dir, use);
}

/** A job parked on an approval request `id`, as the agent loop leaves it; returns its id. */
function parkedOnApproval(id: string, overrides: Partial<NewApprovalRequest> = {}) {
  const now = Date.now();
  return withStorage(
    async (storage) =>
      (await parkOnApproval(storage, id, now, { createdAt: now - 60_000, ...overrides })).id,
  );
}

describe("picklebot approvals", () => {
  it("lists nothing on a fresh workspace", async () => {
    const result = await approvals("list");
    expect(result).toMatchObject({ code: 0, stderr: "" });
    expect(result.stdout).toBe("no approval requests pending\n\nno always-allow grants\n");
    expect(JSON.parse((await approvals("list", "--json")).stdout)).toEqual({
      pending: [],
      grants: [],
    });
  });

  it("lists a pending request with its input, age and expiry", async () => {
    await parkedOnApproval("K7MX2QPA");
    const result = await approvals("list");
    expect(result.code).toBe(0);
    const lines = result.stdout.split("\n");
    expect(lines[0]).toMatch(/^ID\s+AGENT\s+TOOL\s+INPUT\s+AGE\s+EXPIRES IN$/);
    expect(lines[1]).toMatch(
      /^K7MX2QPA\s+coder\s+bash\s+\{"command":"rm -rf build"\}\s+1m \d+s\s+(59m \d+s|1h 0m)$/,
    );
    const json = JSON.parse((await approvals("list", "--json")).stdout);
    expect(json.pending[0]).toMatchObject({ id: "K7MX2QPA", state: "pending", tool: "bash" });
  });

  it("allows a request (typed in lower case) and wakes its parked job at once", async () => {
    const jobId = await parkedOnApproval("K7MX2QPA");
    expect(await withStorage(async (s) => (await s.queue.get(jobId))?.state)).toBe("waiting");
    const result = await approvals("allow", "k7mx2qpa");
    expect(result).toMatchObject({ code: 0, stderr: "" });
    expect(result.stdout).toBe(`allowed bash for coder (job ${jobId})\n`);
    await withStorage(async (storage) => {
      const job = await storage.queue.get(jobId);
      expect(job).toMatchObject({ state: "queued", waitingFor: null });
      expect(job?.runAt).toBeLessThanOrEqual(Date.now());
      expect(await storage.approvals.get("K7MX2QPA")).toMatchObject({
        state: "allowed",
        decision: "once",
        answeredBy: "cli",
      });
    });
  });

  it("allows always: the grant is listed, and revoke removes it", async () => {
    await parkedOnApproval("ALWA2345", { tool: "write", pattern: "notes/**" });
    const allowed = await approvals("allow", "ALWA2345", "--always");
    expect(allowed.stdout).toContain("coder may now run write under notes/** without asking");
    const listed = await approvals("list");
    expect(listed.stdout).toMatch(/no approval requests pending\n\nAGENT\s+TOOL\s+PATTERN/);
    expect(listed.stdout).toMatch(/coder\s+write\s+notes\/\*\*\s+\S+ \S+ \S+\s+cli/);

    const revoked = await approvals("revoke", "coder", "write", "notes/**");
    expect(revoked).toMatchObject({
      code: 0,
      stdout: "revoked: coder write notes/**; it asks again\n",
    });
    expect(JSON.parse((await approvals("list", "--json")).stdout).grants).toEqual([]);
  });

  it("denies a request and wakes its job", async () => {
    const jobId = await parkedOnApproval("DENY2345");
    const result = await approvals("deny", "DENY2345");
    expect(result).toMatchObject({ code: 0, stdout: `denied bash for coder (job ${jobId})\n` });
    await withStorage(async (storage) => {
      expect((await storage.queue.get(jobId))?.state).toBe("queued");
      expect((await storage.approvals.get("DENY2345"))?.state).toBe("denied");
    });
  });

  it("refuses an unknown id, saying how to list the pending ones", async () => {
    const result = await approvals("allow", "NOPE2345");
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      'picklebot: no approval request "NOPE2345"; see the pending ones with picklebot approvals list\n',
    );
  });

  it("refuses a request already answered, saying by whom", async () => {
    await parkedOnApproval("TWCE2345");
    expect((await approvals("deny", "TWCE2345")).code).toBe(0);
    const again = await approvals("allow", "TWCE2345");
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(
      /^picklebot: approval request TWCE2345 was already denied by cli at \S+ \S+ \S+; see the pending ones with picklebot approvals list\n$/,
    );
  });

  it("refuses an expired request and marks it expired", async () => {
    const now = Date.now();
    await parkedOnApproval("LATE2345", { createdAt: now - 2 * HOUR, expiresAt: now - HOUR });
    const result = await approvals("allow", "LATE2345");
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /^picklebot: approval request LATE2345 expired at \S+ \S+ \S+ and counted as deny; the agent may ask again \(see the pending ones with picklebot approvals list\)\n$/,
    );
    expect((await approvals("list")).stdout).toContain("no approval requests pending");
  });

  it("refuses bad revoke arguments", async () => {
    const unknownTool = await approvals("revoke", "coder", "bsh");
    expect(unknownTool.code).toBe(1);
    expect(unknownTool.stderr).toContain('unknown tool "bsh"; did you mean "bash"? (known: read,');

    const noGrant = await approvals("revoke", "coder", "bash", "*");
    expect(noGrant.code).toBe(1);
    expect(noGrant.stderr).toBe(
      'picklebot: no always-allow grant of bash under * for agent "coder"; see the grants with picklebot approvals list\n',
    );

    const missing = await approvals("revoke", "coder");
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("missing required argument 'tool'");
  });

  it("explains its usage when the id is missing, and has --help", async () => {
    const result = await approvals("allow");
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("missing required argument 'id'");
    for (const sub of ["list", "allow", "deny", "revoke"]) {
      const help = await approvals(sub, "--help");
      expect(help.code).toBe(0);
      expect(help.stdout).toContain(`Usage: picklebot approvals ${sub}`);
    }
  });
});
