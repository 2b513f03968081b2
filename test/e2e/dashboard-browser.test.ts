/**
 * The dashboard in a real browser: headless Chromium against `picklebot server` run as a
 * child process on a temp workspace, its model a fake Anthropic API on loopback. Every
 * page is screenshotted to test-output/screenshots/; with PICKLEBOT_DOCS_SCREENSHOTS=1 the
 * overview and session pictures are also written to docs/ for the README. A web chat is
 * sent with Enter and its reply stopped with its Stop button; a photo uploaded in a web chat
 * shows as a thumbnail, a file dropped into its box goes with the message.
 */
import { copyFileSync, mkdirSync, readFileSync, statSync } from "node:fs";
import { networkInterfaces, tmpdir } from "node:os";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  type FakeAnthropic,
  lastUserText,
  requestAt,
  startFakeAnthropic,
} from "../fakes/anthropic.js";
import { browserForFile, browserSkipReason, screenshot } from "../helpers/browser.js";
import { photo } from "../helpers/media.js";
import { enqueueJob, killAllServers, startServer } from "../helpers/server.js";
import { hangGuard } from "../helpers/wait.js";
import { fakeModelConfig, makeWorkspace, type TempWorkspace } from "../helpers/workspace.js";

const skip = browserSkipReason();
const browser = browserForFile(skip);
const TOKEN = "browser-test-token-0123456789";
const DOCS = join(process.cwd(), "docs");

let fake: FakeAnthropic;
let ws: TempWorkspace;

beforeEach(async () => {
  fake = await startFakeAnthropic();
  ws = makeWorkspace({
    "picklebot.yaml": fakeModelConfig(fake.url),
    "notes.md": "Pickles are cucumbers in brine.\n",
  });
});

afterEach(async () => {
  await killAllServers();
  await fake.close();
  ws.remove();
});

function chatJob(message: string, extra: Partial<Parameters<typeof enqueueJob>[1]> = {}) {
  return enqueueJob(ws.dir, {
    agentId: "pickle",
    sessionKey: `web:pickle:${Math.random().toString(36).slice(2, 8)}`,
    message,
    mode: "chat",
    replyTo: { kind: "silent" },
    ...extra,
  });
}

/** The number the overview shows for a queue state. */
function queueCount(page: Page, state: string) {
  return page.locator(`#queue dd[data-state="${state}"]`);
}

