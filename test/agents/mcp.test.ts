import { afterEach, describe, expect, it } from "vitest";
import { gateTools } from "../../src/agents/approval-gate.js";
import { RELIST_INTERVAL_MS } from "../../src/agents/mcp/connection.js";
import { LISTING_LIMITS, type ListingLimits } from "../../src/agents/mcp/listing.js";
import { cleanInputSchema, mcpToolName } from "../../src/agents/mcp/names.js";
import { mcpToolReferences } from "../../src/agents/mcp/references.js";
import { checkMcpServers, McpServers } from "../../src/agents/mcp/servers.js";
import { ToolError } from "../../src/base/errors.js";
import type { Tool, ToolContext } from "../../src/ports/index.js";
import { type HttpFake, startHttpFake, stdioFake } from "../fakes/mcp.js";
import { isAlive } from "../helpers/cli.js";
import { testConfig } from "../helpers/config.js";
import { type LogLine, recordingLogger } from "../helpers/log.js";
import { waitFor } from "../helpers/wait.js";
import { makeWorkspace, type TempWorkspace } from "../helpers/workspace.js";

let workspace: TempWorkspace;
let servers: McpServers | undefined;
let httpFake: HttpFake | undefined;

afterEach(async () => {
  await servers?.stop();
  await httpFake?.stop();
  servers = undefined;
  httpFake = undefined;
  workspace?.remove();
});

/** Servers from an `mcp_servers` map as picklebot.yaml would give it. */
function open(
  yaml: Record<string, unknown>,
  log = recordingLogger(),
  now?: () => number,
  listingLimits?: ListingLimits,
) {
  workspace = makeWorkspace();
  const config = testConfig(workspace.dir, { mcp_servers: yaml });
  servers = new McpServers({
    servers: config.mcp_servers,
    surroundings: { workspace: workspace.dir },
    log: log.logger,
    ...(now ? { now } : {}),
    ...(listingLimits ? { listingLimits } : {}),
  });
  return { servers, lines: log.lines, config };
}

/** The messages of the lines logged about `server`. */
function messagesAbout(lines: LogLine[], server: string): string[] {
  return lines.filter((line) => line.mcpServer === server).map((line) => line.msg);
}

function context(): ToolContext {
  return {
    workspace: workspace.dir,
    signal: new AbortController().signal,
    agentId: "pickle",
    sessionKey: "console:test",
  };
}

function byName(tools: Tool[], name: string): Tool {
  const tool = tools.find((candidate) => candidate.spec.name === name);
  if (!tool) throw new Error(`no tool ${name} among ${tools.map((t) => t.spec.name).join(", ")}`);
  return tool;
}

