/**
 * The contract between the dashboard's frame (layout, access, CSRF) and its sections
 * (overview, jobs, sessions, crons, agents, pairing, approvals, usage). A section is a
 * Hono sub-app mounted at `/<path>`; it renders with `c.render(body, { title })` inside
 * the frame's layout, and reads the request's access from the context variables.
 */
import type { Hono } from "hono";

/** Form field (and `x-csrf-token` header) that carries the CSRF token of a POST action. */
export const CSRF_FIELD = "_csrf";

/** What the frame's middleware sets on every dashboard request. */
export interface DashboardEnv {
  Variables: {
    /** The token a POST form must send back in {@link CSRF_FIELD}. */
    csrfToken: string;
    /** `http.read_only`: sections render no action (no form, no button). */
    readOnly: boolean;
  };
}

/** One nav entry of the dashboard and its routes. */
export interface DashboardSection {
  /** URL path segment (`jobs` is served at `/jobs`); also the nav entry's key. */
  path: string;
  /** Nav label. */
  label: string;
  app: Hono<DashboardEnv>;
}

declare module "hono" {
  interface ContextRenderer {
    // biome-ignore lint/style/useShorthandFunctionType: augmentation merges into Hono's interface
    (content: string | Promise<string>, props: { title: string }): Response | Promise<Response>;
  }
}
