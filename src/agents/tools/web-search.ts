import { z } from "zod";
import { assertNever } from "../../base/assert-never.js";
import { ToolError } from "../../base/errors.js";
import type { Config } from "../../config/index.js";
import type { ServerToolSpec, Tool } from "../../ports/index.js";
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

/** How a turn searches the web: a tool picklebot runs, or the model API's own. */
export interface TurnSearch {
  /** The `web_search` tool of the turn, when picklebot runs it. */
  tool: WebSearchToolOptions | null;
  /** The model API's search, offered in each request instead of the tool. */
  serverTools: ServerToolSpec[];
}

/** What decides a turn's search besides picklebot.yaml. */
export interface TurnSearchContext {
  /** The agent's model is on Anthropic (`llm.provider`), whose API can search itself. */
  anthropicModel: boolean;
  /** What the approval policy says of a `web_search` call for this agent. */
  policy: "allow" | "ask" | "deny";
}

/**
 * How a turn searches, from picklebot.yaml `tools.web_search`. With `backend: anthropic`,
 * an Anthropic model and a policy that allows searching, the API runs the searches (its
 * server tool, `max_per_turn` uses per call); a policy of `ask` or `deny` keeps the tool,
 * so the approval gate asks or refuses as for any tool, and the tool then says why it
 * cannot search (docs/decisions/anthropic-search-and-approvals.md).
 */
export function turnSearchOf(
  settings: WebSearchSettings,
  context: TurnSearchContext,
  fetchSearch?: typeof fetch,
): TurnSearch {
  const { backend, max_per_turn: maxPerTurn } = settings;
  if (backend !== "anthropic") {
    const engine = engineOf(backend, settings, fetchSearch);
    return { tool: { backend: engine, maxPerTurn }, serverTools: [] };
  }
  if (context.anthropicModel && context.policy === "allow") {
    return { tool: null, serverTools: [{ kind: "web_search", maxUses: maxPerTurn }] };
  }
  const unavailable = context.anthropicModel
    ? "tools.web_search.backend is anthropic, where the model API runs each search without " +
      "waiting for an approval, so an approvals policy of ask cannot apply; the owner " +
      "allows web_search or picks searxng or brave"
    : "tools.web_search.backend is anthropic, which only an Anthropic model can use; the " +
      "owner sets it to searxng or brave for this model";
  return { tool: { backend: { unavailable }, maxPerTurn }, serverTools: [] };
}

/** The engine of a backend picklebot asks over HTTP. */
function engineOf(
  backend: "searxng" | "brave" | undefined,
  settings: WebSearchSettings,
  fetchSearch?: typeof fetch,
): WebSearchToolOptions["backend"] {
  const http = {
    timeoutMs: settings.timeout_s * 1000,
    ...(fetchSearch ? { fetch: fetchSearch } : {}),
  };
  switch (backend) {
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
    default:
      return assertNever(backend, "web search backend");
  }
}
