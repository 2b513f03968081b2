/**
 * Headless Chromium (Debian's `chromium` or `chromium-headless-shell`, no browser download)
 * driven by playwright-core, for the dashboard's browser tests. Each browser gets a fresh
 * profile folder. Without a Chromium binary the tests skip with the reason printed;
 * under CI=true a missing binary fails them instead (`.ci/run` installs it).
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type BrowserContext, chromium, type Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, expect } from "vitest";

/** Where the binary may be, first found wins. */
const CHROMIUM_PATHS = [
  process.env.PICKLEBOT_CHROMIUM,
  "/usr/bin/chromium",
  "/usr/bin/chromium-headless-shell",
  "/usr/lib/chromium/chromium-headless-shell",
  "/usr/bin/chromium-browser",
];

const LAUNCH_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** Screenshots of every page the tests visit (gitignored). */
export const SCREENSHOT_DIR = join(process.cwd(), "test-output", "screenshots");

/** The Chromium binary, or null. */
function chromiumPath(): string | null {
  return CHROMIUM_PATHS.find((path) => path !== undefined && existsSync(path)) ?? null;
}

/** Why the browser tests cannot run here (printed), or null when they can; throws under CI. */
export function browserSkipReason(): string | null {
  if (chromiumPath()) return null;
  const reason = `no Chromium binary (looked at ${CHROMIUM_PATHS.filter(Boolean).join(", ")}); install Debian's chromium`;
  if (process.env.CI === "true") throw new Error(`browser tests under CI=true: ${reason}`);
  process.stderr.write(`skipping the browser tests: ${reason}\n`);
  return reason;
}

/** A running browser with a fresh profile; `close()` removes the profile. */
export interface TestBrowser {
  context: BrowserContext;
  /** A new tab `width` px wide (a phone is 375). */
  page(width?: number): Promise<Page>;
  close(): Promise<void>;
}

/** Launches headless Chromium. */
async function launchBrowser(): Promise<TestBrowser> {
  const executablePath = chromiumPath();
  if (!executablePath) throw new Error("no Chromium binary; check browserSkipReason() first");
  const profile = mkdtempSync(join(tmpdir(), "picklebot-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath,
    headless: true,
    args: LAUNCH_ARGS,
    viewport: { width: 1100, height: 800 },
  });
  return {
    context,
    async page(width = 1100) {
      const page = await context.newPage();
      await page.setViewportSize({ width, height: width < 600 ? 740 : 800 });
      return page;
    },
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** A server whose dashboard a test logs in to (test/helpers/server.ts's ServerProcess). */
export interface OwnedServer {
  httpUrl: string;
  /** The link that logs a browser in, then opens `path`. */
  loginLink(path?: string): string;
}

/** The file's browser: new tabs, and tabs logged in to a server as its owner. */
export interface FileBrowser extends Pick<TestBrowser, "page"> {
  /**
   * A new tab that opened `server`'s login link (the token in its fragment, as
   * `picklebot dashboard` prints it) and was let in to `path`.
   */
  ownerPage(server: OwnedServer, path?: string, width?: number): Promise<Page>;
}

/**
 * One browser for the test file: launched before its first test (unless `skip`, see
 * {@link browserSkipReason}), closed after its last. A test fails when one of its pages
 * threw or refused something under the Content-Security-Policy.
 */
export function browserForFile(skip: string | null): FileBrowser {
  let browser: TestBrowser | undefined;
  const pageErrors: string[] = [];
  beforeAll(async () => {
    if (!skip) browser = await launchBrowser();
  });
  afterEach(() => {
    expect(pageErrors.splice(0), "script errors and Content-Security-Policy refusals").toEqual([]);
  });
  afterAll(async () => browser?.close());
  const page = async (width?: number) => {
    if (!browser) throw new Error(`no browser: ${skip ?? "not launched yet"}`);
    const opened = await browser.page(width);
    opened.on("pageerror", (error) => pageErrors.push(error.message));
    opened.on("console", (message) => {
      if (/Content Security Policy/i.test(message.text())) pageErrors.push(message.text());
    });
    return opened;
  };
  return {
    page,
    async ownerPage(server, path = "/", width) {
      const opened = await page(width);
      // The login page submits itself: its load may never come before the next one.
      await opened.goto(server.loginLink(path), { waitUntil: "commit" });
      await opened.waitForURL(`${server.httpUrl}${path}`);
      return opened;
    },
  };
}

/** Saves a full-page screenshot as `test-output/screenshots/<name>.png`; returns its path. */
export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  const path = join(SCREENSHOT_DIR, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}

/** Whether the page scrolls sideways: its content wider than the window. */
export async function horizontalOverflow(page: Page): Promise<{ scroll: number; client: number }> {
  // Runs in the page (the DOM's types are not in this project's lib).
  return page.evaluate(
    "({ scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth })",
  );
}
