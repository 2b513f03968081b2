import { createServer, type Server as HttpServer } from "node:http";
import type { AddressInfo } from "node:net";
import { getRequestListener } from "@hono/node-server";
import type { Registry } from "prom-client";
import type { EventFeed } from "../ports/index.js";
import { eventRoutes } from "./events/routes.js";

/** What `/healthz` reports: 200 when `healthy`, 503 otherwise. */
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
  /** The event stream served at `GET /events`. (Default: none, 404) */
  events?: EventFeed;
}

/** `GET /healthz`, `GET /metrics` (Prometheus text format) and `GET /events` (SSE). */
export class HttpEndpoint {
  readonly #options: HttpEndpointOptions;
  readonly #server: HttpServer;

  constructor(options: HttpEndpointOptions) {
    this.#options = options;
    const events = options.events ? getRequestListener(eventRoutes(options.events).fetch) : null;
    this.#server = createServer((request, response) => {
      if (events && request.url?.split("?")[0] === "/events") {
        void events(request, response);
        return;
      }
      this.#handle(request.method ?? "GET", request.url ?? "/")
        .then(({ status, type, body }) => {
          response.writeHead(status, { "content-type": type });
          response.end(body);
        })
        .catch((error: unknown) => {
          response.writeHead(500, { "content-type": "text/plain" });
          response.end(String(error));
        });
    });
  }

  /** Starts listening; resolves with the address (`host:port`). */
  async listen(): Promise<string> {
    const { host, port } = this.#options;
    await new Promise<void>((resolve, reject) => {
      this.#server.once("error", reject);
      this.#server.listen(port, host, () => resolve());
    });
    const address = this.#server.address() as AddressInfo;
    return `${address.address}:${address.port}`;
  }

  /** Stops listening and closes open connections. */
  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  async #handle(method: string, url: string) {
    const path = url.split("?")[0];
    if (method !== "GET") return text(405, "method not allowed\n");
    if (path === "/healthz") {
      const report = await this.#options.health();
      return {
        status: report.healthy ? 200 : 503,
        type: "application/json",
        body: `${JSON.stringify(report)}\n`,
      };
    }
    if (path === "/metrics") {
      const { registry } = this.#options;
      return { status: 200, type: registry.contentType, body: await registry.metrics() };
    }
    return text(404, "not found: try /healthz, /metrics or /events\n");
  }
}

function text(status: number, body: string) {
  return { status, type: "text/plain", body };
}
