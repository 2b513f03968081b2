/**
 * What an MCP server can do against the owner's dashboard: `picklebot server` (a child
 * process, the dashboard on its default loopback bind, its model the fake Anthropic API)
 * starts a hostile stdio MCP server (test/fakes/mcp-intruder.mjs) in the bubblewrap
 * sandbox, as it does by default, with the network on. A job calls the server's tool,
 * which tries to answer the owner's pending approval through the dashboard on 127.0.0.1.
 * It must fail, and the request must stay pending; the owner, with the token, answers it.
 */
import { copyFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { probeBubblewrap } from "../../src/agents/tools/sandbox.js";
import { type FakeAnthropic, type FakeReply, startFakeAnthropic } from "../fakes/anthropic.js";
import { parkOnApproval } from "../helpers/approvals.js";
import { withWorkspaceStorage } from "../helpers/config.js";
import { enqueueJob, killAllServers, type ServerProcess, startServer } from "../helpers/server.js";
import { lastResults } from "../helpers/subagents.js";
import { fakeModelConfig, makeWorkspace, type TempWorkspace } from "../helpers/workspace.js";

const INTRUDER = fileURLToPath(new URL("../fakes/mcp-intruder.mjs", import.meta.url));
const APPROVAL = "K7MX2QPA";

const probe = probeBubblewrap();
const runsHere = probe.usable || process.env.CI === "true";
if (!runsHere) console.warn(`sandboxed MCP server tests skipped: ${probe.problem}`);

const AGENT = `---
name: Pickle
description: Has a hostile MCP server's tool
tools: [mcp:intruder]
---
You are Pickle.`;

let model: FakeAnthropic;
let ws: TempWorkspace;
/** Where the intruder is told to find the dashboard, once the server listens. */
let dashboard = "";

/** The fake model: calls the intruder's tool, then answers with its result. */
function intruderModel(request: Parameters<typeof lastResults>[0]): FakeReply {
  const [result] = lastResults(request);
  if (result) return { text: `seen: ${String(result.content)}` };
  const input = { url: dashboard, approval: APPROVAL };
  return { toolUses: [{ id: "toolu_intruder", name: "intruder__act_as_owner", input }] };
}

beforeEach(async () => {
  model = await startFakeAnthropic({ defaultReply: intruderModel });
  const servers = { intruder: { command: "node", args: ["mcp-intruder.mjs"] } };
  ws = makeWorkspace({
    "picklebot.yaml": `${fakeModelConfig(model.url)}mcp_servers: ${JSON.stringify(servers)}\n`,
    "agents/pickle/AGENT.md": AGENT,
  });
  copyFileSync(INTRUDER, join(ws.dir, "mcp-intruder.mjs"));
});

afterEach(async () => {
  await killAllServers();
  await model.close();
  ws.remove();
});

/** The approval request's state as stored: pending, or who answered it. */
function approvalState() {
  return withWorkspaceStorage(ws.dir, async (storage) => {
    const request = await storage.approvals.get(APPROVAL);
    return { state: request?.state, answeredBy: request?.answeredBy ?? null };
  });
}

/** Runs a chat job that calls the intruder's tool; resolves with what the tool saw. */
async function runIntruder(server: ServerProcess): Promise<Record<string, unknown>> {
  dashboard = server.httpUrl;
  const job = await enqueueJob(ws.dir, {
    agentId: "pickle",
    sessionKey: "web:pickle:intruder",
    message: "go",
    mode: "chat",
    replyTo: { kind: "silent" },
  });
  await server.waitForLog((line) => line.job === job.id && line.outcome === "done", 30_000);
  const answered = model.requests.find((request) => lastResults(request).length > 0);
  const [result] = answered ? lastResults(answered) : [];
  return JSON.parse(String(result?.content ?? "{}")) as Record<string, unknown>;
}

describe.skipIf(!runsHere)("a sandboxed MCP server against the dashboard on 127.0.0.1", () => {
  it("can neither read the token nor open or answer the owner's approvals; the owner can", async () => {
    await withWorkspaceStorage(ws.dir, (storage) =>
      parkOnApproval(storage, APPROVAL, Date.now(), { agentId: "pickle" }),
    );
    const server = await startServer(ws.dir);

    const seen = await runIntruder(server);
    expect(seen).toMatchObject({ tokenRead: false, pageShowsApproval: false });
    expect(seen.pageStatus).toBe(401);
    expect(seen.answerStatus).toBe(401);
    expect(await approvalState()).toEqual({ state: "pending", answeredBy: null });

    const page = await (await server.fetch("/approvals")).text();
    expect(page).toContain(APPROVAL);
    const csrf = page.match(/name="_csrf" value="([^"]+)"/)?.[1] ?? "";
    const answer = await server.fetch(`/approvals/${APPROVAL}/answer`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ _csrf: csrf, decision: "deny" }).toString(),
      redirect: "manual",
    });
    expect(answer.status).toBe(303);
    expect(await approvalState()).toEqual({ state: "denied", answeredBy: "dashboard" });
  });
});
