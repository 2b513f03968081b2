/**
 * `/healthz` and `/metrics` of a server with `http.token`, asked over real HTTP on
 * 127.0.0.1 the way the documented same-host reverse proxy, a local scraper and the
 * Docker HEALTHCHECK ask: the metrics (agent names, costs) and the detailed health report
 * (instance, workers, broken agents and their errors) need the token; without it
 * `/healthz` says only whether the server is healthy.
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { childEnv, runCli } from "../helpers/cli.js";
import { killAllServers, type ServerProcess, startServer } from "../helpers/server.js";
import { makeWorkspace, type TempWorkspace } from "../helpers/workspace.js";

const TOKEN = "correct-horse-battery-staple";
const BEARER = { authorization: `Bearer ${TOKEN}` };
/** What the documented Caddy (and nginx with the usual headers) adds. */
const PROXIED = { "x-forwarded-for": "203.0.113.9", "x-forwarded-proto": "https" };
const HEALTHCHECK = fileURLToPath(new URL("../../deploy/healthcheck.js", import.meta.url));

let ws: TempWorkspace;
let server: ServerProcess;

beforeEach(async () => {
  ws = makeWorkspace({
    "picklebot.yaml": `http:\n  port: 0\n  token: ${TOKEN}\n`,
    "agents/.keep": "",
    // A broken agent: its error (a path on the server) is a detail for the owner only.
    "agents/broken/AGENT.md": "---\nmodel: [not, a, model]\n---\n",
  });
  server = await startServer(ws.dir);
});

afterEach(async () => {
  await killAllServers();
  ws.remove();
});

const get = (path: string, headers: Record<string, string> = {}) =>
  fetch(`${server.httpUrl}${path}`, { headers });

describe("/metrics with http.token", () => {
  it("needs the token from a loopback client, through a proxy or not", async () => {
    for (const headers of [{}, PROXIED]) {
      const response = await get("/metrics", headers);
      expect(response.status).toBe(401);
      expect(await response.text()).not.toContain("picklebot_");
    }
    const scraped = await get("/metrics", BEARER);
    expect(scraped.status).toBe(200);
    expect(await scraped.text()).toContain("picklebot_");
  });
});

describe("/healthz with http.token", () => {
  it("tells a caller without the token only whether the server is healthy", async () => {
    for (const headers of [{}, PROXIED]) {
      const response = await get("/healthz", headers);
      const body = (await response.json()) as Record<string, unknown>;
      expect(Object.keys(body)).toEqual(["healthy"]);
      expect(response.status).toBe(body.healthy ? 200 : 503);
    }
  });

  it("gives the whole report with the token, and picklebot status still shows it", async () => {
    const report = (await (await get("/healthz", BEARER)).json()) as Record<string, unknown>;
    expect(report).toHaveProperty("workers");
    expect(JSON.stringify(report.brokenAgents)).toContain("broken");

    const status = await runCli(["status", "--json", "--workspace", ws.dir]);
    expect(status.code).toBe(0);
    const shown = JSON.parse(status.stdout) as { server: { health: Record<string, unknown> } };
    expect(shown.server.health).toHaveProperty("workers");
    expect(shown.server.health.instance).toBe(report.instance);
  });

  it("still passes the Docker HEALTHCHECK, which sends no token", async () => {
    const child = spawn(process.execPath, [HEALTHCHECK], {
      env: { ...childEnv(), PICKLEBOT_WORKSPACE: ws.dir },
    });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => {
      output += chunk.toString();
    });
    const code = await new Promise<number | null>((done) => child.on("close", done));
    expect(output).toContain("healthy:");
    expect(code).toBe(0);
  });
});