describe("MCP servers over stdio", () => {
  it("lists the tools as <server>__<tool> with schemas the Anthropic API takes", async () => {
    const { servers } = open({ fake: stdioFake() });
    const tools = await servers.toolsFor(["mcp:fake"]);
    expect(tools.map((tool) => tool.spec.name)).toEqual([
      "fake__echo",
      "fake__refuse",
      "fake__crash",
      "fake__hang",
      "fake__env",
      "fake__pid",
      "fake__add_tool",
      "fake__flood_list_changed",
    ]);
    const echo = byName(tools, "fake__echo");
    expect(echo.spec.input_schema).not.toHaveProperty("$schema");
    expect(echo.spec.input_schema).toMatchObject({ type: "object", required: ["text"] });
    expect(await echo.run({ text: "hello" }, context())).toBe("fake: hello");
  });

  it("offers one tool for mcp:<server>/<tool>, and honours include and exclude", async () => {
    const { servers } = open({
      fake: stdioFake(),
      some: stdioFake({ include: ["echo", "pid", "env"], exclude: ["pid"] }),
    });
    const tools = await servers.toolsFor(["mcp:fake/echo", "mcp:some"]);
    expect(tools.map((tool) => tool.spec.name)).toEqual(["fake__echo", "some__echo", "some__env"]);
  });

  it("gives an isError result to the model as an error", async () => {
    const { servers } = open({ fake: stdioFake() });
    const refuse = byName(await servers.toolsFor(["mcp:fake"]), "fake__refuse");
    const failure = refuse.run({}, context());
    await expect(failure).rejects.toBeInstanceOf(ToolError);
    await expect(failure).rejects.toThrow("the fake server refuses this on purpose");
  });

  it("fails a call cleanly when the server dies during it, and restarts it on the next call", async () => {
    const { servers } = open({ fake: stdioFake() });
    const tools = await servers.toolsFor(["mcp:fake"]);
    const firstPid = await byName(tools, "fake__pid").run({}, context());
    await expect(byName(tools, "fake__crash").run({}, context())).rejects.toThrow(
      /MCP server "fake" went away during the call/,
    );
    const secondPid = await byName(tools, "fake__pid").run({}, context());
    expect(secondPid).not.toBe(firstPid);
    expect(await byName(tools, "fake__echo").run({ text: "back" }, context())).toBe("fake: back");
  });

  it("waits with backoff before restarting a server that keeps crashing", async () => {
    let now = 1_000_000;
    const { servers } = open({ fake: stdioFake() }, recordingLogger(), () => now);
    const tools = await servers.toolsFor(["mcp:fake"]);
    const crash = byName(tools, "fake__crash");
    await expect(crash.run({}, context())).rejects.toThrow(/went away during the call/);
    await expect(crash.run({}, context())).rejects.toThrow(/went away during the call/);
    // Two crashes within a minute: the next start waits about a second (±20% jitter).
    await expect(byName(tools, "fake__pid").run({}, context())).rejects.toThrow(
      /lost its connection .*; picklebot tries it again in [12] s/,
    );
    now += 1300;
    expect(await byName(tools, "fake__echo").run({ text: "up" }, context())).toBe("fake: up");
  });

  it("times out a call that never answers, after call_timeout_ms", async () => {
    const { servers } = open({ fake: stdioFake({ call_timeout_ms: 200 }) });
    const hang = byName(await servers.toolsFor(["mcp:fake"]), "fake__hang");
    await expect(hang.run({}, context())).rejects.toThrow(
      'MCP server "fake" did not answer within 200 ms (call_timeout_ms)',
    );
  });

  it("picks up a changed tool list (notifications/tools/list_changed)", async () => {
    let now = 1_000_000;
    const { servers, lines } = open({ fake: stdioFake() }, recordingLogger(), () => now);
    const before = await servers.toolsFor(["mcp:fake"]);
    expect(await byName(before, "fake__add_tool").run({ name: "fresh" }, context())).toBe(
      "added fresh",
    );
    await waitFor(() => lines.some((line) => line.msg === "MCP server's tool list changed"));
    now += RELIST_INTERVAL_MS;
    const after = await servers.toolsFor(["mcp:fake"]);
    expect(await byName(after, "fake__fresh").run({}, context())).toBe("fresh");
  });

  it("lists again at most once per interval, and logs a flood of list_changed as two lines", async () => {
    let now = 1_000_000;
    const { servers, lines } = open({ fake: stdioFake() }, recordingLogger(), () => now);
    const tools = await servers.toolsFor(["mcp:fake"]);
    await byName(tools, "fake__add_tool").run({ name: "fresh" }, context());
    // The answer comes after the 5,000 notifications on the same pipe: all have arrived.
    await byName(tools, "fake__flood_list_changed").run({ count: 5000 }, context());
    now += RELIST_INTERVAL_MS - 1;
    const tooSoon = await servers.toolsFor(["mcp:fake"]);
    expect(tooSoon.map((tool) => tool.spec.name)).not.toContain("fake__fresh");
    now += 1;
    const relisted = await servers.toolsFor(["mcp:fake"]);
    expect(relisted.map((tool) => tool.spec.name)).toContain("fake__fresh");
    expect(await servers.toolsFor(["mcp:fake"])).toHaveLength(relisted.length);
    expect(messagesAbout(lines, "fake")).toEqual([
      "MCP server's tool list changed",
      "MCP server's tools listed again after it said they changed",
    ]);
    expect(lines.at(-1)).toMatchObject({ notifications: 5001, tools: relisted.length });
  });

  it("gives up on a tool list whose nextCursor never ends: the turn goes on without that server", async () => {
    const { servers, lines } = open({
      fake: stdioFake(),
      endless: stdioFake({}, ["--endless-pages"]),
    });
    const tools = await servers.toolsFor(["mcp:*"]);
    expect(tools.map((tool) => tool.spec.name)).toContain("fake__echo");
    expect(tools.filter((tool) => tool.spec.name.startsWith("endless__"))).toEqual([]);
    const problem =
      'MCP server "endless" cannot be used: lists its tools over more than ' +
      `${LISTING_LIMITS.maxPages} pages (its nextCursor never ends)`;
    expect(messagesAbout(lines, "endless")).toEqual([problem]);
    expect(servers.states().find((report) => report.name === "endless")).toMatchObject({
      state: "failed",
      error: problem,
    });
  });

  it("gives up on a listing over its tool cap or its time limit, naming the server", async () => {
    const limits = { maxPages: 100, maxTools: 5, timeoutMs: 500 };
    const { servers } = open(
      { endless: stdioFake({}, ["--endless-pages"]), stuck: stdioFake({}, ["--hang-listing"]) },
      recordingLogger(),
      undefined,
      limits,
    );
    expect(await servers.toolsFor(["mcp:*"])).toEqual([]);
    expect(servers.states().map(({ name, error }) => [name, error])).toEqual([
      [
        "endless",
        'MCP server "endless" cannot be used: lists more than 5 tools, the most picklebot takes',
      ],
      ["stuck", 'MCP server "stuck" cannot be used: did not list its tools within 0.5 s'],
    ]);
  });

  it("offers one tool when two servers make the same model-facing name, and warns once", async () => {
    let now = 1_000_000;
    const { servers, lines } = open(
      { x_: stdioFake(), x: stdioFake() },
      recordingLogger(),
      () => now,
    );
    const before = await servers.toolsFor(["mcp:*"]);
    await byName(before, "x__add_tool").run({ name: "_echo" }, context());
    await waitFor(() => lines.some((line) => line.msg === "MCP server's tool list changed"));
    now += RELIST_INTERVAL_MS;
    for (let turn = 0; turn < 2; turn += 1) {
      const names = (await servers.toolsFor(["mcp:*"])).map((tool) => tool.spec.name);
      expect(names.filter((name) => name === "x___echo")).toHaveLength(1);
    }
    expect(lines.filter((line) => line.tool === "x___echo").map((line) => line.msg)).toEqual([
      'MCP tools mcp:x_/echo and mcp:x/_echo are both named "x___echo" for the model; ' +
        "picklebot offers the first (rename one server)",
    ]);
  });

  it("offers a tool listed twice once, and warns naming the server and the tool", async () => {
    const { servers, lines } = open({ dup: stdioFake({}, ["--duplicate-tools"]) });
    const tools = await servers.toolsFor(["mcp:dup"]);
    expect(tools.map((tool) => tool.spec.name)).toEqual(["dup__echo", "dup__pid"]);
    expect(tools[0]?.spec.description).toBe("Says the text back");
    expect(await byName(tools, "dup__echo").run({ text: "once" }, context())).toBe("fake: once");
    const warning =
      'MCP server "dup" lists the tool "echo" 2 times; picklebot offers the first and ' +
      "ignores the others (the model API refuses two tools of one name)";
    await servers.toolsFor(["mcp:dup"]);
    expect(messagesAbout(lines, "dup")).toEqual([warning]);
    expect((await servers.report())[0]?.warnings).toEqual([warning]);
  });

  it("reports a server that never starts once, with its stderr, not on every use", async () => {
    const { servers, lines } = open({ broken: stdioFake({}, ["--fail-start"]) });
    for (let use = 0; use < 3; use += 1) {
      expect(await servers.toolsFor(["mcp:broken"])).toEqual([]);
    }
    const [report] = await servers.report();
    expect(report).toMatchObject({ name: "broken", state: "failed", tools: [] });
    expect(report?.error).toContain("cannot open its database");
    const warnings = lines.filter((line) => String(line.msg).includes('MCP server "broken"'));
    expect(warnings.map((line) => line.msg)).toEqual([
      'MCP server "broken" cannot start: MCP error -32000: Connection closed ' +
        "(stderr: fake MCP server: cannot open its database)",
    ]);
  });

  it("refuses to start a sandboxed server where bubblewrap cannot run, saying how to fix it", async () => {
    workspace = makeWorkspace();
    const config = testConfig(workspace.dir, {
      mcp_servers: { boxed: { command: process.execPath, args: ["-e", "0"] } },
    });
    servers = new McpServers({
      servers: config.mcp_servers,
      surroundings: { workspace: workspace.dir, bwrapPath: "/nonexistent/bwrap" },
    });
    const [report] = await servers.report();
    expect(report?.error).toContain(
      'MCP server "boxed" cannot start: it runs in the bash sandbox (bubblewrap), which ' +
        "cannot run here (/nonexistent/bwrap is not installed)",
    );
    expect(report?.error).toContain("or set mcp_servers.boxed.sandbox: none");
  });

  it("gives the server only its configured environment, never the server's secrets", async () => {
    process.env.PICKLEBOT_TEST_SECRET = "sk-do-not-leak";
    try {
      const { servers } = open({ fake: stdioFake({ env: { GREETING: "hi" } }) });
      const env = byName(await servers.toolsFor(["mcp:fake"]), "fake__env");
      expect(await env.run({ name: "GREETING" }, context())).toBe("hi");
      expect(await env.run({ name: "PICKLEBOT_TEST_SECRET" }, context())).toBe("(unset)");
    } finally {
      delete process.env.PICKLEBOT_TEST_SECRET;
    }
  });

  it("kills the server's process group when stopped", async () => {
    const { servers } = open({ fake: stdioFake() });
    const pid = Number(
      await byName(await servers.toolsFor(["mcp:fake"]), "fake__pid").run({}, context()),
    );
    expect(isAlive(pid)).toBe(true);
    await servers.stop();
    expect(isAlive(pid)).toBe(false);
  });

  it("reconfigure stops a changed server and starts the new settings on next use", async () => {
    const { servers } = open({ fake: stdioFake({ env: { GREETING: "old" } }) });
    const oldTools = await servers.toolsFor(["mcp:fake"]);
    const oldPid = Number(await byName(oldTools, "fake__pid").run({}, context()));
    const next = testConfig(workspace.dir, {
      mcp_servers: { fake: stdioFake({ env: { GREETING: "new" } }) },
    });
    await servers.reconfigure(next.mcp_servers);
    expect(isAlive(oldPid)).toBe(false);
    const env = byName(await servers.toolsFor(["mcp:fake"]), "fake__env");
    expect(await env.run({ name: "GREETING" }, context())).toBe("new");
    await servers.reconfigure({});
    expect(await servers.toolsFor(["mcp:fake"])).toEqual([]);
  });
});

