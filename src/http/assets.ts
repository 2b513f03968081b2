/**
 * The dashboard's static files, served by picklebot itself (no CDN): htmx from the
 * htmx.org package, the stylesheet, the live-update script and the login page's script
 * from static/ (TypeScript strings, so `tsc` alone builds them into dist/).
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { Hono } from "hono";
import { packageInfo } from "../base/package-info.js";
import { DASHBOARD_CSS } from "./static/css.js";
import { DASHBOARD_JS } from "./static/live.js";
import { LOGIN_JS } from "./static/login.js";

const require = createRequire(import.meta.url);

/** Changes with every htmx or picklebot release: page links carry it, so caches can keep files long. */
export const ASSET_VERSION = packageInfo().version;

const FILES: Record<string, { type: string; source: () => string }> = {
  "htmx.min.js": {
    type: "text/javascript",
    source: () => readFileSync(require.resolve("htmx.org/dist/htmx.min.js"), "utf8"),
  },
  "dashboard.css": {
    type: "text/css",
    source: () => DASHBOARD_CSS,
  },
  "dashboard.js": {
    type: "text/javascript",
    source: () => DASHBOARD_JS,
  },
  "login.js": {
    type: "text/javascript",
    source: () => LOGIN_JS,
  },
};

/** `GET /assets/<file>`: read once, cached by browsers for a day (links carry the version). */
export function assetRoutes(): Hono {
  const loaded = new Map<string, string>();
  const app = new Hono();
  app.get("/:file", (c) => {
    const name = c.req.param("file");
    const file = FILES[name];
    if (!file) return c.text(`not found: no asset ${name}\n`, 404);
    let body = loaded.get(name);
    if (body === undefined) {
      body = file.source();
      loaded.set(name, body);
    }
    c.header("cache-control", "public, max-age=86400");
    c.header("content-type", `${file.type}; charset=utf-8`);
    return c.body(body);
  });
  return app;
}
