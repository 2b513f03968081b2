/**
 * The one module that imports the MCP SDK's client. It is loaded with `import()` only
 * when a server is configured and first used: the SDK costs tens of megabytes, which a
 * server without MCP never pays. It opens one session to one server and hides the SDK's
 * types behind {@link McpSession}.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { ProcessGroupStdioTransport, type StdioLaunch } from "./stdio-transport.js";

/** A tool as the server lists it. */
export interface McpListedTool {
  name: string;
  description?: string | undefined;
  inputSchema: Record<string, unknown>;
}

/** What a tool call came to: its text, and whether the server flagged it an error. */
export interface McpCallResult {
  text: string;
  isError: boolean;
}

/** Where a session connects: a process to start, or a URL. */
export type McpEndpoint =
  | { kind: "stdio"; launch: StdioLaunch }
  | { kind: "http"; url: string; headers: Record<string, string> };

/** One page of a server's tool list; `nextCursor` asks for the next one. */
export interface McpToolPage {
  tools: McpListedTool[];
  nextCursor?: string | undefined;
}

/** An open connection to one server. */
export interface McpSession {
  /** The page of the tool list after `cursor` (undefined: the first page); fails after `timeoutMs`. */
  listToolsPage(cursor: string | undefined, timeoutMs: number): Promise<McpToolPage>;
  callTool(
    name: string,
    input: Record<string, unknown>,
    options: { timeoutMs: number; signal: AbortSignal },
  ): Promise<McpCallResult>;
  /** Ends the session (kills a stdio server's process group). */
  close(): Promise<void>;
}

/** What a session tells its owner. */
export interface McpSessionEvents {
  /** The connection closed without {@link McpSession.close}: a crash, a dropped link. */
  onClosed(): void;
  /** The server said its tool list changed. */
  onToolsChanged(): void;
}

/** The text of the server's stderr for a failed start, when there is one. */
export class McpStartError extends Error {}

/**
 * Connects to the server (starting it, for stdio) and runs MCP's initialisation.
 *
 * @throws McpStartError with the cause and the end of the server's stderr.
 */
export async function openMcpSession(
  endpoint: McpEndpoint,
  events: McpSessionEvents,
  connectTimeoutMs: number,
): Promise<McpSession> {
  const transport = createTransport(endpoint);
  const client = new Client({ name: "picklebot", version: "1" });
  // A close before the handshake ends is the failed start itself, reported by connect.
  let connected = false;
  let closing = false;
  client.onclose = () => {
    if (connected && !closing) events.onClosed();
  };
  try {
    await client.connect(transport, { timeout: connectTimeoutMs });
  } catch (thrown) {
    closing = true;
    await client.close().catch(() => {});
    const stderr = transport instanceof ProcessGroupStdioTransport ? transport.stderrTail : "";
    const reason = thrown instanceof Error ? thrown.message : String(thrown);
    throw new McpStartError(stderr ? `${reason} (stderr: ${stderr})` : reason, { cause: thrown });
  }
  connected = true;
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => events.onToolsChanged());
  return {
    async listToolsPage(cursor, timeoutMs) {
      const params = cursor === undefined ? {} : { cursor };
      const page = await client.listTools(params, { timeout: timeoutMs });
      return { tools: page.tools, nextCursor: page.nextCursor };
    },
    async callTool(name, input, { timeoutMs, signal }) {
      const result = await client.callTool({ name, arguments: input }, undefined, {
        timeout: timeoutMs,
        signal,
      });
      return { text: resultText(result), isError: result.isError === true };
    },
    async close() {
      closing = true;
      await client.close();
    },
  };
}

function createTransport(endpoint: McpEndpoint): Transport {
  if (endpoint.kind === "stdio") return new ProcessGroupStdioTransport(endpoint.launch);
  return new StreamableHTTPClientTransport(new URL(endpoint.url), {
    requestInit: { headers: endpoint.headers },
  });
}

/** The content of a result as text: text blocks as they are, others described. */
function resultText(result: Record<string, unknown>): string {
  const content = Array.isArray(result.content) ? (result.content as unknown[]) : [];
  const parts = content.map((block) => {
    const typed = block as { type?: string; text?: string; mimeType?: string; uri?: string };
    if (typed.type === "text") return typed.text ?? "";
    if (typed.type === "resource_link") return `[resource ${typed.uri ?? ""}]`;
    return `[${typed.type ?? "unknown"} content${typed.mimeType ? ` (${typed.mimeType})` : ""}]`;
  });
  if (parts.length === 0 && result.structuredContent !== undefined) {
    return JSON.stringify(result.structuredContent);
  }
  return parts.join("\n");
}
