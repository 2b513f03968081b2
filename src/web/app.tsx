/**
 * The dashboard: the overview at `/`, every section at `/<path>`, inside one layout.
 * Every POST must carry the CSRF token (form field `_csrf` or header `x-csrf-token`; the
 * layout sets the header for htmx) and be at most the upload limit (413 past it, before
 * the body is read further); in read-only mode every POST is refused and sections render
 * no action. Access (the token) is checked before, by the HTTP endpoint.
 */
import { Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import { jsxRenderer } from "hono/jsx-renderer";
import { digest, type HttpAccess, sameSecret } from "../http/access.js";
import { CSRF_FIELD, type DashboardEnv, type DashboardSection } from "../http/env.js";
import { Layout } from "../http/layout.js";
import { MAX_UPLOAD_BYTES, UPLOAD_TOO_LARGE } from "./session-files.js";

/** Refuses a POST body over the web chat's upload limit (a form's fields count too). */
const uploadLimit = bodyLimit({
  maxSize: MAX_UPLOAD_BYTES,
  onError: (c) => c.text(UPLOAD_TOO_LARGE, 413),
});

/** What the dashboard is made of. */
export interface DashboardOptions {
  /** Served at `/`: the overview. */
  home: Hono<DashboardEnv>;
  /** Nav order; each is mounted at `/<path>`. */
  sections: DashboardSection[];
  access: HttpAccess;
  /** `http.read_only`. */
  readOnly: boolean;
}

/** The dashboard's routes, to mount at `/`. */
export function dashboardApp(options: DashboardOptions): Hono<DashboardEnv> {
  const csrfToken = digest(options.access.token, "csrf");
  const nav = [
    { path: "/", label: "Overview" },
    ...options.sections.map(({ path, label }) => ({ path: `/${path}`, label })),
  ];
  const app = new Hono<DashboardEnv>();
  app.use(async (c, next) => {
    c.set("csrfToken", csrfToken);
    c.set("readOnly", options.readOnly);
    if (c.req.method !== "POST") return next();
    if (options.readOnly) {
      return c.text("403 forbidden: the dashboard is read-only (http.read_only: true)\n", 403);
    }
    return uploadLimit(c, next);
  });
  app.use(async (c, next) => {
    if (c.req.method !== "POST" || sameSecret(await sentCsrfToken(c.req), csrfToken)) {
      return next();
    }
    return c.text(
      "403 forbidden: missing or wrong CSRF token; reload the page and try again\n",
      403,
    );
  });
  app.use(
    jsxRenderer(({ children, title }) => (
      <Layout title={title} nav={nav}>
        {children}
      </Layout>
    )),
  );
  for (const section of options.sections) app.route(`/${section.path}`, section.app);
  app.route("/", options.home);
  return app;
}

async function sentCsrfToken(request: {
  header(name: string): string | undefined;
  parseBody(): Promise<Record<string, unknown>>;
}): Promise<string> {
  const header = request.header("x-csrf-token");
  if (header !== undefined) return header;
  const type = request.header("content-type") ?? "";
  if (!type.includes("form")) return "";
  const field = (await request.parseBody())[CSRF_FIELD];
  return typeof field === "string" ? field : "";
}
