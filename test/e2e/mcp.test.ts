/**
 * MCP servers end to end: `picklebot server` as a child process with the Telegram bus
 * against the fake Bot API, the fake Anthropic API as the model, and two real MCP servers
 * (the SDK's server side): one over stdio that the server starts, one over streamable
 * HTTP on 127.0.0.1. Also `picklebot mcp list` and an agent naming an unknown server.
 */
import { readdirSync, readFileSync } from "node:fs";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  type FakeAnthropic,
  type FakeReply,
  lastUserText,
  type RecordedRequest,
  startFakeAnthropic,
} from "../fakes/anthropic.js";
import { FAKE_MCP_SERVER, type HttpFake, startHttpFake, stdioFake } from "../fakes/mcp.js";
import { type FakeTelegram, startFakeTelegram } from "../fakes/telegram.js";
import { busWorkspace, startBusServer, telegramYaml } from "../helpers/bus.js";
import { runCli } from "../helpers/cli.js";
import { killAllServers } from "../helpers/server.js";
import { lastResults } from "../helpers/subagents.js";
import { waitFor } from "../helpers/wait.js";
import { fakeModelConfig, type TempWorkspace } from "../helpers/workspace.js";

const OWNER = 4242;

const AGENT = `---
name: Pickle
description: Uses MCP tools
tools: [mcp:*]
---
You are Pickle.`;

let model: FakeAnthropic;
let telegram: FakeTelegram;
let http: HttpFake;
let ws: TempWorkspace;

/** The fake model: calls the `echo` of every MCP server offered, then answers with the results. */
function echoEverywhereModel(request: RecordedRequest): FakeReply {
  const results = lastResults(request);
  if (results.length > 0) return { text: `answer: ${results.map((r) => r.content).join(" | ")}` };
  const names = (request.body.tools ?? []).map((tool) => String(tool.name));
  const echoes = names.filter((name) => name.endsWith("__echo"));
  if (echoes.length === 0) return { text: "answer: no MCP tools" };
  const text = lastUserText(request);
  return { toolUses: echoes.map((name) => ({ name, input: { text } })) };
}

/** Pids of the fake MCP servers whose command line holds `marker`. */
function processesRunning(marker: string): number[] {
  return readdirSync("/proc")
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        const command = readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ");
        return command.includes(FAKE_MCP_SERVER) && command.includes(marker);
      } catch {
        return false;
      }
    })
    .map(Number);
}

function mcpYaml(servers: Record<string, unknown>): string {
  return `mcp_servers: ${JSON.stringify(servers)}\n`;
}

beforeEach(async () => {
  model = await startFakeAnthropic({ defaultReply: echoEverywhereModel });
  telegram = await startFakeTelegram();
  http = await startHttpFake("web");
});

afterEach(async () => {
  await killAllServers();
  await telegram.close();
  await model.close();
  await http.stop();
  ws.remove();
});

