import { afterEach, describe, expect, it } from "vitest";
import { csrfTokenOf, type DashboardHarness, openDashboard } from "../helpers/dashboard.js";

let harness: DashboardHarness;
afterEach(() => harness?.close());

async function post(path: string): Promise<Response> {
  const csrf = await csrfTokenOf(harness);
  return harness.request(path, { method: "POST", headers: { "x-csrf-token": csrf } });
}

async function page(path: string): Promise<{ status: number; html: string }> {
  const response = await harness.request(path);
  return { status: response.status, html: await response.text() };
}

describe("the jobs page", () => {
  it("lists jobs and filters them by state, agent and chat", async () => {
    harness = await openDashboard();
    const failed = await harness.job("failed", {
      sessionKey: "telegram:1",
      message: "book the\ntrain to Lyon",
    });
    const scout = await harness.job("queued", { agentId: "scout", sessionKey: "discord:9" });
    const queued = await harness.job("queued", { sessionKey: "telegram:1" });
    const all = await page("/jobs");
    for (const job of [failed, scout, queued]) expect(all.html).toContain(`data-job="${job.id}"`);
    expect(all.html).toContain("book the train to Lyon");
    const byState = await page("/jobs?state=failed");
    expect(byState.html).toContain(`data-job="${failed.id}"`);
    expect(byState.html).not.toContain(`data-job="${queued.id}"`);
    expect(byState.html).toContain("the model said no");
    const byAgent = await page("/jobs?agent=scout");
    expect(byAgent.html).toContain(`data-job="${scout.id}"`);
    expect(byAgent.html).not.toContain(`data-job="${queued.id}"`);
    const byChat = await page("/jobs?chat=telegram%3A1");
    expect(byChat.html).toContain(`data-job="${queued.id}"`);
    expect(byChat.html).not.toContain(`data-job="${scout.id}"`);
    expect((await page("/jobs?state=queued&agent=nobody")).html).toContain("no jobs match");
  });

  it("shows a stopped job as stopped, not failed, with no Retry", async () => {
    harness = await openDashboard();
    const stopped = await harness.job("stopped");
    const failed = await harness.job("failed");
    const list = await page("/jobs?state=stopped");
    expect(list.html).toContain(`data-job="${stopped.id}"`);
    expect(list.html).not.toContain(`data-job="${failed.id}"`);
    expect((await page("/jobs?state=failed")).html).not.toContain(`data-job="${stopped.id}"`);
    const { html } = await page(`/jobs/${stopped.id}`);
    expect(html).toContain('<span class="badge state-stopped" data-state="stopped">stopped</span>');
    expect(html).not.toContain("stop requested");
    expect(html).not.toContain(`/jobs/${stopped.id}/retry`);
    const retried = await post(`/jobs/${stopped.id}/retry`);
    expect(retried.status).toBe(409);
    expect(await retried.text()).toContain("a stopped job is not run again");
  });

  it("refuses an unknown state, naming the states it takes", async () => {
    harness = await openDashboard();
    const response = await page("/jobs?state=stuck");
    expect(response.status).toBe(400);
    expect(response.html).toContain(
      "state must be one of queued, running, waiting, failed, stopped, done",
    );
  });

  it("serves the list as a fragment for live refreshes", async () => {
    harness = await openDashboard();
    const job = await harness.job("queued");
    const fragment = await page("/jobs/live?state=queued");
    expect(fragment.html).toContain(`data-job="${job.id}"`);
    expect(fragment.html).not.toContain("<html");
    expect(fragment.html).toContain('hx-get="/jobs/live?state=queued"');
  });
});

