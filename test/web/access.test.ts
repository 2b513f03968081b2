import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { resolveAccess } from "../../src/http/access.js";
import { csrfTokenOf, type DashboardHarness, openDashboard } from "../helpers/dashboard.js";
import { makeWorkspace } from "../helpers/workspace.js";

const TOKEN = "correct-horse-battery-staple";
const REMOTE = "203.0.113.9";
const PAGE = { headers: { accept: "text/html" } };

let harness: DashboardHarness;
afterEach(() => harness?.close());

function form(fields: Record<string, string>, headers: Record<string, string> = {}): RequestInit {
  return {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
    body: new URLSearchParams(fields).toString(),
  };
}

describe("dashboard access on a loopback bind without http.token", () => {
  it("needs the generated token from loopback clients too: anything on this host is one", async () => {
    harness = await openDashboard();
    const file = join(harness.config.history.path, "http-token");
    expect(harness.token).toBe(readFileSync(file, "utf8").trim());
    for (const client of ["127.0.0.1", "::1", "::ffff:127.0.0.1"]) {
      const page = await harness.anonymous("/sessions", PAGE, client);
      expect(page.status, client).toBe(303);
      expect(page.headers.get("location")).toBe("/login?next=%2Fsessions");
      for (const path of ["/jobs", "/events", "/metrics"]) {
        expect((await harness.anonymous(path, {}, client)).status, `${client} ${path}`).toBe(401);
      }
      const health = await harness.anonymous("/healthz", {}, client);
      expect(health.status, client).toBe(200);
      expect(await health.json(), client).toEqual({ healthy: true });
    }
    for (const path of ["/", "/jobs", "/sessions", "/metrics"]) {
      expect((await harness.request(path, PAGE)).status, path).toBe(200);
    }
    expect(await (await harness.request("/healthz")).json()).toHaveProperty("healthy", true);
  });

  it("refuses a POST without the token, even with the page's CSRF token", async () => {
    harness = await openDashboard();
    const job = await harness.job("failed");
    const csrf = await csrfTokenOf(harness);
    const retry = await harness.anonymous(`/jobs/${job.id}/retry`, form({ _csrf: csrf }));
    expect(retry.status).toBe(401);
    expect((await harness.storage.queue.get(job.id))?.state).toBe("failed");
  });

  it("lets no page that rebinds its DNS name to 127.0.0.1 read or change anything", async () => {
    harness = await openDashboard();
    for (const url of ["http://evil.example:8787/sessions", "http://192.168.1.5:8787/events"]) {
      const response = await harness.anonymous(url, {});
      expect(response.status, url).toBe(401);
      expect(await response.text()).not.toContain("<h1>");
    }
  });
});

describe("what a page may do in the browser", () => {
  it("may not be framed by another site, and runs only picklebot's own scripts and styles", async () => {
    harness = await openDashboard();
    for (const path of ["/", "/jobs", "/sessions", "/healthz"]) {
      const response = await harness.request(path, PAGE);
      expect(response.headers.get("x-frame-options"), path).toBe("DENY");
      const policy = response.headers.get("content-security-policy") ?? "";
      expect(policy, path).toContain("frame-ancestors 'none'");
      expect(policy, path).toContain("script-src 'self'");
      expect(policy, path).not.toMatch(/unsafe-(eval|inline)/);
      expect(response.headers.get("x-content-type-options"), path).toBe("nosniff");
    }
    const page = await (await harness.request("/sessions", PAGE)).text();
    expect(page).not.toMatch(/<script>|<style>| style=| hx-on/);
  });
});

describe("dashboard access with http.token on a loopback bind", () => {
  it("requires the token from loopback clients too (a reverse proxy on this host is one)", async () => {
    harness = await openDashboard({ token: TOKEN });
    expect(harness.token).toBe(TOKEN);
    expect((await harness.anonymous("/", PAGE, "127.0.0.1")).status).toBe(303);
    expect((await harness.request("/jobs", {}, "127.0.0.1")).status).toBe(200);
    expect((await harness.anonymous("/healthz", {}, "127.0.0.1")).status).toBe(200);
    expect(harness.announced).toEqual([]);
  });
});

