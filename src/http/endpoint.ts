/**
 * The HTTP endpoint (Hono on @hono/node-server): `/healthz`, `/metrics`, the event stream
 * at `/events` when the server has one, and the web dashboard at `/` with its assets.
 * Every request passes the access check first (see access.ts).
 */
import type { AddressInfo } from "node:net";
import { createAdaptorServer, type HttpBindings, type ServerType } from "@hono/node-server";
import { Hono } from "hono";
import { secureHeaders } from "hono/secure-headers";
import type { Registry } from "prom-client";
import { hostPort } from "../base/host.js";
import type { EventFanout } from "../events/fanout.js";
import { type EventRoutesOptions, eventRoutes } from "../events/routes.js";
import type { EventFeed } from "../ports/index.js";
import { type HttpAccess, hasToken, requireAccess } from "./access.js";
import { assetRoutes } from "./assets.js";
import type { DashboardEnv } from "./env.js";
import { loginRoutes } from "./login.js";

/**
 * What `/healthz` reports: 200 when `healthy`, 503 otherwise. A caller without the token
 * gets only `{healthy}`.
 */
export interface HealthReport {
  healthy: boolean;
  [detail: string]: unknown;
}

/** What the HTTP endpoint serves. */
export interface HttpEndpointOptions {
  host: string;
  /** 0 picks a free port. */
  port: number;
  health: () => Promise<HealthReport>;
  registry: Registry;
  /** Who may call (see `resolveAccess`). */
  access: HttpAccess;
  /** The dashboard (`dashboardApp`), or null when `http.dashboard` is false. (Default: none) */
  dashboard?: Hono<DashboardEnv> | null;
  /** The event stream served at `GET /events`. (Default: none, 404) */
  events?: EventFeed;
  /** How `/events` is served, and who hears of its clients and drops (see eventRoutes). */
  eventStream?: EventRoutesOptions;
  /** Hears of a request that failed (the response says only that it did). (Default: none) */
  onError?: (error: Error) => void;
}

/**
 * Headers on every answer: no page may frame the dashboard (a click on Allow or Cancel
 * can't be stolen), and its pages run only picklebot's own scripts and styles, without
 * eval or inline code (see dashboard/layout.tsx). HSTS is left to a TLS proxy.
 */
const SECURITY_HEADERS = secureHeaders({
  strictTransportSecurity: false,
  xFrameOptions: "DENY",
  contentSecurityPolicy: {
    defaultSrc: ["'none'"],
    scriptSrc: ["'self'"],
    styleSrc: ["'self'"],
    imgSrc: ["'self'", "data:"],
    connectSrc: ["'self'"],
    formAction: ["'self'"],
    frameAncestors: ["'none'"],
    baseUri: ["'none'"],
  },
});

/**
 * The endpoint's routes, without a socket (tests call `app.request()`), with `events`
 * (see eventRoutes) mounted when given.
 */
export function httpApp(
  options: Omit<HttpEndpointOptions, "host" | "port" | "events" | "eventStream">,
  events?: Hono<{ Bindings: HttpBindings }>,
): Hono {
  const { access } = options;
  const app = new Hono();
  app.use(SECURITY_HEADERS);
  app.use(requireAccess(access));
  app.get("/healthz", async (c) => {
    const report = await options.health();
    // The details (instance, workers, broken agents and their errors) are the owner's.
    const shown = hasToken(c, access.token) ? report : { healthy: report.healthy };
    c.header("content-type", "application/json");
    return c.body(`${JSON.stringify(shown)}\n`, report.healthy ? 200 : 503);
  });
  app.get("/metrics", async (c) => {
    const { registry } = options;
    c.header("content-type", registry.contentType);
    return c.body(await registry.metrics());
  });
  if (events) app.route("/", events);
  if (options.dashboard) {
    app.route("/assets", assetRoutes());
    app.route("/", loginRoutes(access));
    app.route("/", options.dashboard);
  }
  app.notFound((c) =>
    c.text(`not found: try ${options.dashboard ? "/, " : ""}/healthz, /metrics or /events\n`, 404),
  );
  // The error's text may name a database URL or a path: it goes to the log, not the page.
  app.onError((error, c) => {
    options.onError?.(error);
    return c.text("500 internal error; the server log says why\n", 500);
  });
  return app;
}

/** Serves {@link httpApp} on `host:port`. */
export class HttpEndpoint {
  readonly #options: HttpEndpointOptions;
  readonly #server: ServerType;
  readonly #fanout: EventFanout | null;

  constructor(options: HttpEndpointOptions) {
    this.#options = options;
    const events = options.events ? eventRoutes(options.events, options.eventStream) : null;
    this.#fanout = events?.fanout ?? null;
    this.#server = createAdaptorServer({ fetch: httpApp(options, events?.app).fetch });
  }

  /** Starts listening; resolves with the address (`host:port`, `[::1]:port` for IPv6). */
  async listen(): Promise<string> {
    const { host, port } = this.#options;
    await new Promise<void>((resolve, reject) => {
      this.#server.once("error", reject);
      this.#server.listen(port, host, () => resolve());
    });
    const address = this.#server.address() as AddressInfo;
    return hostPort(address.address, address.port);
  }

  /** Stops listening and closes open connections (event streams included). */
  async close(): Promise<void> {
    if ("closeAllConnections" in this.#server) this.#server.closeAllConnections();
    await Promise.all([
      new Promise<void>((resolve) => this.#server.close(() => resolve())),
      this.#fanout?.close(),
    ]);
  }
}
