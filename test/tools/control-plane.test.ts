import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type ApprovalQuestion, gateTools } from "../../src/agents/approval-gate.js";
import { type ApprovalPolicy, decide } from "../../src/agents/approval-policy.js";
import {
  type ControlPlaneWrite,
  latestControlPlaneWrites,
  recordControlPlaneWrite,
} from "../../src/agents/control-plane-log.js";
import { createWriteTool } from "../../src/agents/tools/write.js";
import { ParkRequest } from "../../src/base/errors.js";
import { runCli } from "../helpers/cli.js";
import { createTempWorkspace, type TempWorkspace } from "./workspace.js";

let temp: TempWorkspace;
beforeEach(() => {
  temp = createTempWorkspace();
});
afterEach(() => temp.remove());

const CRON = { path: "crons/a.yaml", content: 'schedule: "* * * * *"\nprompt: hi\n' };

/** The write tool behind the gate, recording control-plane writes in `recorded`. */
function gatedWrite(
  policy: ApprovalPolicy,
  ask?: (question: ApprovalQuestion) => Promise<void>,
  recorded: Omit<ControlPlaneWrite, "at">[] = [],
) {
  const [tool] = gateTools([createWriteTool()], policy, ask, async (write) => {
    recorded.push(write);
  });
  return tool as NonNullable<typeof tool>;
}

describe("control-plane writes through the approval policy", () => {
  it("are refused by default, and by rules that do not name the folder", async () => {
    for (const policy of [
      {},
      { write: "allow" },
      { write: [{ pattern: "**", action: "allow" }] },
    ]) {
      await expect(gatedWrite(policy as ApprovalPolicy).run(CRON, temp.context())).rejects.toThrow(
        '"crons/a.yaml" is protected: crons/ is the agents\' control plane',
      );
    }
    expect(existsSync(join(temp.workspace, "crons/a.yaml"))).toBe(false);
  });

  it("run when a rule naming the folder allows them, and are recorded", async () => {
    const policy: ApprovalPolicy = { write: [{ pattern: "crons/**", action: "allow" }] };
    expect(decide(policy, "write", CRON, temp.workspace)).toEqual({
      action: "allow",
      pattern: "crons/**",
    });
    const recorded: Omit<ControlPlaneWrite, "at">[] = [];
    const write = gatedWrite(policy, undefined, recorded);
    const context = { ...temp.context(), jobId: "job-1" };
    expect(await write.run(CRON, context)).toBe("wrote 33 bytes to crons/a.yaml");
    expect(readFileSync(join(temp.workspace, "crons/a.yaml"), "utf8")).toBe(CRON.content);
    expect(recorded).toEqual([
      { agentId: "pickle", tool: "write", path: "crons/a.yaml", jobId: "job-1" },
    ]);
    await expect(write.run({ path: "agents/x/AGENT.md", content: "x" }, context)).rejects.toThrow(
      "agents/ is the agents' control plane",
    );
  });

  it("park a job for the owner when the rule asks, and run once approved", async () => {
    const policy: ApprovalPolicy = { write: [{ pattern: "crons/*.yaml", action: "ask" }] };
    const questions: ApprovalQuestion[] = [];
    const parking = gatedWrite(policy, async (question) => {
      questions.push(question);
      throw new ParkRequest({ kind: "approval", approvalId: "abcd1234" } as never, 0);
    });
    await expect(parking.run(CRON, temp.context())).rejects.toBeInstanceOf(ParkRequest);
    expect(questions).toMatchObject([{ tool: "write", pattern: "crons/*.yaml" }]);
    expect(existsSync(join(temp.workspace, "crons/a.yaml"))).toBe(false);

    const recorded: Omit<ControlPlaneWrite, "at">[] = [];
    const approved = gatedWrite(policy, async () => undefined, recorded);
    await approved.run(CRON, temp.context());
    expect(readFileSync(join(temp.workspace, "crons/a.yaml"), "utf8")).toBe(CRON.content);
    expect(recorded).toHaveLength(1);
  });

  it("stay refused when the rule denies them", async () => {
    const policy: ApprovalPolicy = { write: [{ pattern: "crons/**", action: "deny" }] };
    await expect(gatedWrite(policy).run(CRON, temp.context())).rejects.toThrow(
      "the owner's approvals policy refuses this call (write crons/**: deny)",
    );
  });
});

describe("the record of control-plane writes", () => {
  it("keeps the latest writes, newest first, and picklebot status lists them", async () => {
    const history = join(temp.workspace, "history");
    const at = new Date(2025, 0, 2, 3, 4, 5).getTime();
    await recordControlPlaneWrite(history, {
      at,
      agentId: "pickle",
      tool: "write",
      path: "crons/a.yaml",
    });
    await recordControlPlaneWrite(history, {
      at: at + 1000,
      agentId: "ops",
      tool: "edit",
      path: "agents/ops/AGENT.md",
      jobId: "j1",
    });
    expect((await latestControlPlaneWrites(history, 1)).map((write) => write.path)).toEqual([
      "agents/ops/AGENT.md",
    ]);
    writeFileSync(join(temp.workspace, "picklebot.yaml"), "");
    const result = await runCli(["status", "--workspace", temp.workspace]);
    expect(result.stderr).toBe("");
    expect(result.stdout).toContain(
      [
        "control-plane writes  most recent:",
        '  2025-01-02 03:04:06 UTC  ops  edit "agents/ops/AGENT.md"  job j1',
        '  2025-01-02 03:04:05 UTC  pickle  write "crons/a.yaml"',
      ].join("\n"),
    );
  });
});
