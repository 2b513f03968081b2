/**
 * Every page of the dashboard in a real browser, as `picklebot server` (a child process on
 * a temp workspace, its model a fake Anthropic API on loopback) serves it: a workspace with
 * a finished chat that called a tool, a failed job, a cron, a pending pairing code and an
 * approved user, a pending approval request and an always-allow grant, a memory. Each page is
 * screenshotted 375 and 1280 px wide, light and dark, to test-output/screenshots/every-*.png
 * (look at them after a change of the markup or the stylesheet); at 375 px no page may
 * scroll sideways.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newRequest } from "../approvals/contract.js";
import { type FakeAnthropic, startFakeAnthropic } from "../fakes/anthropic.js";
import { parkOnApproval } from "../helpers/approvals.js";
import {
  browserForFile,
  browserSkipReason,
  horizontalOverflow,
  screenshot,
} from "../helpers/browser.js";
import { withWorkspaceStorage } from "../helpers/config.js";
import { enqueueJob, killAllServers, startServer } from "../helpers/server.js";
import { fakeModelConfig, makeWorkspace, type TempWorkspace } from "../helpers/workspace.js";

const skip = browserSkipReason();
const browser = browserForFile(skip);
const TOKEN = "every-page-test-token-0123456789";
const WIDTHS = [375, 1280];
const SCHEMES = ["light", "dark"] as const;

let fake: FakeAnthropic;
let ws: TempWorkspace;
let baseUrl = "";
/** Each page, and a text it shows only when its content rendered (filled once seeded). */
const pages = new Map<string, [path: string, shows: string]>();

// One server for the tour, seeded once; each page is a test of its own, so a slow host
// makes the tour slower, never red by one test's time limit.
beforeAll(async () => {
  if (skip) return;
  fake = await startFakeAnthropic();
  ws = makeWorkspace({
    "picklebot.yaml": fakeModelConfig(fake.url, `  token: ${TOKEN}\n`),
    "notes.md": "Pickles are cucumbers in brine.\n",
    "crons/news.yaml":
      'schedule: "0 8 * * 1-5"\nprompt: Summarize the news\ntimezone: Europe/Berlin\n',
  });
  await seedOwnerPages();
  fake.script(
    { text: "Reading.", toolUses: [{ name: "read", input: { path: "notes.md" } }] },
    { text: `A long word: ${"pickle".repeat(30)} and a **Markdown** reply.` },
    { error: { status: 400, message: `a long refusal: ${"brine".repeat(40)}` } },
  );
  const server = await startServer(ws.dir);
  baseUrl = server.httpUrl;
  const chat = await enqueueJob(ws.dir, {
    agentId: "pickle",
    sessionKey: "web:pickle:every1",
    message: "What do my notes say about pickles? A phone-sized question, rather long.",
    mode: "chat",
    replyTo: { kind: "silent" },
  });
  await server.waitForLog((line) => line.job === chat.id && line.outcome === "done", 15_000);
  const failed = await enqueueJob(ws.dir, {
    agentId: "pickle",
    sessionKey: "web:pickle:every2",
    message: "x".repeat(300),
    mode: "chat",
    replyTo: { kind: "silent" },
    maxAttempts: 1,
  });
  await server.waitForLog((line) => line.job === failed.id && line.outcome === "failed", 15_000);
  const auth = { authorization: `Bearer ${TOKEN}` };
  const jobPage = await (await fetch(`${baseUrl}/jobs/${chat.id}`, { headers: auth })).text();
  const sessionPath = jobPage.match(/href="(\/sessions\/s_[^"]+)"/)?.[1] ?? "";
  expect(sessionPath).not.toBe("");
  for (const [name, page] of Object.entries({
    overview: ["/", "Queue"],
    jobs: ["/jobs", "waiting for the owner's approval"],
    job: [`/jobs/${failed.id}`, "a long refusal"],
    sessions: ["/sessions", "What do my notes say"],
    session: [sessionPath, 'read {"path":"notes.md"}'],
    crons: ["/crons", "at 08:00 on Monday–Friday"],
    cron: ["/crons/news", "Summarize the news"],
    agents: ["/agents", "General assistant"],
    agent: ["/agents/pickle", "System prompt"],
    memory: ["/memory", "agent pickle's memory of telegram:4242"],
    "memory-page": ["/memory/pickle/telegram%3A4242", "Their cat is called Miso."],
    pairing: ["/pairing", "Ada Lovelace"],
    approvals: ["/approvals", "pickle wants to run bash"],
    usage: ["/usage", "By agent"],
  } satisfies Record<string, [string, string]>)) {
    pages.set(name, page);
  }
  await logIn();
});

