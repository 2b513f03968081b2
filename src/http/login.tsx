/**
 * `/login`: the form that trades the access token for a session cookie (HttpOnly,
 * SameSite=Strict, Secure when the request came over https, directly or through a
 * reverse proxy's `x-forwarded-proto`), and `/logout`, which clears it. A login link
 * (`/login#token=…`) fills in and submits the form by itself (static/login.ts).
 */
import { type Context, Hono } from "hono";
import { deleteCookie, setCookie } from "hono/cookie";
import { type HttpAccess, SESSION_COOKIE, sameSecret, sessionValue } from "./access.js";
import { ASSET_VERSION } from "./assets.js";
import { Notice, PageHead } from "./layout.js";

/** How long the session cookie lasts. */
const SESSION_MAX_AGE_S = 30 * 24 * 3600;

/** The login and logout routes. */
export function loginRoutes(access: HttpAccess): Hono {
  const app = new Hono();
  app.get("/login", (c) => c.html(<LoginPage next={safeNext(c.req.query("next"))} />));
  app.post("/login", async (c) => {
    const form = await c.req.parseBody();
    const next = safeNext(typeof form.next === "string" ? form.next : undefined);
    const given = typeof form.token === "string" ? form.token.trim() : "";
    if (!sameSecret(given, access.token)) {
      return c.html(<LoginPage next={next} error="That is not the token. Try again." />, 401);
    }
    setCookie(c, SESSION_COOKIE, sessionValue(access.token), {
      httpOnly: true,
      sameSite: "Strict",
      secure: overHttps(c),
      path: "/",
      maxAge: SESSION_MAX_AGE_S,
    });
    return c.redirect(next, 303);
  });
  app.post("/logout", (c) => {
    deleteCookie(c, SESSION_COOKIE, { path: "/" });
    return c.redirect("/login", 303);
  });
  return app;
}

/**
 * Only a path on this server (no open redirect): `//host`, `/\host`, `https://…` and
 * anything a browser would resolve to another origin become `/`.
 */
function safeNext(next: string | undefined): string {
  if (!next?.startsWith("/")) return "/";
  const base = "http://picklebot.invalid";
  const resolved = new URL(next, base);
  return resolved.origin === base ? `${resolved.pathname}${resolved.search}${resolved.hash}` : "/";
}

function overHttps(c: Context): boolean {
  const forwarded = c.req.header("x-forwarded-proto")?.split(",")[0]?.trim();
  return forwarded === "https" || new URL(c.req.url).protocol === "https:";
}

function LoginPage(props: { next: string; error?: string }) {
  return (
    <html lang="en">
      <PageHead title="Log in">
        <script src={`/assets/login.js?v=${ASSET_VERSION}`} defer />
      </PageHead>
      <body>
        <main class="login card">
          <h1>picklebot</h1>
          <p class="muted">
            The dashboard needs its access token: http.token, or the one picklebot keeps in
            history/http-token. On the server's host, picklebot dashboard prints a link that logs
            you in.
          </p>
          <Notice error text={props.error} />
          <form id="login" method="post" action="/login">
            <input type="hidden" name="next" value={props.next} />
            <label>
              Token
              <input type="password" name="token" autocomplete="current-password" required />
            </label>
            <p>
              <button type="submit" class="primary">
                Log in
              </button>
            </p>
          </form>
        </main>
      </body>
    </html>
  );
}
