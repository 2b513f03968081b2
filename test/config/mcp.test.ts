import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { POLICY_TOOLS } from "../../src/agents/approval-policy.js";
import { parseAgentFile } from "../../src/agents/definition.js";
import { unknownMcpServersProblem } from "../../src/agents/mcp/names.js";
import { UserError } from "../../src/base/errors.js";
import { loadConfig, redactConfig, secretValues } from "../../src/config/index.js";

let workspace: string;

beforeEach(() => {
  workspace = fs.mkdtempSync(path.join(os.tmpdir(), "picklebot-mcp-config-"));
});

afterEach(() => {
  fs.rmSync(workspace, { recursive: true, force: true });
});

function load(yaml: string, env: Record<string, string> = {}) {
  fs.writeFileSync(path.join(workspace, "picklebot.yaml"), yaml);
  return loadConfig(workspace, env);
}

function loadError(yaml: string): string {
  try {
    load(yaml);
  } catch (thrown) {
    if (thrown instanceof UserError) return thrown.message;
    throw thrown;
  }
  throw new Error("expected loadConfig to fail");
}

describe("mcp_servers in picklebot.yaml", () => {
  it("takes stdio and HTTP servers, with environment secrets and defaults", () => {
    const config = load(
      [
        "mcp_servers:",
        "  github:",
        "    command: npx",
        "    args: [-y, some-mcp-server]",
        `    env: { GITHUB_TOKEN: "\${GITHUB_TOKEN}" }`,
        "    exclude: [delete_repository]",
        "  files:",
        "    url: http://127.0.0.1:9000/mcp",
        `    headers: { Authorization: "Bearer \${FILES_TOKEN}" }`,
        "    call_timeout_ms: 5000",
      ].join("\n"),
      { GITHUB_TOKEN: "ghp_secret", FILES_TOKEN: "files-secret" },
    );
    expect(config.mcp_servers).toEqual({
      github: {
        command: "npx",
        args: ["-y", "some-mcp-server"],
        env: { GITHUB_TOKEN: "ghp_secret" },
        exclude: ["delete_repository"],
        call_timeout_ms: 60_000,
      },
      files: {
        url: "http://127.0.0.1:9000/mcp",
        headers: { Authorization: "Bearer files-secret" },
        call_timeout_ms: 5000,
      },
    });
    expect(secretValues(config)).toEqual(
      expect.arrayContaining(["ghp_secret", "Bearer files-secret"]),
    );
    const shown = JSON.stringify(redactConfig(config));
    expect(shown).not.toContain("ghp_secret");
    expect(shown).not.toContain("files-secret");
  });

  it("has no servers by default", () => {
    expect(load("timezone: UTC\n").mcp_servers).toEqual({});
  });

  it("refuses a server name that cannot prefix a tool name", () => {
    expect(loadError("mcp_servers:\n  My.Server:\n    url: http://127.0.0.1/mcp\n")).toContain(
      "mcp_servers.My.Server: not a valid server name; use up to 32 lower-case letters",
    );
    expect(loadError("mcp_servers:\n  a__b:\n    url: http://127.0.0.1/mcp\n")).toContain(
      "(no __)",
    );
  });

  it("refuses an entry with neither or both of command and url", () => {
    expect(loadError("mcp_servers:\n  x:\n    args: [a]\n")).toContain(
      "mcp_servers.x: needs a command (a stdio server) or a url (a streamable HTTP server)",
    );
    expect(loadError("mcp_servers:\n  x:\n    command: a\n    url: http://h/mcp\n")).toContain(
      "mcp_servers.x: has both command and url",
    );
  });

  it("names the key of an unknown setting, a bad url and a bad timeout", () => {
    expect(loadError("mcp_servers:\n  x:\n    command: a\n    envv: {}\n")).toMatch(
      'mcp_servers.x.envv: unknown key; did you mean "env"?',
    );
    expect(loadError("mcp_servers:\n  x:\n    url: ftp://h/mcp\n")).toContain(
      "mcp_servers.x.url: expected an http:// or https:// URL",
    );
    expect(
      loadError("mcp_servers:\n  x:\n    url: http://h/mcp\n    call_timeout_ms: 0\n"),
    ).toContain("mcp_servers.x.call_timeout_ms: expected a whole number of milliseconds");
    expect(loadError("mcp_servers:\n  x:\n    command: a\n    headers: {}\n")).toContain(
      "mcp_servers.x.headers: not a setting of a stdio server (command); remove it",
    );
  });

  const github = "mcp_servers:\n  github:\n    url: http://127.0.0.1:9/mcp\n";

  it("lets approvals name mcp:<server> and mcp:<server>/<tool>", () => {
    const config = load(
      `${github}approvals:\n  policy:\n    "mcp:github": ask\n    "mcp:github/get_issue": allow\n`,
    );
    expect(config.approvals.policy).toEqual({
      "mcp:github": "ask",
      "mcp:github/get_issue": "allow",
    });
  });

  it("refuses an approvals entry for a server mcp_servers does not have, with the closest name", () => {
    expect(loadError(`${github}approvals:\n  policy:\n    "mcp:githb/get_issue": ask\n`)).toContain(
      "approvals.policy.mcp:githb/get_issue: names no server of mcp_servers; did you mean " +
        '"mcp:github/get_issue"? (configured: github); correct the entry, or add the server ' +
        "under mcp_servers",
    );
    expect(loadError('approvals:\n  policy:\n    "mcp:github": ask\n')).toContain(
      "approvals.policy.mcp:github: names no server of mcp_servers (configured: none)",
    );
  });

  it("refuses an mcp: entry in upper case, suggesting the lower-case one", () => {
    const file = path.join(workspace, "picklebot.yaml");
    fs.writeFileSync(file, `${github}approvals:\n  policy:\n    "mcp:GitHub/get_issue": ask\n`);
    expect(() => loadConfig(workspace, {}, { tools: POLICY_TOOLS })).toThrow(
      "approvals.policy.mcp:GitHub/get_issue: is not an MCP entry; did you mean " +
        '"mcp:github/get_issue"? write mcp:<server> or mcp:<server>/<tool>',
    );
  });
});

