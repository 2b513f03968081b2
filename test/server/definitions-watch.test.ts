/**
 * The DefinitionsWorker in process, on a real workspace folder: what a reload logs, and
 * what it does when a watch fails.
 */
import { rmSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AgentCatalog } from "../../src/agents/catalog.js";
import { PicklebotError } from "../../src/base/errors.js";
import { watchFolder } from "../../src/base/folder-watch.js";
import { DefinitionsWorker } from "../../src/server/definitions-watch.js";
import { type LogLine, recordingLogger } from "../helpers/log.js";
import { waitFor } from "../helpers/wait.js";
import { makeWorkspace, type TempWorkspace } from "../helpers/workspace.js";

const AGENT = "---\nname: Chef\ndescription: Cooks\n---\nYou cook.\n";

let ws: TempWorkspace;
let stop: AbortController;

beforeEach(() => {
  ws = makeWorkspace({ "agents/chef/AGENT.md": AGENT });
  stop = new AbortController();
});
afterEach(() => {
  stop.abort();
  ws.remove();
});

function startWorker(watch: typeof watchFolder = watchFolder) {
  const catalog = new AgentCatalog(ws.dir);
  catalog.load();
  const { logger, lines } = recordingLogger();
  const worker = new DefinitionsWorker({
    catalog,
    settings: { workspace: ws.dir, maxListingChars: 8000, defaultAgentId: "pickle" },
    logger,
    reloadDebounceMs: 20,
    watch,
  });
  const running = worker.run(stop.signal);
  return { catalog, lines, running };
}

function reloads(lines: LogLine[]): LogLine[] {
  return lines.filter((line) => line.msg === "agents and skills reloaded");
}

describe("DefinitionsWorker", () => {
  it("logs an agent removed, and nothing when nothing changed", async () => {
    const { catalog, lines, running } = startWorker();
    expect(reloads(lines)).toEqual([]);
    rmSync(join(ws.dir, "agents/chef"), { recursive: true });
    await waitFor(() => reloads(lines).length === 1, "the reload");
    expect(reloads(lines)[0]).toMatchObject({ removed: ["chef"], added: [], agents: 0 });
    expect(catalog.agents.has("chef")).toBe(false);
    stop.abort();
    await running;
  });

  it("crashes on a failed watch, so the supervisor watches again", async () => {
    const failing: typeof watchFolder = (dir, _debounceMs, _onChange, onError) => {
      onError(new PicklebotError(`cannot watch ${dir}: ENOSPC`, { retryable: true }));
      return { close: () => undefined };
    };
    const { running } = startWorker(failing);
    await expect(running).rejects.toThrow(`cannot watch ${join(ws.dir, "agents")}: ENOSPC`);
  });

  it("runs on with a warning when a folder cannot be created", async () => {
    const readOnly: typeof watchFolder = (dir, _debounceMs, _onChange, onError) => {
      onError(new PicklebotError(`cannot create ${dir}: EROFS`, { retryable: false }));
      return { close: () => undefined };
    };
    const { lines, running } = startWorker(readOnly);
    await waitFor(() => lines.filter((line) => line.level === 40).length === 2, "the warnings");
    expect(lines.map((line) => line.msg)).toEqual([
      "cannot watch agents/; restart to pick up changes",
      "cannot watch skills/; restart to pick up changes",
    ]);
    stop.abort();
    await expect(running).resolves.toBeUndefined();
  });
});
