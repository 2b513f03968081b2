/**
 * The search engines `web_search` asks over HTTP: a self-hosted SearXNG (its JSON API)
 * and the Brave Search API. Each turns its answer into {@link SearchResult}s and each of
 * its refusals into a {@link ToolError} that says what to change. The owner configures
 * the address (picklebot.yaml `tools.web_search`), so these requests do not go through
 * web_fetch's address rules: a SearXNG on 127.0.0.1 or the LAN is the usual setup.
 */
import { deadline } from "../../base/deadline.js";
import { ToolError, ToolRetry, toError } from "../../base/errors.js";
import { redactSecrets } from "../../base/redact.js";
import { parseRetryAfter } from "./web-fetch.js";

/** One hit of a search. */
export interface SearchResult {
  title: string;
  url: string;
  snippet: string;
  /** When the page was published or last changed, as the engine says it. (Default: none) */
  date?: string;
}

/** A search engine reached over HTTP. */
export interface SearchBackend {
  /** Its name in messages ("SearXNG at http://…", "Brave Search"). */
  readonly label: string;
  /** Up to `count` results for `query`; throws {@link ToolError} (or {@link ToolRetry}). */
  search(query: string, count: number, signal: AbortSignal): Promise<SearchResult[]>;
}

/** What each backend's requests share. */
export interface SearchHttpOptions {
  /** One request, body included, must finish within this. */
  timeoutMs: number;
  /** (Default: the global fetch) */
  fetch?: typeof fetch;
}

/** Brave Search API's root; web search is at `res/v1/web/search` under it. */
export const BRAVE_API_ROOT = "https://api.search.brave.com";

/** Most results Brave returns for one request (its `count` maximum). */
const BRAVE_MAX_COUNT = 20;

/** A SearXNG instance's JSON API: `GET <base_url>/search?q=…&format=json`. */
export function createSearxngBackend(baseUrl: string, options: SearchHttpOptions): SearchBackend {
  const label = `SearXNG at ${baseUrl}`;
  const root = withSlash(baseUrl);
  return {
    label,
    async search(query, count, signal) {
      const url = new URL("search", root);
      url.search = new URLSearchParams({ q: query, format: "json" }).toString();
      const response = await getJson(
        url,
        {},
        { ...options, label, signal, refusal: searxngRefusal },
      );
      return searxngResults(response, label).slice(0, count);
    },
  };
}

/** The Brave Search API, with the key in `X-Subscription-Token`. */
export function createBraveBackend(
  apiKey: string,
  options: SearchHttpOptions & { baseUrl?: string },
): SearchBackend {
  const label = "Brave Search";
  return {
    label,
    async search(query, count, signal) {
      const url = new URL("res/v1/web/search", withSlash(options.baseUrl ?? BRAVE_API_ROOT));
      url.search = new URLSearchParams({
        q: query,
        count: String(Math.min(count, BRAVE_MAX_COUNT)),
      }).toString();
      const headers = { "X-Subscription-Token": apiKey };
      const response = await getJson(url, headers, {
        ...options,
        label,
        signal,
        refusal: braveRefusal,
        secret: apiKey,
      });
      return braveResults(response, label).slice(0, count);
    },
  };
}

/** What {@link getJson} needs besides the URL. */
interface GetJsonOptions extends SearchHttpOptions {
  label: string;
  signal: AbortSignal;
  /** The error of a non-2xx answer that is not a 5xx. */
  refusal(status: number, body: string, label: string): ToolError;
  /** Left out of every message. (Default: none) */
  secret?: string;
}

/** GETs `url` and parses its JSON; a timeout, a 5xx or an unreachable host is a ToolRetry. */
async function getJson(
  url: URL,
  headers: Record<string, string>,
  options: GetJsonOptions,
): Promise<unknown> {
  const { signal, clear } = deadline(options.signal, options.timeoutMs);
  const fetchJson = options.fetch ?? fetch;
  try {
    const response = await fetchJson(url, {
      headers: { accept: "application/json", ...headers },
      signal,
    });
    const body = await response.text();
    if (response.status >= 500) {
      const retryAfterMs = parseRetryAfter(response.headers.get("retry-after"), Date.now());
      throw new ToolRetry(`${options.label} answered HTTP ${response.status}`, { retryAfterMs });
    }
    if (!response.ok) throw options.refusal(response.status, body, options.label);
    return parseJson(body, response.headers.get("content-type"), options.label);
  } catch (thrown) {
    if (thrown instanceof ToolError) throw thrown;
    if (options.signal.aborted) throw new ToolError("the search was stopped: the job was aborted");
    if (signal.aborted) {
      throw new ToolRetry(`${options.label} did not answer within ${options.timeoutMs / 1000} s`);
    }
    const reason = redactSecrets(innermostMessage(toError(thrown)), [options.secret]);
    throw new ToolRetry(`could not reach ${options.label}: ${reason}`);
  } finally {
    clear();
  }
}

