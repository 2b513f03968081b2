#!/usr/bin/env node
/**
 * A real MCP server for the tests, built with the SDK's server side. It speaks stdio by
 * default; with `--http` it serves streamable HTTP on 127.0.0.1 (a free port, printed as
 * `listening <port>` on stdout). `--name <name>` prefixes the text of `echo`, so a test
 * can tell two servers apart; `--fail-start` exits before speaking MCP (a server that
 * never starts).
 *
 * Tools: echo {text}, refuse {} (an isError result), crash {} (SIGKILLs itself mid-call),
 * hang {} (never answers), env {name} (one variable of its environment), add_tool {name}
 * (registers a tool, which sends notifications/tools/list_changed), pid {} (its pid),
 * flood_list_changed {count} (sends notifications/tools/list_changed `count` times, then
 * answers).
 *
 * Misbehaving listings, as servers in the wild have them (the calls still work):
 * `--endless-pages` lists one tool per page with a `nextCursor` that never ends,
 * `--duplicate-tools` lists `echo` twice, `--hang-listing` never answers `tools/list`.
 */
import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";

const argv = process.argv.slice(2);
const option = (flag) => (argv.includes(flag) ? argv[argv.indexOf(flag) + 1] : undefined);
const name = option("--name") ?? "fake";

if (argv.includes("--fail-start")) {
  process.stderr.write("fake MCP server: cannot open its database\n");
  process.exit(3);
}

const text = (value) => ({ content: [{ type: "text", text: String(value) }] });

function createFakeServer() {
  const server = new McpServer({ name, version: "1.0.0" });
  server.registerTool(
    "echo",
    { description: "Says the text back", inputSchema: { text: z.string() } },
    async ({ text: said }) => text(`${name}: ${said}`),
  );
  server.registerTool("refuse", { description: "Always fails" }, async () => ({
    ...text("the fake server refuses this on purpose"),
    isError: true,
  }));
  server.registerTool("crash", { description: "Dies mid-call" }, async () => {
    process.kill(process.pid, "SIGKILL");
    return new Promise(() => {});
  });
  server.registerTool("hang", { description: "Never answers" }, () => new Promise(() => {}));
  server.registerTool(
    "env",
    { description: "One variable of the environment", inputSchema: { name: z.string() } },
    async ({ name: variable }) => text(process.env[variable] ?? "(unset)"),
  );
  server.registerTool("pid", { description: "The process id" }, async () => text(process.pid));
  server.registerTool(
    "add_tool",
    { description: "Registers a tool", inputSchema: { name: z.string() } },
    async ({ name: added }) => {
      server.registerTool(added, { description: `Added at run time` }, async () => text(added));
      return text(`added ${added}`);
    },
  );
  server.registerTool(
    "flood_list_changed",
    { description: "Says its tools changed, many times", inputSchema: { count: z.number() } },
    async ({ count }) => {
      for (let sent = 0; sent < count; sent += 1) server.sendToolListChanged();
      return text(`sent ${count}`);
    },
  );
  misbehaveWhenListing(server);
  return server;
}

const ECHO_LISTING = {
  name: "echo",
  description: "Says the text back",
  inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
};
const PID_LISTING = { name: "pid", description: "The process id", inputSchema: { type: "object" } };

/** Replaces the SDK's answer to tools/list when a misbehaving mode is on. */
function misbehaveWhenListing(server) {
  const answer = (handler) => server.server.setRequestHandler(ListToolsRequestSchema, handler);
  if (argv.includes("--endless-pages")) {
    answer(({ params }) => {
      const page = Number(params?.cursor ?? 0);
      return {
        tools: [{ name: `page_${page}`, inputSchema: { type: "object" } }],
        nextCursor: String(page + 1),
      };
    });
  } else if (argv.includes("--duplicate-tools")) {
    answer(() => ({
      tools: [ECHO_LISTING, { ...ECHO_LISTING, description: "A second echo" }, PID_LISTING],
    }));
  } else if (argv.includes("--hang-listing")) {
    answer(() => new Promise(() => {}));
  }
}

if (argv.includes("--http")) {
  const sessions = new Map();
  const http = createServer(async (request, response) => {
    const id = request.headers["mcp-session-id"];
    let transport = typeof id === "string" ? sessions.get(id) : undefined;
    if (!transport) {
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (sessionId) => sessions.set(sessionId, transport),
      });
      await createFakeServer().connect(transport);
    }
    await transport.handleRequest(request, response);
  });
  http.listen(0, "127.0.0.1", () => {
    process.stdout.write(`listening ${http.address().port}\n`);
  });
} else {
  await createFakeServer().connect(new StdioServerTransport());
}