describe("MCP servers over streamable HTTP", () => {
  it("lists and calls the tools of an HTTP server", async () => {
    httpFake = await startHttpFake("web");
    const { servers } = open({ web: { url: httpFake.url, headers: { "X-Token": "t0k" } } });
    const tools = await servers.toolsFor(["mcp:web"]);
    expect(await byName(tools, "web__echo").run({ text: "over http" }, context())).toBe(
      "web: over http",
    );
    await expect(byName(tools, "web__refuse").run({}, context())).rejects.toThrow(
      "the fake server refuses this on purpose",
    );
  });

  it("fails a call cleanly while the HTTP server is down", async () => {
    httpFake = await startHttpFake("web");
    const { servers } = open({ web: { url: httpFake.url } });
    const echo = byName(await servers.toolsFor(["mcp:web"]), "web__echo");
    await httpFake.stop();
    await expect(echo.run({ text: "anyone?" }, context())).rejects.toThrow(/MCP server "web"/);
  });

  it("checkMcpServers gives one ok/error line per server, for doctor", async () => {
    httpFake = await startHttpFake("web");
    workspace = makeWorkspace();
    const config = testConfig(workspace.dir, {
      mcp_servers: { web: { url: httpFake.url }, broken: stdioFake({}, ["--fail-start"]) },
    });
    const lines = await checkMcpServers(workspace.dir, config);
    expect(lines).toEqual([
      { server: "web", ok: true, detail: "8 tools", warnings: [] },
      expect.objectContaining({ server: "broken", ok: false }),
    ]);
  });
});