describe.skipIf(skip !== null)("the dashboard in a browser", () => {
  it("shows a job going from queued to done on the overview, live, without a reload", async () => {
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    fake.script({ text: "All pickled.", chunks: 3, pauseAfterChunks: 1, resume: held });
    const server = await startServer(ws.dir);
    const page = await browser.ownerPage(server);
    await expect.poll(() => queueCount(page, "done").textContent()).toBe("0");
    await page.evaluate("window.__sameDocument = true");

    const job = await chatJob("pickle this");
    await expect
      .poll(() => queueCount(page, "running").textContent(), { timeout: hangGuard(15_000) })
      .toBe("1");
    release();
    await expect
      .poll(() => queueCount(page, "done").textContent(), { timeout: hangGuard(15_000) })
      .toBe("1");
    expect(await queueCount(page, "running").textContent()).toBe("0");
    expect(await page.evaluate("window.__sameDocument")).toBe(true);
    expect(await page.locator("#throughput").textContent()).toContain("1 done");
    await screenshot(page, "overview");
    if (process.env.PICKLEBOT_DOCS_SCREENSHOTS === "1") {
      mkdirSync(DOCS, { recursive: true });
      await page.screenshot({ path: join(DOCS, "dashboard-overview.png") });
    }
    await server.waitForLog((line) => line.job === job.id && line.outcome === "done");
    await page.emulateMedia({ colorScheme: "dark" });
    expect(await page.evaluate("getComputedStyle(document.body).backgroundColor")).toBe(
      "rgb(20, 20, 22)",
    );
    await screenshot(page, "overview-dark");
    await page.close();
  });

  it("renders a transcript with a tool call as a card that expands", async () => {
    fake.script(
      {
        text: "Let me read your notes.",
        toolUses: [{ name: "read", input: { path: "notes.md" } }],
      },
      { text: "Your notes say: **pickles are cucumbers in brine**.\n\n- cucumbers\n- brine" },
    );
    const server = await startServer(ws.dir);
    const job = await chatJob("What is in my notes?");
    await server.waitForLog((line) => line.job === job.id && line.outcome === "done", 15_000);
    const page = await browser.ownerPage(server, `/jobs/${job.id}`);
    expect(await page.locator(".reply-text").textContent()).toContain(
      "Your notes say: pickles are cucumbers in brine.",
    );
    await page.locator('a[href^="/sessions/s_"]').click();
    const card = page.locator("details.tool").first();
    await expect
      .poll(() => card.locator("summary").textContent())
      .toContain('read {"path":"notes.md"}');
    expect(await card.locator("pre").nth(1).isVisible()).toBe(false);
    await card.locator("summary").click();
    expect(await card.locator("pre").nth(1).textContent()).toContain(
      "Pickles are cucumbers in brine.",
    );
    expect(await page.locator(".msg.assistant strong").last().textContent()).toBe(
      "pickles are cucumbers in brine",
    );
    await screenshot(page, "session");
    if (process.env.PICKLEBOT_DOCS_SCREENSHOTS === "1") {
      mkdirSync(DOCS, { recursive: true });
      copyFileSync(
        join("test-output", "screenshots", "session.png"),
        join(DOCS, "dashboard-session.png"),
      );
    }
    await page.close();
  });

  it("retries a failed job from its page, and the retry runs", async () => {
    fake.script(
      { error: { status: 400, message: "bad request from the fake" } },
      { text: "Second time lucky." },
    );
    const server = await startServer(ws.dir);
    const job = await chatJob("try me", { maxAttempts: 1 });
    await server.waitForLog((line) => line.job === job.id && line.outcome === "failed", 15_000);
    const page = await browser.ownerPage(server, `/jobs/${job.id}`);
    expect(await page.locator("dd [data-state]").first().textContent()).toBe("failed");
    expect(await page.locator("ol").textContent()).toContain("bad request from the fake");
    await page.getByRole("button", { name: "Retry" }).click();
    await page.waitForURL(/\?notice=/);
    expect(await page.getByRole("status").textContent()).toContain("requeued");
    await server.waitForLog((line) => line.job === job.id && line.outcome === "done", 15_000);
    await page.reload();
    expect(await page.locator("dd [data-state]").first().textContent()).toBe("done");
    await page.close();
  });

  it("asks for the token on a non-loopback bind, then lets the browser in", async () => {
    ws.write("picklebot.yaml", fakeModelConfig(fake.url, `  host: 0.0.0.0\n  token: ${TOKEN}\n`));
    const server = await startServer(ws.dir);
    const port = server.httpUrl.split(":").at(-1);
    const url = `http://${externalAddress() ?? "127.0.0.1"}:${port}`;
    const page = await browser.page();
    await page.goto(`${url}/jobs`);
    expect(new URL(page.url()).pathname).toBe("/login");
    await screenshot(page, "login");
    await page.fill('input[name="token"]', "wrong-token-wrong-token");
    await page.click('button[type="submit"]');
    expect(await page.getByRole("alert").textContent()).toContain("not the token");
    await page.fill('input[name="token"]', TOKEN);
    await page.click('button[type="submit"]');
    await page.waitForURL(`${url}/jobs`);
    expect(await page.locator("h1").textContent()).toBe("Jobs");
    expect(await page.content()).not.toContain(TOKEN);
    expect((await fetch(`${url}/jobs`)).status).toBe(401);
    await page.close();
  });
});

/** A non-loopback IPv4 address of this host, if it has one. */
function externalAddress(): string | null {
  for (const addresses of Object.values(networkInterfaces())) {
    const found = addresses?.find((address) => address.family === "IPv4" && !address.internal);
    if (found) return found.address;
  }
  return null;
}

