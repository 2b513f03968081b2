import { z } from "zod";
import { assertNever } from "../../base/assert-never.js";
import { ToolError } from "../../base/errors.js";
import type { Config } from "../../config/index.js";
import type { Tool } from "../../ports/index.js";
import { defineTool } from "./define-tool.js";
import {
  createBraveBackend,
  createSearxngBackend,
  type SearchBackend,
  type SearchResult,
} from "./search-backends.js";
import { wrapUntrusted } from "./web-fetch.js";

/** Options of {@link createWebSearchTool}. */
export interface WebSearchToolOptions {
  /**
   * The engine searched, or why there is none: a sentence the model gets back (no
   * backend configured; the backend is the model API's own, which this provider lacks).
   */
  backend: SearchBackend | { unavailable: string };
  /** Searches one turn may run (`tools.web_search.max_per_turn`). (Default: 5) */
  maxPerTurn?: number;
}

/** Results a search returns when the call names no count. */
export const DEFAULT_SEARCH_COUNT = 5;

/** Most results one search returns. */
export const MAX_SEARCH_COUNT = 20;

/** Characters of a query the engines accept (Brave's limit, the strictest). */
const MAX_QUERY_CHARS = 400;

const webSearchInput = z.object({
  query: z.string().trim().min(1).max(MAX_QUERY_CHARS).describe("What to search the web for."),
  count: z
    .int()
    .min(1)
    .max(MAX_SEARCH_COUNT)
    .optional()
    .describe(`Results wanted, 1 to ${MAX_SEARCH_COUNT}. (Default: ${DEFAULT_SEARCH_COUNT})`),
});

/**
 * `web_search {query, count?}`: searches the web with the configured engine and returns
 * each hit's title, URL, snippet and date, marked as untrusted web content; the agent
 * reads a page with `web_fetch`. The tool is built per turn, so its count of searches is
 * the turn's: past `maxPerTurn` a call is refused with a message to the model.
 */
export function createWebSearchTool(options: WebSearchToolOptions): Tool {
  const maxPerTurn = options.maxPerTurn ?? 5;
  let searches = 0;
  return defineTool({
    name: "web_search",
    description:
      "Search the web. Returns the title, URL, snippet and date of each result; read a " +
      "page with web_fetch.",
    input: webSearchInput,
    async run({ query, count }, context) {
      const { backend } = options;
      if ("unavailable" in backend) throw new ToolError(`web_search: ${backend.unavailable}`);
      if (searches >= maxPerTurn) {
        throw new ToolError(
          `web_search: this turn already ran ${maxPerTurn} searches, the limit ` +
            "(tools.web_search.max_per_turn); answer with what they found",
        );
      }
      searches += 1;
      const results = await backend.search(query, count ?? DEFAULT_SEARCH_COUNT, context.signal);
      return wrapUntrusted(`web search: ${query}`, formatResults(results, backend.label));
    },
  });
}

/** The results as numbered entries: title, URL, date, snippet. */
function formatResults(results: readonly SearchResult[], label: string): string {
  if (results.length === 0) return `${label} found nothing.`;
  return results
    .map((result, index) => {
      const lines = [`${index + 1}. ${result.title || "(no title)"}`, `   ${result.url}`];
      if (result.date) lines.push(`   date: ${result.date}`);
      if (result.snippet) lines.push(`   ${result.snippet}`);
      return lines.join("\n");
    })
    .join("\n\n");
}

/** picklebot.yaml `tools.web_search`. */
export type WebSearchSettings = Config["tools"]["web_search"];

/** The guide's section on `web_search`, named by the error when no backend is set. */
const WEB_SEARCH_GUIDE = "docs/guides/tools-and-skills.md";

/** The backend of a workspace that configured none. */
export const NO_SEARCH_BACKEND: WebSearchToolOptions["backend"] = {
  unavailable:
    "no search backend is configured; the owner sets tools.web_search.backend in " +
    `picklebot.yaml (anthropic, searxng or brave, see ${WEB_SEARCH_GUIDE})`,
};

/**
 * The engine `web_search` asks, from picklebot.yaml; for `anthropic`, the model API runs
 * the search itself (the runner sends its server tool instead of this one), so a call
 * that reaches here is on a provider without it.
 */
export function searchBackendOf(
  settings: WebSearchSettings,
  fetchSearch?: typeof fetch,
): WebSearchToolOptions["backend"] {
  const http = {
    timeoutMs: settings.timeout_s * 1000,
    ...(fetchSearch ? { fetch: fetchSearch } : {}),
  };
  switch (settings.backend) {
    case undefined:
      return NO_SEARCH_BACKEND;
    case "searxng":
      return settings.base_url === undefined
        ? { unavailable: "tools.web_search.base_url is not set" }
        : createSearxngBackend(settings.base_url, http);
    case "brave":
      return settings.api_key === undefined
        ? { unavailable: "tools.web_search.api_key is not set" }
        : createBraveBackend(settings.api_key, {
            ...http,
            ...(settings.base_url === undefined ? {} : { baseUrl: settings.base_url }),
          });
    case "anthropic":
      return {
        unavailable:
          "tools.web_search.backend is anthropic, which only an Anthropic model can use; " +
          "the owner sets it to searxng or brave for this model",
      };
    default:
      return assertNever(settings.backend, "web search backend");
  }
}