describe("dashboard access on a non-loopback bind", () => {
  it("sends a browser without the token to the login form, and scripts get 401", async () => {
    harness = await openDashboard({ host: "0.0.0.0", token: TOKEN });
    const page = await harness.anonymous("/jobs?state=failed", PAGE, REMOTE);
    expect(page.status).toBe(303);
    expect(page.headers.get("location")).toBe("/login?next=%2Fjobs");
    const script = await harness.anonymous("/jobs", {}, REMOTE);
    expect(script.status).toBe(401);
    expect(script.headers.get("www-authenticate")).toContain("Bearer");
    expect(await script.text()).toContain("Authorization: Bearer");
    const wrong = await harness.anonymous(
      "/jobs",
      { headers: { authorization: "Bearer nope-nope-nope-nope" } },
      REMOTE,
    );
    expect(wrong.status).toBe(401);
    expect((await harness.anonymous("/events", {}, REMOTE)).status).toBe(401);
  });

  it("lets a bearer token through", async () => {
    harness = await openDashboard({ host: "0.0.0.0", token: TOKEN });
    const response = await harness.request("/jobs", {}, REMOTE);
    expect(response.status).toBe(200);
    expect(await response.text()).toContain("<h1>Jobs</h1>");
  });

  it("asks every client for the token on /metrics, and tells those without it only whether /healthz is healthy", async () => {
    harness = await openDashboard({ host: "0.0.0.0", token: TOKEN });
    for (const client of ["127.0.0.1", "::ffff:127.0.0.1", REMOTE]) {
      expect((await harness.anonymous("/metrics", {}, client)).status, client).toBe(401);
      const health = await harness.anonymous("/healthz", {}, client);
      expect(health.status, client).toBe(200);
      expect(await health.json(), client).toEqual({ healthy: true });
    }
    expect((await harness.request("/metrics", {}, REMOTE)).status).toBe(200);
    expect((await harness.anonymous("/", PAGE, "127.0.0.1")).status).toBe(303);
  });

  it("trades the token for an HttpOnly, SameSite=Strict cookie that holds no token", async () => {
    harness = await openDashboard({ host: "0.0.0.0", token: TOKEN });
    const login = await harness.anonymous("/login?next=%2Fsessions", PAGE, REMOTE);
    expect(await login.text()).toContain('name="token"');
    const refused = await harness.anonymous("/login", form({ token: "guess", next: "/" }), REMOTE);
    expect(refused.status).toBe(401);
    expect(await refused.text()).toContain("not the token");
    const accepted = await harness.anonymous(
      "/login",
      form({ token: TOKEN, next: "/sessions" }),
      REMOTE,
    );
    expect(accepted.status).toBe(303);
    expect(accepted.headers.get("location")).toBe("/sessions");
    const cookie = accepted.headers.get("set-cookie") ?? "";
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/SameSite=Strict/);
    expect(cookie).not.toMatch(/Secure/);
    expect(cookie).not.toContain(TOKEN);
    const session = cookie.split(";")[0] ?? "";
    const page = await harness.anonymous("/sessions", { headers: { cookie: session } }, REMOTE);
    expect(page.status).toBe(200);
  });

  it("marks the cookie Secure behind an https reverse proxy, and never redirects off-site", async () => {
    harness = await openDashboard({ host: "0.0.0.0", token: TOKEN });
    const response = await harness.anonymous(
      "/login",
      form({ token: TOKEN, next: "//evil.example/" }, { "x-forwarded-proto": "https" }),
      REMOTE,
    );
    expect(response.headers.get("set-cookie")).toMatch(/Secure/);
    expect(response.headers.get("location")).toBe("/");
    for (const next of ["/\\evil.example/", "/\t/evil.example/", "https://evil.example/"]) {
      const login = await harness.anonymous("/login", form({ token: TOKEN, next }), REMOTE);
      expect(login.headers.get("location"), next).toBe("/");
    }
    const kept = await harness.anonymous(
      "/login",
      form({ token: TOKEN, next: "/jobs?state=failed#top" }),
      REMOTE,
    );
    expect(kept.headers.get("location")).toBe("/jobs?state=failed#top");
  });

  it("never renders the token, and CSRF tokens differ from it", async () => {
    harness = await openDashboard({ host: "0.0.0.0", token: TOKEN });
    for (const path of ["/", "/jobs", "/sessions", "/login"]) {
      const html = await (await harness.request(path, {}, REMOTE)).text();
      expect(html, path).not.toContain(TOKEN);
    }
    expect(await csrfTokenOf(harness)).not.toBe(TOKEN);
  });
});