describe.skipIf(skip !== null)("a web chat in the browser", () => {
  it("sends a message and streams the reply into the page as it is written, without a reload", async () => {
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    fake.script({ text: "Brine is salty water.", chunks: 3, pauseAfterChunks: 1, resume: held });
    const server = await startServer(ws.dir);
    const page = await browser.ownerPage(server, "/sessions");
    await page.selectOption('select[name="agent"]', "pickle");
    await page.fill('textarea[name="message"]', "What is brine?");
    await page.getByRole("button", { name: "Start chat" }).click();
    await page.waitForURL(/\/sessions\/s_/);
    await page.evaluate("window.__sameDocument = true");
    await expect
      .poll(() => page.locator("#transcript").textContent(), { timeout: hangGuard(15_000) })
      .toContain("the agent is working on it");
    // The model is held after its first words: they are on the page already.
    const partial = page.locator("#transcript .reply");
    await expect.poll(() => partial.textContent(), { timeout: hangGuard(15_000) }).not.toBe("");
    const soFar = (await partial.textContent()) ?? "";
    expect("Brine is salty water.".startsWith(soFar)).toBe(true);
    expect(soFar.length).toBeLessThan("Brine is salty water.".length);
    release();
    await expect
      .poll(() => page.locator("#transcript").textContent(), { timeout: hangGuard(15_000) })
      .toContain("Brine is salty water.");
    expect(await page.locator("#transcript .msg.user").first().textContent()).toContain(
      "What is brine?",
    );
    expect(await page.evaluate("window.__sameDocument")).toBe(true);

    fake.script({ text: "Yes, with vinegar sometimes." });
    await page.fill('textarea[name="message"]', "Always?");
    await page.getByRole("button", { name: "Send" }).click();
    await expect
      .poll(() => page.locator("#transcript").textContent(), { timeout: hangGuard(15_000) })
      .toContain("Yes, with vinegar sometimes.");
    expect(await page.locator('textarea[name="message"]').inputValue()).toBe("");
    expect(await page.evaluate("window.__sameDocument")).toBe(true);
    await screenshot(page, "web-chat");
    await page.close();
  });
});

describe.skipIf(skip !== null)("a web chat's keys and Stop button", () => {
  it("sends with Enter (Shift+Enter adds a line), and Stop ends the reply being written", async () => {
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const whole = "Brine is salty water, and here is much more about it.";
    fake.script(
      { text: whole, chunks: 4, pauseAfterChunks: 1, resume: held },
      { text: "You are welcome." },
    );
    const server = await startServer(ws.dir);
    const page = await browser.ownerPage(server, "/sessions");
    await page.locator('textarea[name="message"]').click();
    await page.keyboard.type("What is brine?");
    await page.keyboard.press("Shift+Enter");
    await page.keyboard.type("In short.");
    await page.keyboard.press("Enter");
    await page.waitForURL(/\/sessions\/s_/);
    await page.evaluate("window.__sameDocument = true");
    // The model is held after its first words: the reply is being written.
    const partial = page.locator("#transcript .reply");
    await expect.poll(() => partial.textContent(), { timeout: 15_000 }).not.toBe("");
    expect(lastUserText(requestAt(fake, 0))).toBe("What is brine?\nIn short.");
    const stop = page.getByRole("button", { name: "Stop" });
    await stop.click({ timeout: 15_000 });

    const outcome = await server.waitForLog(
      (line) => typeof line.outcome === "string" && String(line.session).startsWith("web:"),
      15_000,
    );
    await expect
      .poll(() => page.locator("#transcript").textContent(), { timeout: 15_000 })
      .not.toContain("the agent is working on it");
    expect(await stop.count()).toBe(0);
    release();
    expect(await page.locator("#transcript").textContent()).not.toContain(whole);
    expect(fake.requests).toHaveLength(1);
    const job = await page.context().request.get(`${server.httpUrl}/jobs/${outcome.job}`);
    const jobPage = await job.text();
    expect(jobPage).toMatch(/data-state="(failed|stopped|cancelled)"/);
    expect(jobPage).toContain("stopped by the user");

    // Enter in the chat box sends too, in place (htmx), and empties the box.
    await page.locator('textarea[name="message"]').click();
    await page.keyboard.type("Thanks.");
    await page.keyboard.press("Enter");
    await expect
      .poll(() => page.locator("#transcript").textContent(), { timeout: 15_000 })
      .toContain("You are welcome.");
    expect(await page.locator('textarea[name="message"]').inputValue()).toBe("");
    expect(await page.evaluate("window.__sameDocument")).toBe(true);
    await page.close();
  });
});

