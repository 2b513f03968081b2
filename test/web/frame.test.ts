import { afterEach, describe, expect, it } from "vitest";
import { type DashboardHarness, openDashboard } from "../helpers/dashboard.js";

let harness: DashboardHarness;
afterEach(() => harness?.close());

const DAILY_CRON = "schedule: '0 8 * * *'\nprompt: good morning\n";

describe("the dashboard frame", () => {
  it("renders every page in the layout: nav, local assets, CSRF header for htmx", async () => {
    harness = await openDashboard();
    const html = await (await harness.request("/jobs")).text();
    expect(html.startsWith("<!DOCTYPE html>")).toBe(true);
    expect(html).toContain('<meta name="viewport" content="width=device-width, initial-scale=1"/>');
    expect(html).toMatch(/<a href="\/jobs" aria-current="page">Jobs<\/a>/);
    expect(html).toContain('<a href="/sessions">Sessions</a>');
    expect(html).toMatch(/<script src="\/assets\/htmx\.min\.js\?v=[\d.]+" defer/);
    expect(html).not.toMatch(/src="https?:/);
    expect(html).toMatch(/<body hx-headers="\{&quot;x-csrf-token&quot;:&quot;[\w-]+&quot;\}">/);
  });

  it("serves htmx, the stylesheet and the live script from picklebot, cacheable", async () => {
    harness = await openDashboard();
    const htmx = await harness.request("/assets/htmx.min.js");
    expect(htmx.status).toBe(200);
    expect(htmx.headers.get("content-type")).toContain("text/javascript");
    expect(htmx.headers.get("cache-control")).toBe("public, max-age=86400");
    expect(await htmx.text()).toContain("htmx");
    const css = await harness.request("/assets/dashboard.css");
    expect(await css.text()).toContain("prefers-color-scheme: dark");
    const live = await (await harness.request("/assets/dashboard.js")).text();
    expect(live).toContain('new EventSource("/events")');
    expect(live).toContain('"job.done"');
    expect((await harness.request("/assets/nope.js")).status).toBe(404);
  });

  it("answers a failed request with 500 and keeps the error's text off the page", async () => {
    harness = await openDashboard();
    await harness.storage.close();
    const response = await harness.request("/jobs");
    expect(response.status).toBe(500);
    expect(await response.text()).toBe("500 internal error; the server log says why\n");
  });

  it("answers an unknown path with 404 and where to go", async () => {
    harness = await openDashboard();
    const response = await harness.request("/nowhere");
    expect(response.status).toBe(404);
    expect(await response.text()).toContain("try /, /healthz, /metrics or /events");
  });
});

describe("the overview", () => {
  it("shows workers with restarts, the queue by state, the last hour, buses and next crons", async () => {
    harness = await openDashboard({ files: { "crons/daily.yaml": DAILY_CRON } });
    await harness.job("failed");
    await harness.job("done");
    await harness.job("stopped");
    await harness.job("queued");
    const html = await (await harness.request("/")).text();
    expect(html).toContain("<h1>Overview</h1>");
    expect(html).toMatch(/<dd class="state-queued" data-state="queued">1<\/dd>/);
    expect(html).toMatch(/<dd class="state-failed" data-state="failed">1<\/dd>/);
    expect(html).toMatch(/<dd class="state-stopped" data-state="stopped">1<\/dd>/);
    expect(html).toContain('<span class="state-stopped">, 1 stopped</span>');
    expect(html).toContain("running, 2 restarts");
    expect(html).toContain("last error: boom");
    expect(html).toMatch(/1 done<\/span>, <span class="bad">1 failed/);
    expect(html).toMatch(/<dt>telegram<\/dt><dd class="good">connected<\/dd>/);
    expect(html).toMatch(/<dt>daily<\/dt><dd>\d{4}-\d\d-\d\d 08:00:00/);
    expect(html).not.toContain("Instances");
  });

  it("shows the instances and the leader in distributed mode", async () => {
    const now = Date.now();
    const instance = {
      hostname: "box",
      pid: 10,
      version: "0.1.0",
      agents: ["pickle"],
      concurrency: 4,
      ttlMs: 15_000,
      startedAt: now - 60_000,
    };
    harness = await openDashboard({
      cluster: {
        instances: [
          { ...instance, id: "web-1", heartbeatAt: now - 1500 },
          { ...instance, id: "web-2", heartbeatAt: now - 500 },
        ],
        leader: { holder: "web-2", acquiredAt: now - 30_000, expiresAt: now + 15_000 },
        now,
      },
    });
    const html = await (await harness.request("/")).text();
    expect(html).toContain("leader: <strong>web-2</strong>");
    expect(html).toMatch(/<dt>web-1<\/dt><dd>box pid 10, v0\.1\.0, heartbeat 1\.5 s ago/);
  });

  it("serves its panel alone for live refreshes", async () => {
    harness = await openDashboard();
    const first = await (await harness.request("/live")).text();
    expect(first).not.toContain("<html");
    expect(first).toMatch(/data-state="queued">0</);
    await harness.job("queued");
    expect(await (await harness.request("/live")).text()).toMatch(/data-state="queued">1</);
  });
});
