#!/usr/bin/env node
// Idle memory of `picklebot server` with and without MCP servers (`node bench/mcp.js`,
// after `npm run build`). Each case is a fresh workspace with the fake model and no chat
// platform:
//   - no mcp_servers (this build, and with `--base <checkout>` a build of another commit);
//   - two servers configured (one stdio, one streamable HTTP) but not used yet: the MCP
//     SDK is imported on first use only, so this should match "no mcp_servers";
//   - the same two servers after one turn (a console job) that called a tool of each.
// RSS is read from /proc/<pid>/status after the server has been idle for `settleMs`;
// the stdio server's own process is reported apart.
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { loadFakes, rssMiB, sleep, startServer } from "./lib/server.js";
import { markdownTable } from "./lib/stats.js";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const FAKE_MCP = join(ROOT, "test/fakes/mcp-server.mjs");

/** Starts the fake MCP server over HTTP; resolves with its URL and process. */
function startHttpMcp() {
  const child = spawn(process.execPath, [FAKE_MCP, "--http", "--name", "web"], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  return new Promise((done, fail) => {
    child.on("exit", () => fail(new Error("the HTTP MCP fake exited")));
    child.stdout.on("data", (chunk) => {
      const port = /listening (\d+)/.exec(String(chunk))?.[1];
      if (port) done({ url: `http://127.0.0.1:${port}/mcp`, child });
    });
  });
}

/** The fake model: calls every `*__echo` tool offered once, then answers. */
function echoEverywhere(request) {
  const last = request.body.messages.at(-1);
  const answered =
    Array.isArray(last?.content) && last.content.some((b) => b.type === "tool_result");
  if (answered) return { text: "done" };
  const echoes = (request.body.tools ?? []).map((t) => t.name).filter((n) => n.endsWith("__echo"));
  if (echoes.length === 0) return { text: "done" };
  return { toolUses: echoes.map((name) => ({ name, input: { text: "hi" } })) };
}

/** Pids of processes whose command line holds `marker`. */
function pidsRunning(marker) {
  return readdirSync("/proc")
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(marker);
      } catch {
        return false;
      }
    })
    .map(Number);
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

/** Median of three RSS readings a second apart. */
async function idleRss(pid) {
  const readings = [];
  for (let i = 0; i < 3; i += 1) {
    readings.push(rssMiB(pid));
    await sleep(1000);
  }
  return median(readings);
}

/** Enqueues a console turn of `pickle` and waits until the server has run it. */
async function runOneTurn(root, workspace) {
  const { openDatabase } = await import(join(root, "dist/storage/sqlite/database.js"));
  const { SqliteJobQueue } = await import(join(root, "dist/storage/sqlite/queue.js"));
  const db = openDatabase(join(workspace, "history", "picklebot.db"));
  const queue = new SqliteJobQueue({ db });
  try {
    const job = await queue.enqueue({
      agentId: "pickle",
      sessionKey: "console:bench",
      message: "hi",
      mode: "chat",
      replyTo: { kind: "console" },
    });
    for (let waited = 0; (await queue.get(job.id))?.state !== "done"; waited += 100) {
      if (waited > 30_000) throw new Error("the turn did not finish within 30 s");
      await sleep(100);
    }
  } finally {
    await queue.close();
    db.close();
  }
}

/** Runs one case; returns the server's idle RSS and the stdio server's, in MiB. */
async function runCase({ anthropic, root, mcpYaml, agent, send, settleMs }) {
  const dir = mkdtempSync(join(tmpdir(), "picklebot-bench-mcp-"));
  const model = await anthropic.startFakeAnthropic({ defaultReply: echoEverywhere });
  const workspace = join(dir, "ws");
  mkdirSync(workspace);
  writeFileSync(
    join(workspace, "picklebot.yaml"),
    `llm:\n  api_key: bench\n  base_url: ${model.url}\nhttp:\n  port: 0\n${mcpYaml}`,
  );
  if (agent) {
    mkdirSync(join(workspace, "agents/pickle"), { recursive: true });
    writeFileSync(join(workspace, "agents/pickle/AGENT.md"), agent);
  }
  const server = await startServer(workspace, 0, root);
  try {
    await sleep(settleMs);
    if (send) await runOneTurn(root, workspace);
    await sleep(settleMs);
    const rss = await idleRss(server.pid);
    const [stdioPid] = pidsRunning("--name\0bench-stdio");
    const stdio = stdioPid === undefined ? null : rssMiB(stdioPid);
    return { rss, stdio };
  } finally {
    server.kill("SIGTERM");
    await new Promise((done) => server.once("exit", done));
    await model.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Runs the benchmark; returns the rows and a markdown report. */
export async function runMcpBench(options = {}) {
  const settleMs = options.settleMs ?? 3000;
  const runs = options.runs ?? 3;
  const { anthropic } = await loadFakes(["anthropic"], tmpdir());
  const http = await startHttpMcp();
  const servers = {
    local: {
      command: process.execPath,
      args: [FAKE_MCP, "--name", "bench-stdio"],
      sandbox: "none",
    },
    web: { url: http.url },
  };
  const twoServers = `mcp_servers: ${JSON.stringify(servers)}\n`;
  const agent = "---\nname: Pickle\ndescription: MCP\ntools: [mcp:*]\n---\nYou are Pickle.";
  const cases = [
    ["no mcp_servers (this build)", { root: ROOT, mcpYaml: "" }],
    ["two servers configured, not used yet", { root: ROOT, mcpYaml: twoServers, agent }],
    [
      "two servers, after one turn calling both",
      { root: ROOT, mcpYaml: twoServers, agent, send: true },
    ],
  ];
  if (options.base)
    cases.unshift([`no mcp_servers (base build)`, { root: options.base, mcpYaml: "" }]);
  const results = new Map(cases.map(([name]) => [name, []]));
  try {
    // Rounds of every case in turn, so that a busy moment of the machine hits all alike.
    for (let round = 0; round < runs; round += 1) {
      for (const [name, settings] of cases) {
        results.get(name).push(await runCase({ anthropic, settleMs, ...settings }));
      }
    }
  } finally {
    http.child.kill("SIGKILL");
  }
  const rows = [...results].map(([name, measured]) => ({
    name,
    rss: median(measured.map((m) => m.rss)),
    spread: `${Math.min(...measured.map((m) => m.rss)).toFixed(1)}–${Math.max(...measured.map((m) => m.rss)).toFixed(1)}`,
    stdio: measured[0].stdio === null ? null : median(measured.map((m) => m.stdio)),
  }));
  const markdown = markdownTable(
    ["case", `server idle RSS, median of ${runs} (MiB)`, "range", "stdio MCP server's RSS (MiB)"],
    rows.map((row) => [
      row.name,
      row.rss.toFixed(1),
      row.spread,
      row.stdio === null ? "–" : row.stdio.toFixed(1),
    ]),
  );
  return { rows, markdown };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const baseIndex = process.argv.indexOf("--base");
  const base = baseIndex === -1 ? undefined : resolve(process.argv[baseIndex + 1]);
  const runsIndex = process.argv.indexOf("--runs");
  const runs = runsIndex === -1 ? undefined : Number(process.argv[runsIndex + 1]);
  const { markdown } = await runMcpBench({ base, runs });
  console.log(markdown);
}