describe.skipIf(skip !== null)("files in a web chat in the browser", () => {
  it("uploads a photo, sees the reply and its thumbnail, drops a file into the box, and shows a refusal", async () => {
    fake.script({ text: "A garden in the sun." }, { text: "Your list has two items." });
    const server = await startServer(ws.dir);
    const page = await browser.ownerPage(server, "/sessions");
    await page.fill('textarea[name="message"]', "What is in this picture?");
    await page
      .locator('input[name="file"]')
      .setInputFiles({ name: "garden.jpg", mimeType: "image/jpeg", buffer: await photo(900, 600) });
    await page.getByRole("button", { name: "Start chat" }).click();
    await page.waitForURL(/\/sessions\/s_/);
    const transcript = page.locator("#transcript");
    await expect
      .poll(() => transcript.textContent(), { timeout: hangGuard(20_000) })
      .toContain("A garden in the sun.");
    const asked = requestAt(fake, 0).body.messages.at(-1)?.content;
    const [image] = Array.isArray(asked) ? asked : [];
    expect(image).toMatchObject({ type: "image", source: { media_type: "image/jpeg" } });
    // The thumbnail loads through the owner's session (the dashboard cookie).
    const thumbnail = transcript.locator("img.thumbnail");
    await expect.poll(() => thumbnail.count(), { timeout: hangGuard(15_000) }).toBe(1);
    await thumbnail.scrollIntoViewIfNeeded();
    // Runs in the page (the DOM's types are not in this project's lib).
    const loadedWidth = 'document.querySelector("#transcript img.thumbnail").naturalWidth';
    await expect.poll(() => page.evaluate(loadedWidth), { timeout: hangGuard(15_000) }).toBe(900);
    expect(await transcript.locator("figcaption").textContent()).toMatch(
      /garden\.jpg \(image\/jpeg, [\d.]+ kB, 900×600 px\)/,
    );
    await page.evaluate("window.__sameDocument = true");

    // A file dropped into the message box goes with the message (htmx posts in place).
    const box = page.locator('textarea[name="message"]');
    const dropped = await page.evaluateHandle(
      '(() => { const d = new DataTransfer(); d.items.add(new File(["- jars\\n- brine\\n"], "list.md", { type: "text/markdown" })); return d; })()',
    );
    await box.dispatchEvent("drop", { dataTransfer: dropped });
    await box.fill("What is on my list?");
    await box.press("Enter");
    await expect
      .poll(() => transcript.textContent(), { timeout: hangGuard(20_000) })
      .toContain("Your list has two items.");
    expect(lastUserText(requestAt(fake, 1))).toContain("list.md (text/markdown");
    expect(lastUserText(requestAt(fake, 1))).toContain("- jars\n- brine");
    await expect
      .poll(() => transcript.textContent(), { timeout: hangGuard(20_000) })
      .not.toContain("the agent is working on it");

    // An empty file is refused in the chat box, saying why.
    await page
      .locator('input[name="file"]')
      .setInputFiles({ name: "empty.txt", mimeType: "text/plain", buffer: Buffer.alloc(0) });
    await page.getByRole("button", { name: "Send" }).click();
    const refusal = page.locator("[data-form-error]");
    await expect
      .poll(() => refusal.textContent(), { timeout: hangGuard(15_000) })
      .toContain('"empty.txt" is empty');
    expect(await refusal.isVisible()).toBe(true);
    expect(await page.evaluate("window.__sameDocument")).toBe(true);
    const shot = await screenshot(page, "web-chat-files");
    copyFileSync(shot, join(tmpdir(), "picklebot-web-chat-files.png"));
    await page.close();
  });
});

describe("a generated access token", () => {
  it("is kept in history/http-token, never logged, and the login link lets a browser in", async () => {
    const first = await startServer(ws.dir);
    const file = join(ws.dir, "history", "http-token");
    const token = readFileSync(file, "utf8").trim();
    expect(statSync(file).mode & 0o777).toBe(0o600);
    // stderr is a pipe here, not a terminal: the log says where the token is instead.
    expect(first.stderr).not.toContain(token);
    expect(JSON.stringify(first.logs)).not.toContain(token);
    expect(first.linesMatching((line) => line.msg.includes(`cat ${file}`))).toHaveLength(1);
    expect((await fetch(`${first.httpUrl}/jobs`)).status).toBe(401);
    expect((await first.fetch("/jobs")).status).toBe(200);
    await first.kill();

    const second = await startServer(ws.dir);
    expect(second.token).toBe(token);
    expect(second.linesMatching((line) => line.msg.includes(`cat ${file}`))).toHaveLength(0);
    if (skip !== null) return;
    const page = await browser.ownerPage(second, "/approvals");
    expect(await page.locator("h1").textContent()).toBe("Approvals");
    expect(page.url()).not.toContain(token);
    await page.goBack();
    expect(page.url()).not.toContain(token);
    await page.close();
  });
});
