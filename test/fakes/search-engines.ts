/**
 * Fake search engines on 127.0.0.1 for `web_search`: a SearXNG instance (its JSON API)
 * and the Brave Search API. Each refuses what the real one refuses:
 *
 * - SearXNG answers `GET /search?q=…&format=json` with `{query, number_of_results,
 *   results: [{url, title, content, publishedDate, engine}]}`; with the JSON format not
 *   enabled in its settings.yml (`jsonEnabled: false`) it answers 403 Forbidden with an
 *   HTML page, as SearXNG does; a request without `q` gets 400.
 * - Brave answers `GET /res/v1/web/search?q=…&count=…` with `{type: "search", query,
 *   web: {results: [{title, url, description, age, page_age}]}}`; its refusals carry
 *   Brave's body `{type: "ErrorResponse", error: {id, status, code, detail, meta}}`:
 *   401 SUBSCRIPTION_TOKEN_INVALID for a wrong or missing `X-Subscription-Token`, 422
 *   VALIDATION for an empty or over-400-character `q` or a `count` over 20, 429
 *   RATE_LIMITED or QUOTA_LIMITED when the test sets `refuseWith`.
 *
 * `answer` replaces the normal answer: `html` (a web page where JSON was asked, as an
 * address that is not the API gives), `hang` (never answers) or `down` (drops the
 * connection), for the failures a backend can have.
 */
import { once } from "node:events";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** A hit the fake returns. */
export interface FakeSearchHit {
  title: string;
  url: string;
  snippet: string;
  /** (Default: none) */
  date?: string;
}

/** How a fake answers instead of with results. */
export type FakeSearchFailure = "html" | "hang" | "down";

/** A running fake engine. */
export interface FakeSearchEngine {
  /** Its root URL: SearXNG's base_url, or where Brave's path is served. */
  readonly url: string;
  /** The query strings received, oldest first. */
  readonly queries: URLSearchParams[];
  /** The hits every search returns (capped at the request's count). */
  hits: FakeSearchHit[];
  /** Answers every request this way instead, until set to null. (Default: null) */
  answer: FakeSearchFailure | null;
  close(): Promise<void>;
}

/** Options of {@link startFakeSearxng}. */
export interface FakeSearxngOptions {
  /** Whether settings.yml lists `json` in `search.formats`. (Default: true) */
  jsonEnabled?: boolean;
}

/** Options of {@link startFakeBrave}. */
export interface FakeBraveOptions {
  /** The subscription token accepted. (Default: "brave-test-key") */
  apiKey?: string;
}

/** A running fake Brave Search API; its `url` is the API root (`tools.web_search.base_url`). */
export interface FakeBrave extends FakeSearchEngine {
  /** Refuses every search with this 429 until set to null. (Default: null) */
  refuseWith: "RATE_LIMITED" | "QUOTA_LIMITED" | null;
}

/** Starts a fake SearXNG. */
export async function startFakeSearxng(
  options: FakeSearxngOptions = {},
): Promise<FakeSearchEngine> {
  const jsonEnabled = options.jsonEnabled ?? true;
  return startEngine((params, res, engine) => {
    const query = params.get("q");
    if (!query) return sendHtml(res, 400, "Bad Request");
    if (params.get("format") !== "json") return sendHtml(res, 200, `results for ${query}`);
    if (!jsonEnabled) return sendHtml(res, 403, "Forbidden");
    const results = engine.hits.map((hit) => ({
      url: hit.url,
      title: hit.title,
      content: hit.snippet,
      engine: "fake",
      publishedDate: hit.date ?? null,
    }));
    sendJson(res, 200, { query, number_of_results: results.length, results });
  });
}

/** Starts a fake Brave Search API. */
export async function startFakeBrave(options: FakeBraveOptions = {}): Promise<FakeBrave> {
  const apiKey = options.apiKey ?? "brave-test-key";
  let brave: FakeBrave | undefined;
  const engine = await startEngine((params, res, _engine, req) => {
    if (req.headers["x-subscription-token"] !== apiKey) {
      const detail = "The provided subscription token is invalid.";
      return sendBraveError(res, 401, "SUBSCRIPTION_TOKEN_INVALID", detail);
    }
    const query = params.get("q") ?? "";
    const count = Number(params.get("count") ?? "20");
    if (query === "" || query.length > 400 || !(count >= 1 && count <= 20)) {
      return sendBraveError(res, 422, "VALIDATION", "Unable to validate request parameter(s)");
    }
    if (brave?.refuseWith) {
      const detail =
        brave.refuseWith === "RATE_LIMITED"
          ? "Request rate limit exceeded for plan."
          : "Request quota limit exceeded for plan.";
      return sendBraveError(res, 429, brave.refuseWith, detail);
    }
    const results = (brave?.hits ?? []).slice(0, count).map((hit) => ({
      title: hit.title,
      url: hit.url,
      description: `<strong>${hit.snippet}</strong>`,
      ...(hit.date ? { page_age: hit.date, age: "2 days ago" } : {}),
    }));
    sendJson(res, 200, {
      type: "search",
      query: { original: query },
      web: { type: "search", results },
    });
  }, "/res/v1/web/search");
  brave = Object.assign(engine, { refuseWith: null });
  return brave;
}

type Route = (
  params: URLSearchParams,
  res: ServerResponse,
  engine: FakeSearchEngine,
  req: IncomingMessage,
) => void;

async function startEngine(route: Route, path = "/search"): Promise<FakeSearchEngine> {
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://fake");
    if (req.method !== "GET" || url.pathname !== path) return sendHtml(res, 404, "Not Found");
    engine.queries.push(url.searchParams);
    if (engine.answer === "hang") return;
    if (engine.answer === "down") return void req.socket.destroy();
    if (engine.answer === "html") return sendHtml(res, 200, "Welcome to my blog");
    route(url.searchParams, res, engine, req);
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  const engine: FakeSearchEngine = {
    url: `http://127.0.0.1:${port}`,
    queries: [],
    hits: [],
    answer: null,
    async close() {
      server.closeAllConnections();
      server.close();
      await once(server, "close");
    },
  };
  return engine;
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}

function sendHtml(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, { "content-type": "text/html; charset=utf-8" });
  res.end(
    `<!DOCTYPE html><html><head><title>${text}</title></head><body><p>${text}</p></body></html>`,
  );
}

function sendBraveError(res: ServerResponse, status: number, code: string, detail: string): void {
  const meta =
    code === "QUOTA_LIMITED" || code === "RATE_LIMITED"
      ? { plan: "Free", rate_limit: 1, rate_current: 2, quota_limit: 2000, quota_current: 2000 }
      : { component: code === "VALIDATION" ? "validation" : "authentication" };
  sendJson(res, status, {
    type: "ErrorResponse",
    error: { id: "fake-error-id", status, code, detail, meta },
    time: Math.floor(Date.now() / 1000),
  });
}
