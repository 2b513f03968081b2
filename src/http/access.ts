/**
 * Who may use the HTTP endpoint: whoever holds the access token, on every bind, loopback
 * included. Anything on this host is a loopback client, the agent's children too (a
 * sandboxed MCP server keeps the host's network), so a loopback bind is no proof of being
 * the owner. The token is `http.token`, or one the server generates at its first start and
 * keeps in history/http-token (0600), which the sandbox hides (docs/operations/security.md,
 * "What a local process, an MCP server and the agent can reach"). A request carries it as
 * `Authorization: Bearer <token>`, or as the session cookie the `/login` form sets (a
 * digest of the token, never the token). Open to every client: `/login`, its assets, and
 * `/healthz`, which tells a caller without the token only whether the server is healthy.
 */
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Context, MiddlewareHandler } from "hono";
import { getCookie } from "hono/cookie";
import { UserError } from "../base/errors.js";
import { GENERATED_TOKEN_FILE } from "./token-file.js";

/** Name of the cookie the login form sets. */
export const SESSION_COOKIE = "picklebot_session";

export { clientToken, GENERATED_TOKEN_FILE } from "./token-file.js";

/** Paths open without a token, to every client (`/healthz` says only `healthy` then). */
const OPEN_PATHS = ["/login", "/assets/"];
const SUMMARY_PATHS = new Set(["/healthz"]);

/** How the endpoint checks requests; made once at start by {@link resolveAccess}. */
export interface HttpAccess {
  /** The token every request needs; it also keys the session cookie and CSRF tokens. */
  token: string;
}

/** Options of {@link resolveAccess}. */
export interface AccessOptions {
  /** `http.token`, when set. */
  token: string | undefined;
  /** `history.path`: where a generated token is kept. */
  historyPath: string;
  /**
   * Tells the owner, once, that a token was generated and where it is kept: a line for
   * the log, which never holds the token (journald and `docker compose logs` keep it).
   */
  announce: (text: string) => void;
}

/**
 * The access of the endpoint: `http.token` whenever it is set; else the token kept in
 * history/http-token, or a new one written there (0600) and announced once.
 */
export function resolveAccess(options: AccessOptions): HttpAccess {
  return { token: options.token ?? storedToken(options) };
}

function storedToken({ historyPath, announce }: AccessOptions): string {
  const file = join(historyPath, GENERATED_TOKEN_FILE);
  if (existsSync(file)) {
    const token = readFileSync(file, "utf8").trim();
    if (token.length >= 16) return token;
    throw new UserError(
      `${file} holds no usable token (fewer than 16 characters); delete it to get a new one, or set http.token in picklebot.yaml`,
    );
  }
  const token = randomBytes(24).toString("base64url");
  mkdirSync(historyPath, { recursive: true });
  writeFileSync(file, `${token}\n`, { mode: 0o600 });
  announce(
    `http.token is not set: generated the dashboard's access token and kept it in ${file} (mode 0600, readable only by the user picklebot runs as); to log in, run picklebot dashboard in a terminal as that user, which prints a link that holds the token (or read it with: cat ${file})`,
  );
  return token;
}

/** Equal strings, compared in constant time (for equal lengths). */
export function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** A keyed digest: what the session cookie and CSRF tokens hold instead of the secret. */
export function digest(secret: string, purpose: string): string {
  return createHmac("sha256", secret).update(purpose).digest("base64url");
}

/** The session cookie's value for `token`. */
export function sessionValue(token: string): string {
  return digest(token, "dashboard-session");
}

/** True when the request carries the token (bearer header or session cookie). */
export function hasToken(c: Context, token: string): boolean {
  const bearer = c.req.header("authorization")?.match(/^Bearer\s+(.+)$/i)?.[1];
  if (bearer !== undefined) return sameSecret(bearer.trim(), token);
  const cookie = getCookie(c, SESSION_COOKIE);
  return cookie !== undefined && sameSecret(cookie, sessionValue(token));
}

/**
 * Lets a request through when it carries the token or its path is open; otherwise a
 * browser's GET of a page is sent to the login form and anything else gets 401.
 */
export function requireAccess(access: HttpAccess): MiddlewareHandler {
  return async (c, next) => {
    const path = c.req.path;
    if (OPEN_PATHS.some((open) => path.startsWith(open))) return next();
    if (SUMMARY_PATHS.has(path)) return next();
    if (hasToken(c, access.token)) return next();
    const wantsPage =
      c.req.method === "GET" && (c.req.header("accept") ?? "").includes("text/html");
    if (wantsPage) return c.redirect(`/login?next=${encodeURIComponent(path)}`, 303);
    c.header("www-authenticate", 'Bearer realm="picklebot"');
    return c.text(
      "401 unauthorized: send the access token (http.token, or the one in history/http-token) as Authorization: Bearer <token>, or log in at /login\n",
      401,
    );
  };
}