describe("mcp: entries in AGENT.md", () => {
  const agent = (tools: string) => `---\nname: A\ndescription: d\ntools: ${tools}\n---\nYou are A.`;

  it("takes mcp:<server>, mcp:<server>/<tool> and mcp:*", () => {
    const parsed = parseAgentFile(
      "a",
      agent("[read, mcp:github, mcp:files/read_file, mcp:*]"),
      "A.md",
    );
    expect(parsed.tools).toEqual(["read", "mcp:github", "mcp:files/read_file", "mcp:*"]);
  });

  it("names approvals and tools entries for servers mcp_servers does not have, with the closest name", () => {
    const parsed = parseAgentFile(
      "a",
      `---\nname: A\ndescription: d\ntools: [mcp:github]\napprovals:\n  "mcp:gihub/merge": deny\n---\nYou are A.`,
      "A.md",
    );
    expect(unknownMcpServersProblem(parsed, ["github"])).toBe(
      'A.md: approvals: "mcp:gihub/merge" (did you mean "mcp:github/merge"?) names no server ' +
        "of mcp_servers in picklebot.yaml (configured: github); add the server there or " +
        "correct the entry",
    );
    expect(unknownMcpServersProblem(parsed, ["github", "gihub"])).toBeNull();
  });

  it("refuses a malformed mcp: entry, naming it", () => {
    expect(() => parseAgentFile("a", agent("[mcp:Git Hub]"), "A.md")).toThrow(
      'bad MCP entry "mcp:Git Hub": "Git Hub" is not a server name',
    );
    expect(() => parseAgentFile("a", agent("[mcp:files/]"), "A.md")).toThrow(
      "the tool name after / is empty",
    );
  });
});