describe("MCP tools end to end", () => {
  it("an agent with tools: [mcp:*] answers a Telegram message with a stdio and an HTTP tool", async () => {
    const servers = { local: stdioFake({}, ["--name", "local"]), web: { url: http.url } };
    ws = busWorkspace(
      model.url,
      telegramYaml(telegram, { allowedUserIds: [OWNER] }) + mcpYaml(servers),
      { "agents/pickle/AGENT.md": AGENT },
    );
    const server = await startBusServer(ws.dir, ["telegram"]);

    telegram.sendUserMessage({ chatId: OWNER, userId: OWNER, text: "pickles" });
    await telegram
      .waitFor(() => telegram.messages(OWNER).includes("answer: local: pickles | web: pickles"))
      .catch((error: unknown) => {
        throw new Error(`the chat shows ${JSON.stringify(telegram.messages(OWNER))}: ${error}`);
      });
    const tools = model.requests[0]?.body.tools ?? [];
    expect(model.refused).toEqual([]);
    expect(tools.map((tool) => tool.name)).toContain("local__echo");
    expect(tools.map((tool) => tool.name)).toContain("web__add_tool");
    expect(JSON.stringify(tools)).not.toContain("$schema");

    const [child] = processesRunning("--name local");
    expect(child).toBeDefined();
    server.signal("SIGTERM");
    expect((await server.exited).code).toBe(0);
    expect(processesRunning("--name local")).toEqual([]);
  });

  it("servers that list tools for ever or list a name twice do not stop the turn", async () => {
    const servers = {
      local: stdioFake({}, ["--name", "local"]),
      endless: stdioFake({}, ["--endless-pages"]),
      dup: stdioFake({}, ["--name", "dup", "--duplicate-tools"]),
    };
    ws = busWorkspace(
      model.url,
      telegramYaml(telegram, { allowedUserIds: [OWNER] }) + mcpYaml(servers),
      { "agents/pickle/AGENT.md": AGENT },
    );
    const server = await startBusServer(ws.dir, ["telegram"]);
    telegram.sendUserMessage({ chatId: OWNER, userId: OWNER, text: "still here" });
    await telegram
      .waitFor(() =>
        telegram.messages(OWNER).includes("answer: local: still here | dup: still here"),
      )
      .catch((error: unknown) => {
        throw new Error(`the chat shows ${JSON.stringify(telegram.messages(OWNER))}: ${error}`);
      });
    expect(model.refused).toEqual([]);
    const names = (model.requests[0]?.body.tools ?? []).map((tool) => String(tool.name));
    expect(names.filter((name) => name === "dup__echo")).toHaveLength(1);
    expect(names.filter((name) => name.startsWith("endless__"))).toEqual([]);
    const warnings = server.linesMatching(
      (line) => line.mcpServer !== undefined && line.level === 40,
    );
    expect(warnings.map((line) => line.msg).sort()).toEqual([
      'MCP server "dup" lists the tool "echo" 2 times; picklebot offers the first and ignores ' +
        "the others (the model API refuses two tools of one name)",
      'MCP server "endless" cannot be used: lists its tools over more than 20 pages (its ' +
        "nextCursor never ends)",
    ]);
  });

  it("a stdio server does not outlive a SIGKILLed picklebot server", async () => {
    const servers = { local: stdioFake({}, ["--name", "orphan-check"]), web: { url: http.url } };
    ws = busWorkspace(
      model.url,
      telegramYaml(telegram, { allowedUserIds: [OWNER] }) + mcpYaml(servers),
      { "agents/pickle/AGENT.md": AGENT },
    );
    const server = await startBusServer(ws.dir, ["telegram"]);
    telegram.sendUserMessage({ chatId: OWNER, userId: OWNER, text: "hi" });
    await telegram.waitFor(() =>
      telegram.messages(OWNER).some((text) => text.startsWith("answer:")),
    );
    expect(processesRunning("orphan-check")).toHaveLength(1);
    await server.kill();
    await waitFor(() => processesRunning("orphan-check").length === 0, "the stdio server to exit");
  });

  it("picks up a server added to picklebot.yaml while it runs", async () => {
    const base = telegramYaml(telegram, { allowedUserIds: [OWNER] });
    ws = busWorkspace(model.url, base, { "agents/pickle/AGENT.md": AGENT });
    const server = await startBusServer(ws.dir, ["telegram"]);
    telegram.sendUserMessage({ chatId: OWNER, userId: OWNER, text: "one" });
    await telegram.waitFor(() => telegram.messages(OWNER).includes("answer: no MCP tools"));

    ws.write(
      "picklebot.yaml",
      fakeModelConfig(model.url, base + mcpYaml({ web: { url: http.url } })),
    );
    await server.waitForLog("picklebot.yaml changed: mcp_servers reloaded");
    telegram.sendUserMessage({ chatId: OWNER, userId: OWNER, text: "two" });
    await telegram.waitFor(() => telegram.messages(OWNER).includes("answer: web: two"));
  });

  it("a reload of mcp_servers does not drop a turn in progress", async () => {
    const base = telegramYaml(telegram, { allowedUserIds: [OWNER] });
    ws = busWorkspace(model.url, base + mcpYaml({ web: { url: http.url } }), {
      "agents/pickle/AGENT.md": AGENT,
    });
    const server = await startBusServer(ws.dir, ["telegram"]);
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    // The turn calls web__echo, then its answer stops after the first chunk until released.
    model.script(echoEverywhereModel, {
      text: "answered across the reload",
      chunks: 3,
      pauseAfterChunks: 1,
      resume: held,
    });
    telegram.sendUserMessage({ chatId: OWNER, userId: OWNER, text: "one" });
    await telegram.waitForCall("sendMessage", undefined, 10_000);

    const servers = { local: stdioFake({}, ["--name", "local"]), web: { url: http.url } };
    ws.write("picklebot.yaml", fakeModelConfig(model.url, base + mcpYaml(servers)));
    await server.waitForLog("picklebot.yaml changed: mcp_servers reloaded");
    release();
    await telegram.waitFor(() => telegram.messages(OWNER).includes("answered across the reload"));

    telegram.sendUserMessage({ chatId: OWNER, userId: OWNER, text: "two" });
    await telegram
      .waitFor(() => telegram.messages(OWNER).includes("answer: web: two | local: two"))
      .catch((error: unknown) => {
        throw new Error(`the chat shows ${JSON.stringify(telegram.messages(OWNER))}: ${error}`);
      });
    const jobs = JSON.parse((await runCli(["jobs", "--json", "--workspace", ws.dir])).stdout);
    expect(
      jobs.map((job: { state: string; attempts: number }) => [job.state, job.attempts]),
    ).toEqual([
      ["done", 1],
      ["done", 1],
    ]);
  });

  it("picklebot chat uses MCP tools too, and stops the stdio server when it ends", async () => {
    const servers = { local: stdioFake({}, ["--name", "chat-local"]), web: { url: http.url } };
    ws = busWorkspace(model.url, mcpYaml(servers), { "agents/pickle/AGENT.md": AGENT });
    const result = await runCli(["chat", "--workspace", ws.dir], { input: "terminal\n" });
    expect(result.stdout).toBe("answer: chat-local: terminal | web: terminal\n");
    expect(result.stderr).toContain("· local__echo");
    expect(result.code).toBe(0);
    expect(processesRunning("chat-local")).toEqual([]);
  });

  it("picklebot mcp list shows each server's state and tools, and --json for scripts", async () => {
    const servers = {
      local: stdioFake(),
      web: { url: http.url },
      broken: stdioFake({}, ["--fail-start"]),
    };
    ws = busWorkspace(model.url, mcpYaml(servers));
    const table = await runCli(["mcp", "list", "--workspace", ws.dir]);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/local\s+stdio\s+ready\s+local__echo, local__refuse/);
    expect(table.stdout).toMatch(/web\s+http\s+ready\s+web__echo/);
    expect(table.stdout).toMatch(/broken\s+stdio\s+failed\s+.*cannot open its database/);
    const json = await runCli(["mcp", "list", "--json", "--workspace", ws.dir]);
    const reports = JSON.parse(json.stdout) as Array<{ name: string; state: string }>;
    expect(reports.map(({ name, state }) => [name, state])).toEqual([
      ["local", "ready"],
      ["web", "ready"],
      ["broken", "failed"],
    ]);
  });

  it("an approvals entry or an exclude naming no tool of a server is warned about with the closest name, by doctor and in the server's log", async () => {
    const servers = { local: stdioFake({ exclude: ["Pid"] }, ["--name", "local"]) };
    const policy = 'approvals:\n  policy:\n    "mcp:local/Echo": ask\n';
    ws = busWorkspace(
      model.url,
      telegramYaml(telegram, { allowedUserIds: [OWNER] }) + mcpYaml(servers) + policy,
      { "agents/pickle/AGENT.md": AGENT },
    );
    const approvalsWarning =
      'picklebot.yaml: approvals.policy: "mcp:local/Echo" names no tool of MCP server ' +
      '"local"; did you mean "mcp:local/echo"? (it decides no call, so the tool you meant ' +
      "runs without this rule; `picklebot mcp list` shows its tools)";
    const excludeWarning =
      'picklebot.yaml: mcp_servers.local.exclude: "Pid" names no tool of MCP server "local"; ' +
      'did you mean "pid"? (it excludes nothing, so the tool you meant is offered to agents; ' +
      "`picklebot mcp list` shows its tools)";

    const doctor = await runCli(["doctor", "--workspace", ws.dir]);
    const warned = doctor.stdout.split("\n").filter((line) => /^WARN\s+mcp local\s/.test(line));
    expect(warned).toHaveLength(2);
    expect(warned[0]).toContain(approvalsWarning);
    expect(warned[1]).toContain(excludeWarning);
    const list = await runCli(["mcp", "list", "--workspace", ws.dir]);
    expect(list.stderr).toContain(`picklebot: warning: ${ws.dir}/${approvalsWarning}`);

    const server = await startBusServer(ws.dir, ["telegram"]);
    telegram.sendUserMessage({ chatId: OWNER, userId: OWNER, text: "hello" });
    await telegram.waitFor(() => telegram.messages(OWNER).length > 0);
    const logged = server
      .linesMatching((line) => line.mcpServer === "local" && line.level === 40)
      .map((line) => String(line.msg));
    expect(logged).toHaveLength(2);
    expect(logged[0]).toContain(approvalsWarning);
    expect(logged[1]).toContain(excludeWarning);
  });

  it("an agent naming an MCP server picklebot.yaml does not have is reported at load", async () => {
    ws = busWorkspace(model.url, mcpYaml({ web: { url: http.url } }), {
      "agents/pickle/AGENT.md": AGENT.replace("[mcp:*]", "[read, mcp:github]"),
    });
    const result = await runCli(["mcp", "list", "--workspace", ws.dir]);
    expect(result.stderr).toContain(
      'AGENT.md: tools: "mcp:github" names no server of mcp_servers in picklebot.yaml ' +
        "(configured: web); add the server there or correct the entry",
    );
  });
});
