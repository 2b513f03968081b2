/**
 * `rm -rf history/` under a running server (SQLite mode): the server notices its database
 * and lock are gone, answers 503 on /healthz with the reason, stops and exits 1 with a
 * sentence, instead of writing on into deleted files.
 */
import { rmSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createAnthropicProvider } from "../../src/agents/providers/anthropic.js";
import { PicklebotServer } from "../../src/server/server.js";
import { testConfig } from "../helpers/config.js";
import { recordingLogger } from "../helpers/log.js";
import { killAllServers, startServer } from "../helpers/server.js";
import { makeWorkspace, type TempWorkspace } from "../helpers/workspace.js";

/** The HTTP endpoint's access token (`http.token`): the report with the reason needs it. */
const HTTP_TOKEN = "vanished-test-token-0123456789";

let ws: TempWorkspace;

beforeEach(() => {
  ws = makeWorkspace({ "picklebot.yaml": "http:\n  port: 0\n" });
});

afterEach(async () => {
  await killAllServers();
  ws.remove();
});

describe("a database deleted under a running server", () => {
  it("turns /healthz 503 with the reason as soon as it is noticed", async () => {
    const server = await PicklebotServer.start({
      workspace: ws.dir,
      config: testConfig(ws.dir, {
        http: { enabled: true, host: "127.0.0.1", port: 0, token: HTTP_TOKEN },
      }),
      agents: new Map(),
      provider: createAnthropicProvider({ apiKey: "k", baseURL: "http://127.0.0.1:9" }),
      logger: recordingLogger().logger,
    });
    try {
      const healthz = `http://${server.httpAddress}/healthz`;
      expect((await fetch(healthz)).status).toBe(200);

      rmSync(join(ws.dir, "history"), { recursive: true, force: true });
      const error = await server.lost;

      expect(error.message).toContain(`${join(ws.dir, "history", "picklebot.db")} was deleted`);
      const response = await fetch(healthz, {
        headers: { authorization: `Bearer ${HTTP_TOKEN}` },
      });
      expect(response.status).toBe(503);
      const report = (await response.json()) as { healthy: boolean; storage: string };
      expect(report.healthy).toBe(false);
      expect(report.storage).toContain("picklebot.db was deleted while the server had it open");
    } finally {
      await server.stop();
    }
  });

  it("stops the server process, which exits 1 saying what happened and what to do", async () => {
    const server = await startServer(ws.dir);

    rmSync(join(ws.dir, "history"), { recursive: true, force: true });
    const exit = await server.exited;

    expect(exit, server.transcript()).toEqual({ code: 1, signal: null });
    expect(server.stderr).toContain(
      `picklebot: ${join(ws.dir, "history", "picklebot.db")} was deleted while the server had it open`,
    );
    expect(server.stderr).toContain("picklebot restore");
    expect(server.linesMatching("storage lost: stopping the server")).toHaveLength(1);
  });

  it("notices a lock file replaced under it (a second server could take the new one)", async () => {
    const server = await startServer(ws.dir);

    rmSync(join(ws.dir, "history", "server.lock"));
    ws.write("history/server.lock", "");
    const exit = await server.exited;

    expect(exit.code).toBe(1);
    expect(server.stderr).toContain("server.lock was replaced by another file");
  });
});
