import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  type ApprovalAsker,
  type ApprovalQuestion,
  gateTools,
} from "../../src/agents/approval-gate.js";
import {
  type ApprovalPolicy,
  agentPolicy,
  approvalIdFor,
  decide,
  globToRegExp,
  POLICY_TOOLS,
} from "../../src/agents/approval-policy.js";
import { parseAgentFile } from "../../src/agents/definition.js";
import { createToolbox } from "../../src/agents/tools/index.js";
import { ToolError, UserError } from "../../src/base/errors.js";
import { loadConfig } from "../../src/config/index.js";
import { createTempWorkspace, type TempWorkspace } from "../tools/workspace.js";

const AGENT_FILE = "agents/coder/AGENT.md";

function agentWith(approvals: string) {
  return parseAgentFile(
    "coder",
    `---\nname: C\ndescription: D\n${approvals}\n---\nHi.\n`,
    AGENT_FILE,
  );
}

/** The message of the UserError `load` throws. */
function refusal(load: () => unknown): string {
  try {
    load();
  } catch (thrown) {
    if (thrown instanceof UserError) return thrown.message;
    throw thrown;
  }
  throw new Error("expected a UserError");
}

const agentError = (approvals: string) => refusal(() => agentWith(approvals));

describe("globToRegExp", () => {
  it.each([
    ["*.md", "a.md", true],
    ["*.md", "notes/a.md", false],
    ["notes/*", "notes/a.md", true],
    ["notes/*", "notes/x/a.md", false],
    ["notes/**", "notes/x/a.md", true],
    ["notes/**", "notesy/a.md", false],
    ["**/*.md", "a.md", true],
    ["**/*.md", "x/y/a.md", true],
    ["a/**/b", "a/b", true],
    ["a/**/b", "a/x/y/b", true],
    ["?.txt", "a.txt", true],
    ["?.txt", "ab.txt", false],
    ["a+b(1).md", "a+b(1).md", true],
    ["a.md", "aXmd", false],
    ["**", "anything/at/all", true],
  ])("%s against %s is %s", (glob, target, expected) => {
    expect(globToRegExp(glob).test(target)).toBe(expected);
  });
});

describe("decide", () => {
  const policy = agentWith(
    'approvals:\n  bash: ask\n  web_fetch: deny\n  write:\n    "notes/**": allow\n    "*.md": deny\n    "**": ask',
  ).approvals;

  it("allows an unlisted tool, and gives a tool's action with the pattern *", () => {
    expect(decide(policy, "read", { path: "a" })).toEqual({ action: "allow", pattern: "*" });
    expect(decide(policy, "bash", { command: "ls" })).toEqual({ action: "ask", pattern: "*" });
    expect(decide(policy, "web_fetch", { url: "x" })).toEqual({ action: "deny", pattern: "*" });
  });

  it("takes the first path rule that matches, after normalising the path", () => {
    expect(decide(policy, "write", { path: "notes/a/b.md" })).toEqual({
      action: "allow",
      pattern: "notes/**",
    });
    expect(decide(policy, "write", { path: "./x//todo.md" }).pattern).toBe("**");
    expect(decide(policy, "write", { path: "./todo.md" })).toEqual({
      action: "deny",
      pattern: "*.md",
    });
    expect(decide(policy, "write", { path: "notes/../todo.md" }).pattern).toBe("*.md");
  });

  it("matches an absolute path inside the workspace relative to it", () => {
    const decision = decide(policy, "write", { path: "/ws/notes/a.md" }, "/ws");
    expect(decision).toEqual({ action: "allow", pattern: "notes/**" });
  });

  it("lets only ** match a path that leaves the workspace, or none", () => {
    const escaping = agentWith(
      'approvals:\n  read:\n    "*/x": allow\n    "**/x": allow',
    ).approvals;
    for (const target of ["../x", "/etc/x", "notes/../../x", undefined]) {
      expect(decide(escaping, "read", { path: target })).toEqual({
        action: "allow",
        pattern: "*",
      });
      expect(decide(policy, "write", { path: target })).toEqual({ action: "ask", pattern: "**" });
    }
    expect(decide(policy, "write", { path: "/elsewhere/notes/a.md" }, "/ws").pattern).toBe("**");
  });

  it("allows a file-tool path that no rule matches", () => {
    const partial = agentWith('approvals:\n  edit:\n    "src/**": ask').approvals;
    expect(decide(partial, "edit", { path: "docs/a.md" })).toEqual({
      action: "allow",
      pattern: "*",
    });
  });

  it("lets an agent's entry replace the default's for that tool only", () => {
    const merged = agentPolicy({ bash: "deny", web_fetch: "ask" }, { bash: "allow" });
    expect(decide(merged, "bash", {}).action).toBe("allow");
    expect(decide(merged, "web_fetch", {}).action).toBe("ask");
  });
});

