/**
 * The dashboard over PostgreSQL storage (distributed mode): the pages read and act on the
 * same queue and history as on SQLite, and the overview shows the cluster.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { csrfTokenOf, type DashboardHarness, openDashboard } from "../helpers/dashboard.js";
import { createTestDatabase, postgresSkipReason, type TestDatabase } from "../helpers/postgres.js";

const skipReason = await postgresSkipReason();

let database: TestDatabase;
let harness: DashboardHarness;

describe.skipIf(skipReason !== null)("the dashboard on PostgreSQL", () => {
  beforeEach(async () => {
    database = await createTestDatabase("dashboard");
    harness = await openDashboard({ postgresUrl: database.url });
  });
  afterEach(async () => {
    await harness.close();
    await database.drop();
  });

  async function post(path: string, body?: URLSearchParams): Promise<Response> {
    const headers = { "x-csrf-token": await csrfTokenOf(harness) };
    return harness.request(path, { method: "POST", headers, body });
  }

  it("filters jobs, retries a failed one and cancels a queued one", async () => {
    const failed = await harness.job("failed", { sessionKey: "telegram:1" });
    const queued = await harness.job("queued", { sessionKey: "telegram:2", agentId: "scout" });
    const byChat = await (await harness.request("/jobs?chat=telegram%3A1")).text();
    expect(byChat).toContain(`data-job="${failed.id}"`);
    expect(byChat).not.toContain(`data-job="${queued.id}"`);
    expect(await (await harness.request("/jobs?agent=scout")).text()).toContain(
      `data-job="${queued.id}"`,
    );
    expect((await post(`/jobs/${failed.id}/retry`)).status).toBe(303);
    expect((await harness.storage.queue.get(failed.id))?.state).toBe("queued");
    expect((await post(`/jobs/${queued.id}/cancel`)).status).toBe(303);
    expect((await harness.storage.queue.get(queued.id))?.stopRequested).toBe(true);
  });

  it("renders a transcript with its tool card and compaction, and starts a web chat", async () => {
    const session = await harness.storage.history.createSession({
      key: "cli:me",
      agentId: "pickle",
    });
    await harness.storage.history.append(session.id, {
      role: "assistant",
      content: [{ type: "tool_use", id: "c1", name: "read", input: { path: "notes.md" } }],
    });
    await harness.storage.history.append(session.id, {
      role: "user",
      content: [{ type: "tool_result", tool_use_id: "c1", content: "brine" }],
    });
    await harness.storage.history.append(session.id, {
      role: "user",
      content: [{ type: "compaction", summary: "Notes were read.", replaces: 2 }],
    });
    const html = await (await harness.request(`/sessions/${session.id}`)).text();
    expect(html).toMatch(
      /<details class="tool"><summary>read \{&quot;path&quot;:&quot;notes.md&quot;\}/,
    );
    expect(html).toContain("stands for the 2 messages above");
    const started = await post(
      "/sessions/new",
      new URLSearchParams({ agent: "pickle", message: "hello from the browser" }),
    );
    expect(started.status).toBe(303);
    const [job] = await harness.storage.queue.list({ state: "queued" });
    expect(job).toMatchObject({
      message: "hello from the browser",
      sessionKey: expect.stringMatching(/^web:pickle:/),
    });
  });

  it("shows the queue, the last hour and the cluster on the overview", async () => {
    await harness.job("done");
    await harness.job("queued");
    const html = await (await harness.request("/")).text();
    expect(html).toMatch(/data-state="queued">1</);
    expect(html).toMatch(/<span class="good">1 done<\/span>/);
    expect(html).toContain("<h2>Instances</h2>");
    expect(html).toContain("leader: <strong>none (no instance holds the lease)</strong>");
  });
});
