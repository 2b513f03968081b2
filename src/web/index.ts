/**
 * The dashboard as the server composes it: the overview, the jobs and sessions sections,
 * then any other section the composition passes (crons, agents, pairing, approvals, usage).
 */
import type { Hono } from "hono";
import type { HttpAccess } from "../http/access.js";
import type { DashboardEnv, DashboardSection } from "../http/env.js";
import { dashboardApp } from "./app.js";
import { type JobsSource, jobsRoutes } from "./jobs.js";
import { type OverviewSource, overviewRoutes } from "./overview.js";
import { type SessionsSource, sessionsRoutes } from "./sessions.js";

export type { DashboardEnv, DashboardSection } from "../http/env.js";

/** Everything the dashboard reads and acts on. */
export interface DashboardParts {
  access: HttpAccess;
  /** `http.read_only`. */
  readOnly: boolean;
  overview: OverviewSource;
  jobs: JobsSource;
  sessions: SessionsSource;
  /** Sections after Jobs and Sessions, in nav order. (Default: none) */
  more?: DashboardSection[];
}

/** The dashboard app, to hand to the HTTP endpoint. */
export function composeDashboard(parts: DashboardParts): Hono<DashboardEnv> {
  return dashboardApp({
    access: parts.access,
    readOnly: parts.readOnly,
    home: overviewRoutes(parts.overview),
    sections: [
      { path: "jobs", label: "Jobs", app: jobsRoutes(parts.jobs) },
      { path: "sessions", label: "Sessions", app: sessionsRoutes(parts.sessions) },
      ...(parts.more ?? []),
    ],
  });
}