describe("a generated token", () => {
  it("is written to history/http-token (0600), announced once without the token, and read again on the next start", () => {
    const ws = makeWorkspace();
    try {
      const announced: string[] = [];
      const options = {
        token: undefined,
        historyPath: join(ws.dir, "history"),
        announce: (text: string) => announced.push(text),
      };
      const first = resolveAccess(options);
      const file = join(ws.dir, "history", "http-token");
      expect(first.token).toMatch(/^[\w-]{32}$/);
      expect(readFileSync(file, "utf8").trim()).toBe(first.token);
      expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(announced).toHaveLength(1);
      expect(announced[0]).not.toContain(first.token);
      expect(announced[0]).toContain(`kept it in ${file} (mode 0600`);
      expect(announced[0]).toContain("run picklebot dashboard in a terminal");
      expect(announced[0]).toContain(`cat ${file}`);
      expect(resolveAccess(options).token).toBe(first.token);
      expect(announced).toHaveLength(1);
    } finally {
      ws.remove();
    }
  });

  it("refuses a token file too short to be a token, naming the file and the fix", () => {
    const ws = makeWorkspace({ "history/http-token": "short\n" });
    try {
      expect(() =>
        resolveAccess({
          token: undefined,
          historyPath: join(ws.dir, "history"),
          announce: () => {},
        }),
      ).toThrow(/history\/http-token holds no usable token.*delete it.*http\.token/);
    } finally {
      ws.remove();
    }
  });
});

describe("CSRF and read-only", () => {
  it("refuses a POST without the CSRF token, or with a wrong one", async () => {
    harness = await openDashboard();
    const job = await harness.job("failed");
    const none = await harness.request(`/jobs/${job.id}/retry`, form({}));
    expect(none.status).toBe(403);
    expect(await none.text()).toContain("CSRF");
    const wrong = await harness.request(`/jobs/${job.id}/retry`, form({ _csrf: "x" }));
    expect(wrong.status).toBe(403);
    expect((await harness.storage.queue.get(job.id))?.state).toBe("failed");
  });

  it("takes the token as the _csrf field or the x-csrf-token header (htmx)", async () => {
    harness = await openDashboard();
    const csrf = await csrfTokenOf(harness);
    const first = await harness.job("failed");
    const second = await harness.job("failed");
    expect((await harness.request(`/jobs/${first.id}/retry`, form({ _csrf: csrf }))).status).toBe(
      303,
    );
    const viaHeader = await harness.request(`/jobs/${second.id}/retry`, {
      method: "POST",
      headers: { "x-csrf-token": csrf },
    });
    expect(viaHeader.status).toBe(303);
    expect((await harness.storage.queue.get(second.id))?.state).toBe("queued");
  });

  it("read_only hides every action and refuses every POST", async () => {
    harness = await openDashboard({ readOnly: true });
    const job = await harness.job("failed");
    const page = await (await harness.request(`/jobs/${job.id}`)).text();
    expect(page).toContain("read-only");
    expect(page).not.toContain('<form method="post"');
    expect(page).not.toContain(">Retry<");
    const sessions = await (await harness.request("/sessions")).text();
    expect(sessions).not.toContain("Start chat");
    const csrf = await csrfTokenOf(harness);
    const response = await harness.request(`/jobs/${job.id}/retry`, form({ _csrf: csrf }));
    expect(response.status).toBe(403);
    expect(await response.text()).toContain("http.read_only");
    expect((await harness.storage.queue.get(job.id))?.state).toBe("failed");
  });
});