describe("MCP tools and the approval policy", () => {
  it("decides by mcp:<server>/<tool>, then mcp:<server>", async () => {
    const { servers } = open({ fake: stdioFake() });
    const tools = gateTools(
      await servers.toolsFor(["mcp:fake"]),
      {
        "mcp:fake": "deny",
        "mcp:fake/echo": "allow",
      },
      undefined,
    );
    expect(await byName(tools, "fake__echo").run({ text: "ok" }, context())).toBe("fake: ok");
    await expect(byName(tools, "fake__pid").run({}, context())).rejects.toThrow(
      "fake__pid: the owner's approvals policy refuses this call (mcp:fake: deny)",
    );
  });
});

describe("names of MCP tools that match no listed tool", () => {
  it("are warned about once the server lists its tools, once each, with the closest name", async () => {
    workspace = makeWorkspace();
    const config = testConfig(workspace.dir, {
      mcp_servers: { fake: stdioFake({ exclude: ["Pid"] }) },
      approvals: { policy: { "mcp:fake/Echo": "ask", "mcp:fake/refuse": "deny" } },
    });
    const agent = {
      source: "agents/a/AGENT.md",
      tools: ["mcp:fake/nothing_like_it"],
      approvals: {},
    };
    const log = recordingLogger();
    servers = new McpServers({
      servers: config.mcp_servers,
      surroundings: { workspace: workspace.dir },
      log: log.logger,
      toolReferences: () => mcpToolReferences(config, [agent], "picklebot.yaml"),
    });
    const tools = await servers.toolsFor(["mcp:fake"]);
    // The typo in case excludes nothing: pid is offered, as the warning says.
    expect(tools.map((tool) => tool.spec.name)).toContain("fake__pid");
    const warnings = [
      'picklebot.yaml: approvals.policy: "mcp:fake/Echo" names no tool of MCP server "fake"; ' +
        'did you mean "mcp:fake/echo"? (it decides no call, so the tool you meant runs ' +
        "without this rule; `picklebot mcp list` shows its tools)",
      'picklebot.yaml: mcp_servers.fake.exclude: "Pid" names no tool of MCP server "fake"; ' +
        'did you mean "pid"? (it excludes nothing, so the tool you meant is offered to ' +
        "agents; `picklebot mcp list` shows its tools)",
      'agents/a/AGENT.md: tools: "mcp:fake/nothing_like_it" names no tool of MCP server ' +
        '"fake" (it gives the agent no tool; `picklebot mcp list` shows its tools)',
    ];
    expect(messagesAbout(log.lines, "fake")).toEqual(warnings);
    await servers.report();
    expect(messagesAbout(log.lines, "fake")).toEqual(warnings);
    expect(servers.states()[0]?.warnings).toEqual(warnings);
  });
});

describe("MCP tool names and schemas", () => {
  it("cuts long names to 64 characters with a hash that keeps them apart", () => {
    const long = "a_very_long_tool_name_that_goes_on_and_on_and_on_for_ever_";
    const first = mcpToolName("server", `${long}1`);
    const second = mcpToolName("server", `${long}2`);
    expect(first).toHaveLength(64);
    expect(second).toHaveLength(64);
    expect(first).not.toBe(second);
    expect(mcpToolName("files", "read.file")).toMatch(/^files__read_file_[A-Z0-9]{6}$/);
    expect(mcpToolName("files", "read_file")).toBe("files__read_file");
  });

  it("removes $schema at every level and always gives an object schema", () => {
    expect(
      cleanInputSchema({
        $schema: "http://json-schema.org/draft-07/schema#",
        properties: { a: { $id: "x", type: "string" } },
      }),
    ).toEqual({ type: "object", properties: { a: { type: "string" } } });
    expect(cleanInputSchema(undefined)).toEqual({ type: "object", properties: {} });
  });
});
