/**
 * A dashboard section mounted in a tiny app, as the frame mounts it: the middleware sets
 * `csrfToken` and `readOnly`, refuses a POST without the token (as the frame does), and a
 * bare `jsxRenderer` layout shows the title. `submit` posts a form found in a rendered
 * page, with its hidden fields and text areas, so a test presses the buttons the page
 * really shows.
 */
import { Hono } from "hono";
import { jsxRenderer } from "hono/jsx-renderer";
import { CSRF_FIELD, type DashboardEnv, type DashboardSection } from "../../src/http/env.js";

/** The CSRF token of the test app. */
export const TEST_CSRF_TOKEN = "test-csrf-token";

/** A page as the browser got it. */
export interface RenderedPage {
  status: number;
  html: string;
  /** `location` of a redirect, else null. */
  location: string | null;
}

/** The section behind the test app, and requests to it. */
export interface SectionClient {
  app: Hono<DashboardEnv>;
  get(path: string): Promise<RenderedPage>;
  /** A POST of `fields` (the CSRF token added unless `fields` sets it). */
  post(path: string, fields?: Record<string, string>): Promise<RenderedPage>;
  /**
   * Submits the form of `page` whose action is `action`, with its hidden fields and the
   * `fill`ed ones, pressing the button labelled `button` (its name/value sent when it has
   * one); throws when the page has no such form or button, or `fill` names no field of it.
   */
  submit(page: RenderedPage, action: string, options?: SubmitOptions): Promise<RenderedPage>;
}

/** What {@link SectionClient.submit} types and presses. */
export interface SubmitOptions {
  button?: string;
  fill?: Record<string, string>;
}

/** Mounts `section` at `/<path>`, as the frame does. (Default: not read-only) */
export function mountSection(
  section: DashboardSection,
  options: { readOnly?: boolean } = {},
): SectionClient {
  return mountSections([section], options);
}

/** Mounts every section at its `/<path>`, with a nav of them all, as the frame does. */
export function mountSections(
  sections: DashboardSection[],
  options: { readOnly?: boolean } = {},
): SectionClient {
  const app = new Hono<DashboardEnv>();
  app.use("*", async (c, next) => {
    c.set("csrfToken", TEST_CSRF_TOKEN);
    c.set("readOnly", options.readOnly === true);
    if (c.req.method === "POST") {
      const token = (await c.req.parseBody())[CSRF_FIELD];
      if (token !== TEST_CSRF_TOKEN) return c.text("bad CSRF token", 403);
    }
    return next();
  });
  app.use(
    "*",
    jsxRenderer(({ children, title }) => (
      <html lang="en">
        <head>
          <title>{title}</title>
        </head>
        <body>
          <nav>
            {sections.map((section) => (
              <a href={`/${section.path}`}>{section.label}</a>
            ))}
          </nav>
          <h1>{title}</h1>
          <main>{children}</main>
        </body>
      </html>
    )),
  );
  for (const section of sections) app.route(`/${section.path}`, section.app);
  const send = async (path: string, init?: RequestInit): Promise<RenderedPage> => {
    const response = await app.request(path, init);
    return {
      status: response.status,
      html: await response.text(),
      location: response.headers.get("location"),
    };
  };
  const post = (path: string, fields: Record<string, string> = {}) =>
    send(path, {
      method: "POST",
      body: new URLSearchParams({ [CSRF_FIELD]: TEST_CSRF_TOKEN, ...fields }),
    });
  return {
    app,
    get: (path) => send(path),
    post,
    submit(page, action, { button, fill = {} } = {}) {
      const form = formsOf(page.html).find((candidate) => candidate.action === action);
      if (!form)
        throw new Error(`no form posting to ${action} on the page:
${page.html}`);
      const unknown = Object.keys(fill).filter((name) => !(name in form.fields));
      if (unknown.length > 0)
        throw new Error(`the form of ${action} has no field ${unknown.join(", ")}`);
      const pressed =
        button === undefined ? undefined : form.buttons.find((b) => b.label === button);
      if (button !== undefined && !pressed)
        throw new Error(`no button "${button}" in the form of ${action}`);
      const fields = {
        ...form.fields,
        ...fill,
        ...(pressed?.name ? { [pressed.name]: pressed.value } : {}),
      };
      return send(action, { method: "POST", body: new URLSearchParams(fields) });
    },
  };
}

/** Text of the page without tags and with entities of hono/jsx decoded, spaces collapsed. */
export function textOf(html: string): string {
  return decode(html.replace(/<[^>]*>/g, " "))
    .replace(/\s+/g, " ")
    .trim();
}

interface FoundForm {
  action: string;
  fields: Record<string, string>;
  buttons: { label: string; name: string | undefined; value: string }[];
}

/** The forms of the markup hono/jsx renders (attributes in double quotes). */
function formsOf(html: string): FoundForm[] {
  return [...html.matchAll(/<form([^>]*)>([\s\S]*?)<\/form>/g)].map(
    ([, attributes = "", body = ""]) => ({
      action: attribute(attributes, "action") ?? "",
      fields: Object.fromEntries([
        ...[...body.matchAll(/<input([^>]*)>/g)].map(([, input = ""]) => [
          attribute(input, "name") ?? "",
          attribute(input, "value") ?? "",
        ]),
        ...[...body.matchAll(/<textarea([^>]*)>([\s\S]*?)<\/textarea>/g)].map(
          ([, textarea = "", text = ""]) => [attribute(textarea, "name") ?? "", decode(text)],
        ),
      ]),
      buttons: [...body.matchAll(/<button([^>]*)>([\s\S]*?)<\/button>/g)].map(
        ([, button = "", label = ""]) => ({
          label: textOf(label),
          name: attribute(button, "name"),
          value: attribute(button, "value") ?? "",
        }),
      ),
    }),
  );
}

function attribute(attributes: string, name: string): string | undefined {
  const match = new RegExp(`\\s${name}="([^"]*)"`).exec(attributes);
  return match?.[1] === undefined ? undefined : decode(match[1]);
}

function decode(text: string): string {
  return text
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&amp;/g, "&");
}
