/**
 * The Crons, Agents, Pairing, Approvals and Usage pages in a real browser: headless
 * Chromium (test/helpers/browser.ts) against the sections served over loopback in the
 * test frame of test/helpers/section-app.tsx, built by `ownerSections` as the server
 * builds them, on real SQLite storage. Every page as the server serves it, with the
 * stylesheet, is looked at in dashboard-every-page-browser.test.ts.
 */
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadAgents } from "../../src/agents/definition.js";
import { systemClock } from "../../src/base/clock.js";
import type { Storage } from "../../src/ports/index.js";
import { openStorage } from "../../src/storage/index.js";
import { ownerSections } from "../../src/web/sections/index.js";
import { browserForFile, browserSkipReason, screenshot } from "../helpers/browser.js";
import { testConfig } from "../helpers/config.js";
import { mountSections } from "../helpers/section-app.js";
import { makeWorkspace, type TempWorkspace } from "../helpers/workspace.js";

const skip = browserSkipReason();
const browser = browserForFile(skip);

let ws: TempWorkspace;
let storage: Storage;
let server: ReturnType<typeof serve>;
let url: string;

beforeEach(async () => {
  ws = makeWorkspace({
    "crons/news.yaml":
      'schedule: "0 8 * * 1-5"\nprompt: Summarize the news\ntimezone: Europe/Berlin\n',
  });
  const config = testConfig(ws.dir);
  storage = await openStorage(config, systemClock);
  const { app } = mountSections(
    ownerSections({
      workspace: ws.dir,
      config,
      storage,
      queue: storage.queue,
      clock: systemClock,
      agents: loadAgents(ws.dir).agents,
    }),
  );
  await new Promise<void>((listening) => {
    server = serve({ fetch: app.fetch, hostname: "127.0.0.1", port: 0 }, () => listening());
  });
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterEach(async () => {
  // The browser keeps its connections alive; close them, or close() waits for them.
  (server as import("node:http").Server).closeAllConnections();
  await new Promise((closed) => server.close(closed));
  await storage.close();
  ws.remove();
});

describe.skipIf(skip)("the owner's dashboard pages in a browser", () => {
  it("Run now on a cron creates a job, and the cron's page shows it", async () => {
    const page = await browser.page();
    await page.goto(`${url}/crons`);
    await expect(
      page.locator("td", { hasText: "at 08:00 on Monday–Friday" }).count(),
    ).resolves.toBe(1);
    await screenshot(page, "pages-crons");
    await page.getByRole("button", { name: "Run now" }).click();
    await page.waitForURL(/\/crons\/news\?notice=/);
    const notice = await page.getByRole("status").textContent();
    expect(notice).toMatch(/^Enqueued job \S+: news runs now\.$/);
    const jobs = await storage.queue.list();
    expect(jobs).toHaveLength(1);
    expect(jobs[0]?.sessionKey).toMatch(/^cron:news:manual:/);
    await expect(page.getByRole("cell", { name: jobs[0]?.id ?? "" }).count()).resolves.toBe(1);
    await screenshot(page, "pages-cron-news");
  });
});
