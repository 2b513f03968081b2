/**
 * Who may use the HTTP endpoint. On a loopback bind (the default, 127.0.0.1) without
 * `http.token` everything is open to the host's own users, under a loopback name only (a
 * web page that rebinds its own name to 127.0.0.1 gets 403). With a token, or on any other
 * bind, every request needs the access token:
 * as `Authorization: Bearer <token>`, or as the session cookie the `/login` form sets
 * (which holds a digest of the token, never the token), loopback clients included: a
 * reverse proxy on this host is one, and so is anything the agent runs. `/metrics` (agent
 * names, costs) is no exception. `/healthz` answers everyone, but only a caller with the
 * token gets the detailed report (see {@link mayReadDetails}); the others get `healthy`.
 */
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { isIP } from "node:net";
import { join } from "node:path";
import type { Context, MiddlewareHandler } from "hono";
import { getCookie } from "hono/cookie";
import { UserError } from "../base/errors.js";
import { bareHostname } from "../base/host.js";
import { GENERATED_TOKEN_FILE } from "./token-file.js";

/** Name of the cookie the login form sets. */
export const SESSION_COOKIE = "picklebot_session";

export { clientToken, GENERATED_TOKEN_FILE } from "./token-file.js";

/** Paths open without a token, to every client (`/healthz` says only `healthy` then). */
const OPEN_PATHS = ["/login", "/assets/"];
const SUMMARY_PATHS = new Set(["/healthz"]);

/** How the endpoint checks requests; made once at start by {@link resolveAccess}. */
export interface HttpAccess {
  /** The token every request needs; null on a loopback bind (no token needed). */
  token: string | null;
  /** Signs CSRF tokens: derived from `token`, or random per process on a loopback bind. */
  secret: string;
}

/** Options of {@link resolveAccess}. */
export interface AccessOptions {
  /** `http.host`. */
  host: string;
  /** `http.token`, when set. */
  token: string | undefined;
  /** `history.path`: where a generated token is kept. */
  historyPath: string;
  /** Tells the owner a token was generated, once. */
  announce: (text: string) => void;
  /**
   * Whether `announce` writes to a terminal, which keeps nothing: only then does the
   * notice hold the token. Otherwise (journald, `docker compose logs`, a file) it says
   * where the token is kept and how to read it.
   */
  toTerminal: boolean;
}

/** True for 127.0.0.0/8, ::1, `localhost` and IPv4-mapped loopback addresses. */
export function isLoopback(address: string): boolean {
  const bare = address.replace(/^::ffff:/, "");
  if (bare === "localhost" || bare === "::1") return true;
  return isIP(bare) === 4 && bare.startsWith("127.");
}

/**
 * The access of a bind: `http.token` whenever it is set (so a reverse proxy on this host,
 * a loopback client, needs it too); else open on a loopback bind; else the token kept in
 * history/http-token, or a new one written there (0600) and announced once.
 */
export function resolveAccess(options: AccessOptions): HttpAccess {
  if (options.token !== undefined) return { token: options.token, secret: options.token };
  if (isLoopback(options.host)) return openAccess();
  const token = storedToken(options);
  return { token, secret: token };
}

/** No token needed (a loopback bind); CSRF tokens signed with a per-process secret. */
export function openAccess(): HttpAccess {
  return { token: null, secret: randomToken() };
}

function storedToken({ historyPath, announce, toTerminal }: AccessOptions): string {
  const file = join(historyPath, GENERATED_TOKEN_FILE);
  if (existsSync(file)) {
    const token = readFileSync(file, "utf8").trim();
    if (token.length >= 16) return token;
    throw new UserError(
      `${file} holds no usable token (fewer than 16 characters); delete it to get a new one, or set http.token in picklebot.yaml`,
    );
  }
  const token = randomToken();
  mkdirSync(historyPath, { recursive: true });
  writeFileSync(file, `${token}\n`, { mode: 0o600 });
  const why = "picklebot: http.host is not a loopback address and http.token is not set;";
  announce(
    toTerminal
      ? `${why} generated an access token (kept in ${file}, shown only now):\n  ${token}\n`
      : `${why} generated an access token and kept it in ${file} (mode 0600, readable only by its owner); it is not shown because this output is not a terminal. To read it, as the user picklebot runs as: cat ${file}\n`,
  );
  return token;
}

function randomToken(): string {
  return randomBytes(24).toString("base64url");
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

/** The remote address of the request's socket (`@hono/node-server` puts it in the env). */
export function clientAddress(c: Context): string {
  const env = c.env as { incoming?: { socket?: { remoteAddress?: string } } } | undefined;
  return env?.incoming?.socket?.remoteAddress ?? "";
}

/** True when the request carries the token (bearer header or session cookie). */
export function hasToken(c: Context, token: string): boolean {
  const bearer = c.req.header("authorization")?.match(/^Bearer\s+(.+)$/i)?.[1];
  if (bearer !== undefined) return sameSecret(bearer.trim(), token);
  const cookie = getCookie(c, SESSION_COOKIE);
  return cookie !== undefined && sameSecret(cookie, sessionValue(token));
}

/**
 * True when the request may read what only the owner may (the detailed `/healthz`): no
 * token is needed (a loopback bind without one), or the request carries it.
 */
export function mayReadDetails(c: Context, access: HttpAccess): boolean {
  return access.token === null || hasToken(c, access.token);
}

/**
 * True when `url` names this host by a loopback name (`127.0.0.1`, `[::1]`, `localhost`,
 * `*.localhost`). A page from elsewhere that rebinds its own DNS name to 127.0.0.1 still
 * sends that name, so a tokenless endpoint refuses it.
 */
function addressedAsLoopback(url: URL): boolean {
  const name = bareHostname(url);
  return isLoopback(name) || name.endsWith(".localhost");
}

/**
 * Lets a request through when it may pass; otherwise a page asks for the login form (a
 * browser's GET is redirected there) and anything else gets 401. Without a token, a
 * request addressed by a name other than a loopback one gets 403.
 */
export function requireAccess(access: HttpAccess): MiddlewareHandler {
  return async (c, next) => {
    const { token } = access;
    const path = c.req.path;
    if (token === null) {
      const url = new URL(c.req.url);
      if (addressedAsLoopback(url)) return next();
      return c.text(
        `403 forbidden: without http.token this server answers only to 127.0.0.1, [::1] or localhost, not to ${url.host}; open it by one of those names (an SSH tunnel keeps them), or set http.token in picklebot.yaml\n`,
        403,
      );
    }
    if (OPEN_PATHS.some((open) => path.startsWith(open))) return next();
    if (SUMMARY_PATHS.has(path)) return next();
    if (hasToken(c, token)) return next();
    const wantsPage =
      c.req.method === "GET" && (c.req.header("accept") ?? "").includes("text/html");
    if (wantsPage) return c.redirect(`/login?next=${encodeURIComponent(path)}`, 303);
    c.header("www-authenticate", 'Bearer realm="picklebot"');
    return c.text(
      "401 unauthorized: send the token from http.token as Authorization: Bearer <token>, or log in at /login\n",
      401,
    );
  };
}
