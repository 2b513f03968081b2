/**
 * The owner's access from this host: where a generated access token is kept, the token a
 * client on this host sends, and the link that logs a browser in. Kept apart from
 * access.ts so a command that only calls the server (`status`) loads no hono.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";

/** File under `history.path` that keeps a generated token (mode 0600). */
export const GENERATED_TOKEN_FILE = "http-token";

/**
 * The token a client on this host sends (`picklebot events`, `picklebot status`):
 * `http.token`, else the one a server generated into history/http-token, else none.
 */
export function clientToken(token: string | undefined, historyPath: string): string | null {
  if (token !== undefined) return token;
  const file = join(historyPath, GENERATED_TOKEN_FILE);
  return existsSync(file) ? readFileSync(file, "utf8").trim() : null;
}

/** Binds to every address, which a client on this host reaches at 127.0.0.1. */
const WILDCARD_HOSTS = new Set(["0.0.0.0", "::", "[::]"]);

/**
 * `http://host:port` of a server that listens on `address` (`host:port`, as it announces
 * itself), for a client on this host: a bind to every address is reached at 127.0.0.1.
 */
export function localBaseUrl(address: string): string {
  const url = new URL(`http://${address}`);
  if (WILDCARD_HOSTS.has(url.hostname)) url.hostname = "127.0.0.1";
  return url.origin;
}

/**
 * The link that logs a browser in to the server at `baseUrl`: the login page reads the
 * token from the fragment, which a browser never sends, so it reaches no request and no
 * server's or proxy's log; the page then drops it from the address bar.
 */
export function loginLink(baseUrl: string, token: string): string {
  return `${baseUrl}/login#token=${encodeURIComponent(token)}`;
}
