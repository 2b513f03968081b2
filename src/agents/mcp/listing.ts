/**
 * Listing one server's tools with limits, so that a server that misbehaves costs a bounded
 * amount of time and memory and never breaks the turns of its agents: at most
 * {@link LISTING_LIMITS}.maxPages pages and maxTools tools, all within timeoutMs, and each
 * model-facing name once (the Messages API refuses a request with two tools of one name).
 */
import { toError } from "../../base/errors.js";
import { mcpToolName } from "./names.js";
import type { McpListedTool, McpSession } from "./sdk-session.js";

/** How much of a tool list picklebot reads before it gives up on the server. */
export interface ListingLimits {
  /** Pages (`nextCursor` followed) of one listing. */
  maxPages: number;
  /** Tools of one listing, over all its pages. */
  maxTools: number;
  /** Milliseconds one listing may take, all its pages together. */
  timeoutMs: number;
}

/** The limits of every listing (docs/guides/mcp.md, "How picklebot runs them"). */
export const LISTING_LIMITS: ListingLimits = { maxPages: 20, maxTools: 1000, timeoutMs: 30_000 };

/** A listing: the tools, each name once, and what was wrong with it, for the owner. */
export interface Listing {
  tools: McpListedTool[];
  /** One sentence per problem that did not stop the listing (a duplicate name). */
  warnings: string[];
}

/**
 * Lists every page of `server`'s tools within `limits`.
 *
 * @throws Error saying which limit the server broke, or why listing failed.
 */
export async function listServerTools(
  session: McpSession,
  server: string,
  limits: ListingLimits,
): Promise<Listing> {
  const started = performance.now();
  const remainingMs = () => limits.timeoutMs - (performance.now() - started);
  const tools: McpListedTool[] = [];
  let cursor: string | undefined;
  for (let page = 1; ; page += 1) {
    const listed = await session
      .listToolsPage(cursor, Math.max(1, remainingMs()))
      .catch((thrown) => {
        const timedOut = remainingMs() <= 0 || /timed out/i.test(toError(thrown).message);
        if (!timedOut) throw thrown;
        throw new Error(`did not list its tools within ${limits.timeoutMs / 1000} s`, {
          cause: toError(thrown),
        });
      });
    tools.push(...listed.tools);
    if (tools.length > limits.maxTools) {
      throw new Error(`lists more than ${limits.maxTools} tools, the most picklebot takes`);
    }
    cursor = listed.nextCursor;
    if (cursor === undefined) return withoutDuplicates(server, tools);
    if (page === limits.maxPages) {
      throw new Error(
        `lists its tools over more than ${limits.maxPages} pages (its nextCursor never ends)`,
      );
    }
  }
}

/** The tools with each model-facing name once (the first kept), and a warning per name. */
function withoutDuplicates(server: string, listed: readonly McpListedTool[]): Listing {
  const kept = new Map<string, McpListedTool>();
  const repeated = new Map<string, number>();
  for (const tool of listed) {
    const name = mcpToolName(server, tool.name);
    if (!kept.has(name)) kept.set(name, tool);
    else repeated.set(tool.name, (repeated.get(tool.name) ?? 1) + 1);
  }
  const warnings = [...repeated].map(
    ([tool, times]) =>
      `MCP server "${server}" lists the tool "${tool}" ${times} times; picklebot offers the ` +
      "first and ignores the others (the model API refuses two tools of one name)",
  );
  return { tools: [...kept.values()], warnings };
}
