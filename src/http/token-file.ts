/**
 * Where a generated access token is kept, and the token a client on this host sends. Kept
 * apart from access.ts so a command that only calls the server (`status`) loads no hono.
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