function parseJson(body: string, contentType: string | null, label: string): unknown {
  try {
    return JSON.parse(body);
  } catch {
    const kind = /html/i.test(contentType ?? "") || /^\s*</.test(body) ? "HTML" : "text";
    throw new ToolError(
      `${label} answered with ${kind}, not JSON: tools.web_search.base_url must be the ` +
        "root of a search API (for SearXNG, the instance's root, with the json format enabled)",
    );
  }
}

/** SearXNG's refusals: 403 is its answer when `format=json` is not enabled. */
function searxngRefusal(status: number, _body: string, label: string): ToolError {
  if (status === 403) {
    return new ToolError(
      `${label} refused the JSON format (HTTP 403): enable it in the instance's settings.yml ` +
        "with `search: formats: [html, json]` and restart SearXNG",
    );
  }
  if (status === 429) {
    return new ToolRetry(
      `${label} is limiting requests (HTTP 429); its limiter may need picklebot's address allowed`,
    );
  }
  return new ToolError(`${label} answered HTTP ${status}`);
}

/** Brave's error body: `{type: "ErrorResponse", error: {code, detail, status, meta}}`. */
interface BraveError {
  code?: string;
  detail?: string;
  meta?: { plan?: string; quota_limit?: number; rate_limit?: number };
}

function braveRefusal(status: number, body: string, label: string): ToolError {
  const error = braveErrorOf(body);
  const detail = error.detail ? `: ${error.detail}` : "";
  if (status === 401 || status === 403) {
    return new ToolError(
      `${label} refused the key (HTTP ${status}${detail}); check tools.web_search.api_key ` +
        "(or BRAVE_API_KEY) against https://api-dashboard.search.brave.com",
    );
  }
  if (status === 429 && error.code === "RATE_LIMITED") {
    return new ToolRetry(`${label} is limiting requests (HTTP 429${detail})`, {
      retryAfterMs: 1000,
    });
  }
  if (status === 429) {
    const plan = error.meta?.plan ? ` of the ${error.meta.plan} plan` : "";
    return new ToolError(
      `${label}'s quota${plan} is exhausted (HTTP 429${detail}); searches work again when it ` +
        "renews, or raise the plan at https://api-dashboard.search.brave.com",
    );
  }
  return new ToolError(`${label} refused the search (HTTP ${status}${detail})`);
}

function braveErrorOf(body: string): BraveError {
  try {
    const parsed = JSON.parse(body) as { error?: BraveError };
    return typeof parsed.error === "object" && parsed.error !== null ? parsed.error : {};
  } catch {
    return {};
  }
}

function searxngResults(response: unknown, label: string): SearchResult[] {
  const results = resultList(response, ["results"], label);
  return results.map((hit) => ({
    title: textOf(hit.title),
    url: textOf(hit.url),
    snippet: textOf(hit.content),
    ...dateOf(hit.publishedDate),
  }));
}

function braveResults(response: unknown, label: string): SearchResult[] {
  const web = (response as { web?: unknown } | null)?.web;
  if (web === undefined) return [];
  const results = resultList(web, ["results"], label);
  return results.map((hit) => ({
    title: stripTags(textOf(hit.title)),
    url: textOf(hit.url),
    snippet: stripTags(textOf(hit.description)),
    ...dateOf(hit.page_age ?? hit.age),
  }));
}

/** The array at `path`, each item an object; anything else is an error naming the engine. */
function resultList(
  value: unknown,
  path: readonly string[],
  label: string,
): Array<Record<string, unknown>> {
  let found = value;
  for (const key of path) found = (found as Record<string, unknown> | null)?.[key];
  if (!Array.isArray(found)) {
    throw new ToolError(`${label} answered JSON without a "${path.join(".")}" list`);
  }
  return found.filter(
    (item): item is Record<string, unknown> => typeof item === "object" && item !== null,
  );
}

/** A root URL with its trailing slash, so relative paths resolve under it. */
function withSlash(url: string): string {
  return url.endsWith("/") ? url : `${url}/`;
}

function textOf(value: unknown): string {
  return typeof value === "string" ? value.trim() : "";
}

function dateOf(value: unknown): { date?: string } {
  const text = textOf(value);
  return text === "" ? {} : { date: text };
}

/** Brave marks the query's words with `<strong>`: the model gets plain text. */
function stripTags(text: string): string {
  return text.replace(/<[^>]*>/g, "");
}

function innermostMessage(error: Error): string {
  let innermost: Error = error;
  while (innermost.cause instanceof Error) innermost = innermost.cause;
  return innermost.message.replace(/\.$/, "");
}