afterAll(async () => {
  if (skip) return;
  await killAllServers();
  await fake.close();
  ws.remove();
});

/**
 * A pending and an approved pairing, a job parked on an approval, an always-allow grant, a
 * person's memory with a long entry.
 */
function seedOwnerPages() {
  return withWorkspaceStorage(ws.dir, async (storage) => {
    const now = Date.now();
    const memory = `Their cat is called Miso.\n§\nA long word: ${"gherkin".repeat(20)}`;
    await storage.memory.update(
      { agentId: "pickle", scope: "telegram:4242" },
      { by: "agent", at: now, jobId: "j_seed", sessionId: "s_seed", callId: "toolu_seed" },
      () => ({ text: memory, change: { action: "add", entry: memory, previous: null } }),
    );
    await storage.pairing.requestCode(
      { platform: "telegram", userId: "4242", userName: "Ada Lovelace", chatId: "4242" },
      now,
    );
    const friend = await storage.pairing.requestCode(
      { platform: "discord", userId: "77", userName: "Grace", chatId: "77" },
      now,
    );
    await storage.pairing.approve(friend.code, now);
    await parkOnApproval(storage, "ap_pending", now, { agentId: "pickle" });
    await storage.approvals.open(
      newRequest("ap_always", {
        agentId: "pickle",
        input: JSON.stringify({ command: "ls notes" }),
        pattern: "ls *",
        createdAt: now,
      }),
    );
    await storage.approvals.answer("ap_always", "always", "owner", now);
  });
}

/** Logs the file's browser in with the token, as the owner would. */
async function logIn() {
  const login = await browser.page();
  await login.goto(`${baseUrl}/login`);
  await login.fill('input[name="token"]', TOKEN);
  await login.click('button[type="submit"]');
  await login.waitForURL(`${baseUrl}/`);
  await login.close();
}

const PAGE_NAMES = [
  "overview",
  "jobs",
  "job",
  "sessions",
  "session",
  "crons",
  "cron",
  "agents",
  "agent",
  "memory",
  "memory-page",
  "pairing",
  "approvals",
  "usage",
];

describe.skipIf(skip)("every dashboard page, phone and desktop, light and dark", () => {
  it("login renders readably and never scrolls sideways at 375 px", async () => {
    await checkEveryLook(`${baseUrl}/login`, "login", "Token");
  });

  it.each(PAGE_NAMES)("%s renders readably and never scrolls sideways at 375 px", async (name) => {
    const [path, shows] = pages.get(name) ?? ["", ""];
    expect(path, `${name} was seeded`).not.toBe("");
    await checkEveryLook(`${baseUrl}${path}`, name, shows);
  });
});

/**
 * Opens `url` 375 and 1280 px wide, light and dark: each time it must answer 200 and show
 * `shows` (its content, not the login form), is saved as `every-<name>-<width>-<scheme>.png`,
 * and at 375 px must not scroll sideways.
 */
async function checkEveryLook(url: string, name: string, shows: string) {
  for (const width of WIDTHS) {
    for (const scheme of SCHEMES) {
      const page = await browser.page(width);
      await page.emulateMedia({ colorScheme: scheme });
      const response = await page.goto(url);
      expect(response?.status(), `${name}: ${url}`).toBe(200);
      expect(await page.locator("body").textContent(), `${name}: ${url}`).toContain(shows);
      await screenshot(page, `every-${name}-${width}-${scheme}`);
      if (width < 600) {
        const { scroll, client } = await horizontalOverflow(page);
        expect(scroll, `${name} (${url}) scrolls sideways`).toBeLessThanOrEqual(client);
      }
      await page.close();
    }
  }
}
