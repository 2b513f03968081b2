/**
 * A stdio MCP server inside the bash sandbox (bubblewrap), as picklebot starts it by
 * default. The server here is a minimal MCP speaker written into the workspace (the SDK
 * lives outside the workspace, which the sandbox does not show): it reports what it can
 * see of its environment and of the file system.
 */
import { readdirSync, readFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { McpServers } from "../../src/agents/mcp/servers.js";
import { probeBubblewrap } from "../../src/agents/tools/sandbox.js";
import { testConfig } from "../helpers/config.js";
import { makeWorkspace, type TempWorkspace } from "../helpers/workspace.js";

const probe = probeBubblewrap();
const runsHere = probe.usable || process.env.CI === "true";
if (!runsHere) console.warn(`MCP sandbox tests skipped: ${probe.problem}`);

/** Answers initialize, tools/list and one tool, `probe`, over newline-delimited JSON-RPC. */
const PROBE_SERVER = `
import { existsSync, readFileSync } from "node:fs";
import { createInterface } from "node:readline";
const send = (message) => process.stdout.write(JSON.stringify({ jsonrpc: "2.0", ...message }) + "\\n");
const readable = (file) => { try { readFileSync(file); return true; } catch { return false; } };
createInterface({ input: process.stdin }).on("line", (line) => {
  const { id, method } = JSON.parse(line);
  if (method === "initialize") {
    send({ id, result: { protocolVersion: "2025-06-18", capabilities: { tools: {} }, serverInfo: { name: "probe", version: "1" } } });
  } else if (method === "tools/list") {
    send({ id, result: { tools: [{ name: "probe", inputSchema: { type: "object" } }] } });
  } else if (method === "tools/call") {
    const seen = {
      env: Object.keys(process.env).sort(),
      greeting: process.env.GREETING,
      outside: existsSync(process.argv[2]),
      dotEnvReadable: readable(".env") && readFileSync(".env", "utf8").length > 0,
    };
    send({ id, result: { content: [{ type: "text", text: JSON.stringify(seen) }] } });
  } else if (id !== undefined) {
    send({ id, error: { code: -32601, message: "no such method" } });
  }
});
`;

let workspace: TempWorkspace;
let servers: McpServers | undefined;

afterEach(async () => {
  await servers?.stop();
  workspace?.remove();
});

describe.skipIf(!runsHere)("a stdio MCP server under bubblewrap", () => {
  it("gets only its configured environment and does not see outside the workspace", async () => {
    workspace = makeWorkspace({ "probe.mjs": PROBE_SERVER, ".env": "ANTHROPIC_API_KEY=sk-x\n" });
    const outside = process.cwd();
    const seen = await runProbe(workspace.dir, outside, "hi");
    expect(seen).toEqual({
      env: ["GREETING", "HOME", "LANG", "PATH", "PWD"],
      greeting: "hi",
      outside: false,
      dotEnvReadable: false,
    });
  });
});

/**
 * Starts the probe server of `dir` (`probe.mjs`, asked about `outside`, with GREETING in
 * its `env`) as a sandboxed MCP server and returns what its tool saw.
 */
async function runProbe(dir: string, outside: string, greeting: string) {
  const config = testConfig(dir, {
    mcp_servers: {
      probe: { command: "node", args: ["probe.mjs", outside], env: { GREETING: greeting } },
    },
  });
  servers = new McpServers({ servers: config.mcp_servers, surroundings: { workspace: dir } });
  const [probe] = await servers.toolsFor(["mcp:probe"]);
  const signal = new AbortController().signal;
  const context = { workspace: dir, signal, agentId: "a", sessionKey: "console:t" };
  return JSON.parse((await probe?.run({}, context)) ?? "{}");
}

/** The pids of every process whose parent chain leads to `ancestor`. */
function descendantsOf(ancestor: number): number[] {
  const parents = new Map<number, number>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      // The command name (in parentheses) may hold spaces; the parent pid follows it.
      const parent = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      parents.set(Number(entry), parent);
    } catch {
      // Exited while we looked.
    }
  }
  return [...parents.keys()].filter((pid) => {
    for (let up = parents.get(pid); up !== undefined && up > 1; up = parents.get(up)) {
      if (up === ancestor) return true;
    }
    return false;
  });
}

describe.skipIf(!runsHere)("an MCP server's env values", () => {
  it("reach the server through its environment, never through any command line", async () => {
    const token = "ghp_FAKEtoken1234567890secret";
    workspace = makeWorkspace({ "probe.mjs": PROBE_SERVER });
    const seen = await runProbe(workspace.dir, "/", token);
    expect(seen.greeting).toBe(token);
    const started = descendantsOf(process.pid);
    const commandLines = started.map((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ");
      } catch {
        return "";
      }
    });
    // bwrap, and node inside it, are among them.
    expect(commandLines.some((line) => line.includes("bwrap"))).toBe(true);
    expect(commandLines.some((line) => line.includes("probe.mjs"))).toBe(true);
    expect(commandLines.filter((line) => line.includes(token))).toEqual([]);
  });
});
