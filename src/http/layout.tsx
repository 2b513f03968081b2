/** The frame every dashboard page renders in: head, nav, the live script, CSRF for htmx. */
import type { Child } from "hono/jsx";
import { useRequestContext } from "hono/jsx-renderer";
import { ASSET_VERSION } from "./assets.js";
import type { DashboardEnv } from "./env.js";

/** A nav entry. */
export interface NavEntry {
  path: string;
  label: string;
}

/**
 * htmx without eval (`hx-on`, `js:` values) and without the style tag it would inject:
 * the pages' Content-Security-Policy allows neither.
 */
const HTMX_CONFIG = JSON.stringify({ allowEval: false, includeIndicatorStyles: false });

/** The page around a section's body; `nav` lists the overview and every section. */
export function Layout(props: { title: string; nav: NavEntry[]; children?: Child }) {
  const c = useRequestContext<DashboardEnv>();
  const here = c.req.path;
  const csrf = JSON.stringify({ "x-csrf-token": c.get("csrfToken") });
  return (
    <html lang="en">
      <PageHead title={props.title}>
        <meta name="htmx-config" content={HTMX_CONFIG} />
        <script src={`/assets/htmx.min.js?v=${ASSET_VERSION}`} defer />
        <script src={`/assets/dashboard.js?v=${ASSET_VERSION}`} defer />
      </PageHead>
      <body hx-headers={csrf}>
        <header>
          <a class="brand" href="/">
            picklebot
          </a>
          <nav>
            {props.nav.map((entry) => (
              <a href={entry.path} aria-current={isCurrent(here, entry.path) ? "page" : undefined}>
                {entry.label}
              </a>
            ))}
          </nav>
          {c.get("readOnly") ? <span class="badge">read-only</span> : null}
        </header>
        <main>
          <h1>{props.title}</h1>
          {props.children}
        </main>
      </body>
    </html>
  );
}

/** The `<head>` of every dashboard page (the login page too): viewport, schemes, stylesheet. */
export function PageHead(props: { title: string; children?: Child }) {
  return (
    <head>
      <meta charset="utf-8" />
      <meta name="viewport" content="width=device-width, initial-scale=1" />
      <meta name="color-scheme" content="light dark" />
      <title>{`${props.title} · picklebot`}</title>
      <link rel="stylesheet" href={`/assets/dashboard.css?v=${ASSET_VERSION}`} />
      {props.children}
    </head>
  );
}

function isCurrent(here: string, path: string): boolean {
  return path === "/" ? here === "/" : here === path || here.startsWith(`${path}/`);
}

/**
 * A note at the top of a page: what an action did (`role=status`), or, with `error`, why
 * it was refused (`role=alert`); `back` adds a link. Nothing when `text` is undefined.
 */
export function Notice(props: { text: string | undefined; error?: boolean; back?: string }) {
  if (!props.text) return null;
  return (
    <p class={props.error ? "notice error" : "notice"} role={props.error ? "alert" : "status"}>
      {props.text}
      {props.back ? (
        <>
          {" "}
          <a href={props.back}>Back</a>
        </>
      ) : null}
    </p>
  );
}
