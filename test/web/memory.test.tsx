/** The Memory section in-process: every memory, one memory's page, edit and clear, read-only. */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { builtInAgent } from "../../src/agents/definition.js";
import type { Storage } from "../../src/ports/index.js";
import { openStorage } from "../../src/storage/index.js";
import { memorySection } from "../../src/web/sections/memory.js";
import { TestClock } from "../helpers/clock.js";
import { testConfig } from "../helpers/config.js";
import { mountSection, type SectionClient, textOf } from "../helpers/section-app.js";
import { makeWorkspace, type TempWorkspace } from "../helpers/workspace.js";

let ws: TempWorkspace;
let storage: Storage;
let clock: TestClock;

const PAGE = "/memory/pickle/telegram%3A1001";

beforeEach(async () => {
  ws = makeWorkspace();
  clock = new TestClock("2025-01-15T06:00:00Z");
  storage = await openStorage(testConfig(ws.dir), clock);
  await storage.memory.update(
    { agentId: "pickle", scope: "telegram:1001" },
    { by: "agent", at: clock.now(), jobId: "j1", sessionId: "s1", callId: "toolu_1" },
    () => ({
      text: "Cat: Miso",
      change: { action: "add", entry: "Cat: Miso", previous: null },
    }),
  );
});

afterEach(async () => {
  await storage.close();
  ws.remove();
});

function client(options: { readOnly?: boolean } = {}): SectionClient {
  const section = memorySection({
    memory: storage.memory,
    agents: () => ({ agents: new Map(), defaultAgentId: "pickle" }),
    secrets: ["hunter2-configured"],
    clock,
    timezone: "Europe/Berlin",
  });
  return mountSection(section, options);
}

describe("the Memory section", () => {
  it("lists every memory with its budget bar, and who wrote what when", async () => {
    const page = await client().get("/memory");
    expect(page.status).toBe(200);
    expect(page.html).toContain(`href="/memory/pickle/telegram%3A1001"`);
    expect(page.html).toMatch(/<meter [^>]*max="1400"[^>]*value="9"/);
    expect(textOf(page.html)).toContain(
      "pickle agent pickle's memory of telegram:1001 1 9 of 1400 characters Wed 2025-01-15 07:00 CET",
    );
    expect(textOf(page.html)).toContain(
      "Wed 2025-01-15 07:00 CET agent pickle's memory of telegram:1001 add agent (job j1, call toolu_1) Cat: Miso",
    );
  });

  it("edits a memory: the change is stored and recorded as the dashboard's", async () => {
    const dashboard = client();
    const page = await dashboard.get(PAGE);
    const done = await dashboard.submit(page, `${PAGE}/edit`, {
      button: "Save",
      fill: { text: "Cat: Miso\n§\nLikes tea" },
    });
    expect(done.status).toBe(303);
    expect((await storage.memory.read("pickle", "telegram:1001")).text).toBe(
      "Cat: Miso\n§\nLikes tea",
    );
    const after = await dashboard.get(done.location ?? "");
    expect(textOf(after.html)).toContain("Saved agent pickle's memory of telegram:1001.");
    expect(textOf(after.html)).toContain("edit dashboard Cat: Miso § Likes tea");
  });

  it("refuses a secret with the reason, keeps the memory and shows the typed text again", async () => {
    const dashboard = client();
    const typed = "Cat: Miso\n§\nwifi password: hunter2-configured";
    const refused = await dashboard.submit(await dashboard.get(PAGE), `${PAGE}/edit`, {
      fill: { text: typed },
    });
    expect(refused.status).toBe(400);
    expect(textOf(refused.html)).toContain("Not saved: entry 2");
    expect(textOf(refused.html)).toContain("looks like a secret");
    expect(refused.html).toContain("wifi password: hunter2-configured</textarea>");
    expect((await storage.memory.read("pickle", "telegram:1001")).text).toBe("Cat: Miso");
  });

  it("refuses an edit of a memory that changed since the page was shown", async () => {
    const dashboard = client();
    const page = await dashboard.get(PAGE);
    await storage.memory.update(
      { agentId: "pickle", scope: "telegram:1001" },
      { by: "agent", at: 2 },
      () => ({
        text: "Cat: Miso\n§\nDog: Rex",
        change: { action: "add", entry: "Dog: Rex", previous: null },
      }),
    );
    const refused = await dashboard.submit(page, `${PAGE}/edit`, { fill: { text: "Cat: Mio" } });
    expect(refused.status).toBe(400);
    expect(textOf(refused.html)).toContain("changed while you were editing it");
    expect((await storage.memory.read("pickle", "telegram:1001")).text).toBe(
      "Cat: Miso\n§\nDog: Rex",
    );
  });

  it("clears a memory, then offers no Clear for the empty one", async () => {
    const dashboard = client();
    const done = await dashboard.submit(await dashboard.get(PAGE), `${PAGE}/clear`, {
      button: "Clear",
    });
    expect(done.status).toBe(303);
    expect((await storage.memory.read("pickle", "telegram:1001")).text).toBe("");
    const after = await dashboard.get(done.location ?? "");
    expect(textOf(after.html)).toContain("Cleared agent pickle's memory of telegram:1001.");
    expect(after.html).not.toContain(`${PAGE}/clear`);
    const [change] = await storage.memory.changes({ scope: "telegram:1001" });
    expect(change).toMatchObject({ action: "clear", by: "dashboard", previous: "Cat: Miso" });
  });

  it("shows no form when read-only, and refuses a POST with 403", async () => {
    const dashboard = client({ readOnly: true });
    const page = await dashboard.get(PAGE);
    expect(page.status).toBe(200);
    expect(page.html).not.toContain("<form");
    expect(textOf(page.html)).toContain("Cat: Miso");
    expect((await dashboard.post(`${PAGE}/clear`)).status).toBe(403);
    expect((await storage.memory.read("pickle", "telegram:1001")).text).toBe("Cat: Miso");
  });

  it("shows a Slack person's memory by their member id", async () => {
    await storage.memory.update(
      { agentId: "pickle", scope: "slack:U0ALICE01" },
      { by: "cli", at: clock.now() },
      () => ({ text: "Likes tea", change: { action: "add", entry: "Likes tea", previous: null } }),
    );
    const page = await client().get("/memory/pickle/slack%3AU0ALICE01");
    expect(page.status).toBe(200);
    expect(textOf(page.html)).toContain("Likes tea");
  });

  it("answers 404 for an unknown agent, a bad scope, and an agent with memory off", async () => {
    const off = { ...builtInAgent("quiet"), memory: null };
    const section = memorySection({
      memory: storage.memory,
      agents: () => ({ agents: new Map([["quiet", off]]), defaultAgentId: "pickle" }),
      secrets: [],
      clock,
      timezone: "UTC",
    });
    const dashboard = mountSection(section);
    const nobody = await dashboard.get("/memory/nobody/agent");
    expect(nobody.status).toBe(404);
    expect(textOf(nobody.html)).toContain('There is no agent "nobody".');
    const bad = await dashboard.get("/memory/pickle/ana");
    expect(bad.status).toBe(404);
    expect(textOf(bad.html)).toContain('"ana" names no memory');
    const quiet = await dashboard.get("/memory/quiet/agent");
    expect(textOf(quiet.html)).toContain(
      "agent quiet has no memory: its AGENT.md says memory: false",
    );
  });
});