describe("a job's page", () => {
  it("shows its attempts, errors, session, parent and subagent jobs", async () => {
    harness = await openDashboard();
    const parent = await harness.job("failed");
    const child = await harness.job("queued", { parentId: parent.id, agentId: "scout" });
    const { html } = await page(`/jobs/${parent.id}`);
    expect(html).toContain("1/1");
    expect(html).toContain("attempt 1 at");
    expect(html).toContain("the model said no");
    expect(html).toContain(`href="/jobs/${child.id}"`);
    expect(html).toContain(">Retry<");
    expect(html).not.toContain(">Cancel<");
    const childPage = await page(`/jobs/${child.id}`);
    expect(childPage.html).toContain(`href="/jobs/${parent.id}"`);
    expect(childPage.html).toContain(">Cancel<");
  });

  it("links a checkpointed job to its session", async () => {
    harness = await openDashboard();
    const session = await harness.storage.history.createSession({
      key: "cli:me",
      agentId: "pickle",
    });
    const job = await harness.job("queued", { sessionKey: "cli:me" });
    const [claimed] = await harness.storage.queue.claim("worker", 1);
    if (claimed?.id !== job.id) throw new Error("the job was not claimed");
    await harness.storage.queue.checkpoint(claimed, session.id);
    const { html } = await page(`/jobs/${job.id}`);
    expect(html).toContain(`href="/sessions/${session.id}"`);
    expect(html).toContain("checkpointed");
  });

  it("shows the message and the reply the job stored in its session, as Markdown", async () => {
    harness = await openDashboard();
    const session = await harness.storage.history.createSession({
      key: "cli:me",
      agentId: "pickle",
    });
    const job = await harness.job("queued", { sessionKey: "cli:me", message: "Any *news*?" });
    const [claimed] = await harness.storage.queue.claim("worker", 1);
    if (claimed?.id !== job.id) throw new Error("the job was not claimed");
    await harness.storage.history.append(
      session.id,
      { role: "user", content: [{ type: "text", text: "Any *news*?" }] },
      { jobId: job.id },
    );
    await harness.storage.queue.checkpoint(claimed, session.id);
    await harness.storage.history.append(
      session.id,
      { role: "assistant", content: [{ type: "text", text: "Pickles are **up**." }] },
      {
        usage: { input: 10, output: 5, cacheRead: 0, cacheWrite: 0 },
        call: { model: "claude-sonnet-4-5", jobId: job.id },
      },
    );
    await harness.storage.queue.complete(claimed);
    const { html } = await page(`/jobs/${job.id}`);
    expect(html).toContain("<p>Any <em>news</em>?</p>");
    expect(html).toContain('<dd class="reply-text"><p>Pickles are <strong>up</strong>.</p></dd>');
  });

  it("answers 404 for a job that does not exist", async () => {
    harness = await openDashboard();
    const response = await page("/jobs/nope");
    expect(response.status).toBe(404);
    expect(response.html).toContain("No job &quot;nope&quot;");
    expect((await post("/jobs/nope/retry")).status).toBe(404);
  });
});

describe("Retry and Cancel", () => {
  it("Retry requeues a failed job with a fresh attempt budget", async () => {
    harness = await openDashboard();
    const job = await harness.job("failed");
    const response = await post(`/jobs/${job.id}/retry`);
    expect(response.status).toBe(303);
    expect(response.headers.get("location")).toMatch(new RegExp(`^/jobs/${job.id}\\?notice=`));
    expect((await harness.storage.queue.get(job.id))?.state).toBe("queued");
    const after = await page(response.headers.get("location") ?? "");
    expect(after.html).toContain("requeued with a fresh attempt budget");
  });

  it("shows a note only when the dashboard wrote it: a crafted ?notice= link shows nothing", async () => {
    harness = await openDashboard();
    const job = await harness.job("failed");
    const forged = await page(`/jobs/${job.id}?notice=Send+your+token+to+evil.example&mac=x`);
    expect(forged.status).toBe(200);
    expect(forged.html).not.toContain("evil.example");
    expect(forged.html).not.toContain('role="status"');
  });

  it("Retry refuses a job that did not fail", async () => {
    harness = await openDashboard();
    const job = await harness.job("done");
    const response = await post(`/jobs/${job.id}/retry`);
    expect(response.status).toBe(409);
    expect(await response.text()).toContain("only failed jobs can be retried");
  });

  it("Cancel stops a queued job, and a running one through the session stopper", async () => {
    harness = await openDashboard();
    const running = await harness.job("running", { sessionKey: "telegram:5" });
    const queued = await harness.job("queued");
    expect((await post(`/jobs/${queued.id}/cancel`)).status).toBe(303);
    expect((await harness.storage.queue.get(queued.id))?.stopRequested).toBe(true);
    expect((await post(`/jobs/${running.id}/cancel`)).status).toBe(303);
    expect(harness.stopped).toEqual(["telegram:5"]);
  });

  it("Cancel refuses a finished job", async () => {
    harness = await openDashboard();
    const job = await harness.job("failed");
    const response = await post(`/jobs/${job.id}/cancel`);
    expect(response.status).toBe(409);
    expect(await response.text()).toContain(
      "only queued, waiting and running jobs can be cancelled",
    );
  });
});