describe("a write entry rules every tool that writes files", () => {
  let temp: TempWorkspace;
  beforeEach(() => {
    temp = createTempWorkspace();
    fs.writeFileSync(path.join(temp.workspace, "run.sh"), "echo old\n");
  });
  afterEach(() => temp.remove());

  const EDIT = { path: "run.sh", old_text: "old", new_text: "new" };

  function gatedEdit(policy: ApprovalPolicy, ask?: ApprovalAsker) {
    const [edit] = gateTools(createToolbox(["edit"]), policy, ask);
    return edit as NonNullable<typeof edit>;
  }

  it("asks before an edit under write: ask, and refuses it under write: deny", async () => {
    const questions: ApprovalQuestion[] = [];
    const asked = gatedEdit({ write: "ask" }, async (question) => {
      questions.push(question);
      throw new ToolError("edit: the owner denied this call");
    });
    await expect(asked.run(EDIT, temp.context())).rejects.toThrow("the owner denied this call");
    expect(questions).toMatchObject([{ tool: "edit", pattern: "*", summary: "edit run.sh" }]);
    await expect(gatedEdit({ write: "deny" }).run(EDIT, temp.context())).rejects.toThrow(
      "edit: the owner's approvals policy refuses this call (write: deny)",
    );
    await expect(
      gatedEdit({ write: [{ pattern: "*.sh", action: "deny" }] }).run(EDIT, temp.context()),
    ).rejects.toThrow("(write *.sh: deny)");
    expect(fs.readFileSync(path.join(temp.workspace, "run.sh"), "utf8")).toBe("echo old\n");
  });

  it("lets an edit entry of its own decide for edit", async () => {
    const edit = gatedEdit({ write: "deny", edit: "allow" });
    expect(await edit.run(EDIT, temp.context())).toContain("run.sh");
    expect(fs.readFileSync(path.join(temp.workspace, "run.sh"), "utf8")).toBe("echo new\n");
  });
});

describe("approvals in AGENT.md", () => {
  it("keeps the order of path rules and defaults to no policy", () => {
    expect(agentWith("").approvals).toEqual({});
    expect(
      agentWith('approvals: {bash: ask, write: {"notes/**": allow, "**": ask}}').approvals,
    ).toEqual({
      bash: "ask",
      write: [
        { pattern: "notes/**", action: "allow" },
        { pattern: "**", action: "ask" },
      ],
    });
  });

  it("refuses a bad action, naming the file and the key", () => {
    expect(agentError("approvals:\n  bash: maybe")).toBe(
      `${AGENT_FILE}: approvals.bash: must be allow, ask or deny; found "maybe".`,
    );
    expect(agentError("approvals:\n  write: [a]")).toBe(
      `${AGENT_FILE}: approvals.write: must be allow, ask or deny, or a mapping of path glob to one of those; found a list.`,
    );
    expect(agentError('approvals:\n  write: {"notes/**": sure}')).toBe(
      `${AGENT_FILE}: approvals.write.notes/**: must be allow, ask or deny; found "sure".`,
    );
  });

  it("refuses an unknown tool, listing the known ones, and accepts subagent", () => {
    expect(agentError("approvals:\n  bsh: ask")).toBe(
      `${AGENT_FILE}: approvals.bsh: unknown tool; did you mean "bash"? (known: ${POLICY_TOOLS.names.join(", ")}).`,
    );
    expect(agentWith("approvals:\n  subagent: ask").approvals).toEqual({ subagent: "ask" });
  });

  it("takes path rules only on file tools, and only globs inside the workspace", () => {
    expect(agentError('approvals:\n  bash: {"**": ask}')).toContain(
      "approvals.bash: must be allow, ask or deny (path globs are for read, write, edit, send_file only); found a mapping.",
    );
    expect(agentError('approvals:\n  read: {"/etc/**": ask}')).toContain(
      "approvals.read./etc/**: is an absolute path",
    );
    expect(agentError('approvals:\n  read: {"../**": ask}')).toContain(
      'approvals.read.../**: leaves the workspace with ".."',
    );
    expect(agentError("approvals:\n  read: {}")).toContain("approvals.read: has no path rules");
  });
});

describe("approvals in picklebot.yaml", () => {
  let workspace: string;
  beforeEach(() => {
    workspace = fs.mkdtempSync(path.join(os.tmpdir(), "picklebot-approvals-"));
  });
  afterEach(() => fs.rmSync(workspace, { recursive: true, force: true }));

  function load(yaml: string) {
    fs.writeFileSync(path.join(workspace, "picklebot.yaml"), yaml);
    return loadConfig(workspace, {}, { tools: POLICY_TOOLS });
  }

  const loadError = (yaml: string) => refusal(() => load(yaml));

  it("defaults to no policy and an hour to answer", () => {
    expect(load("").approvals).toEqual({ policy: {}, timeout_s: 3600 });
  });

  it("parses the policy like AGENT.md's, and the timeout", () => {
    const config = load('approvals:\n  timeout_s: 600\n  policy:\n    read: {"secrets/**": deny}');
    expect(config.approvals).toEqual({
      policy: { read: [{ pattern: "secrets/**", action: "deny" }] },
      timeout_s: 600,
    });
  });

  it("names the file and the key of a mistake", () => {
    const file = path.join(workspace, "picklebot.yaml");
    expect(loadError("approvals:\n  policy:\n    bash: often")).toBe(
      `${file}: approvals.policy.bash: must be allow, ask or deny; found "often".`,
    );
    expect(loadError("approvals:\n  timeout_s: 0")).toContain(
      `${file}: approvals.timeout_s: expected a whole number of at least 1, found 0`,
    );
    expect(loadError("approvals:\n  polcy: {}")).toContain('did you mean "policy"?');
  });
});

describe("approvalIdFor", () => {
  it("gives one call the same short, typeable id, and other calls others", () => {
    const id = approvalIdFor("job-1", "toolu_1");
    expect(id).toMatch(/^[A-Z2-9]{8}$/);
    expect(approvalIdFor("job-1", "toolu_1")).toBe(id);
    expect(approvalIdFor("job-1", "toolu_2")).not.toBe(id);
  });
});
