import { z } from "zod";
import { mediaBlockText } from "../../base/content.js";
import { ToolError } from "../../base/errors.js";
import {
  type ContentBlock,
  type HistoryStore,
  type RecallScope,
  type RecallStore,
  SEARCH_LIMIT_MAX,
  type SearchHit,
  type SessionMemory,
  type StoredMessage,
  type Tool,
} from "../../ports/index.js";
import { defineTool } from "./define-tool.js";

/** What `session_search` and `session_read` of one turn read. */
export interface RecallToolOptions {
  recall: RecallStore;
  history: Pick<HistoryStore, "messages">;
  /** Whose conversations they may read (see `agents/memory/conversation.ts`). */
  scope: RecallScope;
  /** How a time (epoch ms) is shown: its date in picklebot.yaml's `timezone`. */
  formatDate: (at: number) => string;
}

/** Messages one `session_read` shows. */
const READ_MESSAGES = 10;

/** Characters of one message `session_read` shows; the rest is cut. */
const READ_MESSAGE_CHARS = 1500;

const searchInput = z.object({
  query: z
    .string()
    .trim()
    .min(1)
    .describe(
      "Words to look for, such as: garden tomatoes. Messages with more of them come first.",
    ),
  limit: z
    .int()
    .min(1)
    .max(SEARCH_LIMIT_MAX)
    .optional()
    .describe(`Messages to return, 1 to ${SEARCH_LIMIT_MAX}. (Default: 5)`),
});

const readInput = z.object({
  session_id: z.string().trim().min(1).describe("The session, as session_search named it."),
  message: z
    .int()
    .min(1)
    .optional()
    .describe("The message number to read around, as session_search named it. (Default: 1)"),
});

/**
 * `session_search {query, limit?}`: full-text search over this agent's earlier
 * conversations with the person being answered (in a group chat: the group's).
 */
export function createSessionSearchTool(options: RecallToolOptions): Tool {
  return defineTool({
    name: "session_search",
    description:
      "Search your earlier conversations with this person (in a group: with this group) for " +
      'what was said, such as "what did we say about the garden last month?". Returns the ' +
      "best matching messages with their session and date; read more with session_read.",
    input: searchInput,
    run: async ({ query, limit }) => {
      const hits = await options.recall.search({
        scope: options.scope,
        text: query,
        ...(limit === undefined ? {} : { limit }),
      });
      if (hits.length === 0) return `No earlier message holds the words of "${query}".`;
      const lines = hits.map((hit, i) => `${i + 1}. ${describeHit(hit, options.formatDate)}`);
      return [
        `${hits.length} message${hits.length === 1 ? "" : "s"} found, best first ([brackets] mark the words):`,
        ...lines,
        "Read more of one with session_read {session_id, message}.",
      ].join("\n");
    },
  });
}

/**
 * `session_read {session_id, message?}`: a few messages of one earlier conversation that
 * `session_search` may read, from just before `message`.
 */
export function createSessionReadTool(options: RecallToolOptions): Tool {
  return defineTool({
    name: "session_read",
    description:
      `Read ${READ_MESSAGES} messages of an earlier conversation that session_search found, ` +
      "from just before the given message; ask again with a higher message number for more.",
    input: readInput,
    run: async ({ session_id: sessionId, message = 1 }) => {
      const record = await options.recall.session(sessionId);
      if (!record || !inScope(record, options.scope)) {
        throw new ToolError(
          `session_read: there is no session "${sessionId}" among your conversations with this person; use an id session_search gave`,
        );
      }
      const stored = await options.history.messages(sessionId);
      const from = Math.max(1, message - 2);
      const shown = stored
        .map((stored, index) => ({ stored, seq: index + 1 }))
        .slice(from - 1, from - 1 + READ_MESSAGES);
      if (shown.length === 0) {
        return `Session ${sessionId} has ${stored.length} messages; ask for one of 1 to ${stored.length}.`;
      }
      const last = (shown.at(-1) as { seq: number }).seq;
      const more =
        last < stored.length
          ? `\n(${stored.length - last} more after this; read from message ${last + 1})`
          : "";
      const header = `Session ${sessionId} (${record.sessionKey}), messages ${from} to ${last} of ${stored.length}:`;
      return `${header}\n${shown.map(({ stored, seq }) => describeMessage(stored, seq, options.formatDate)).join("\n")}${more}`;
    },
  });
}

/** Whether a session is among the conversations `scope` reads. */
function inScope(record: SessionMemory, scope: RecallScope): boolean {
  if (record.agentId !== scope.agentId) return false;
  return "persons" in scope
    ? record.person !== null && scope.persons.includes(record.person)
    : record.sessionKey === scope.sessionKey;
}

function describeHit(hit: SearchHit, formatDate: (at: number) => string): string {
  const who = hit.role === "user" ? "they said" : "you said";
  const date = formatDate(hit.at);
  return `session ${hit.sessionId}, message ${hit.seq}, ${date}, ${who}: ${oneLine(hit.snippet)}`;
}

function describeMessage(
  message: StoredMessage,
  seq: number,
  formatDate: (at: number) => string,
): string {
  const who = message.role === "user" ? "They" : "You";
  const text = message.content
    .map(blockText)
    .filter((part) => part !== "")
    .join(" ");
  const cut = text.length > READ_MESSAGE_CHARS ? `${text.slice(0, READ_MESSAGE_CHARS - 1)}…` : text;
  return `#${seq} ${who} (${formatDate(message.at)}): ${cut || "(nothing said)"}`;
}

/** What a stored block reads as: words as they were, tool calls by name, outputs left out. */
function blockText(block: ContentBlock): string {
  switch (block.type) {
    case "text":
      return block.text;
    case "image":
    case "document":
      return mediaBlockText(block);
    case "tool_use":
    case "server_tool_use":
      return `(used ${block.name})`;
    case "compaction":
      return "(earlier messages were summarised here)";
    case "tool_result":
    case "server_tool_result":
    case "prune":
    case "job_end":
    case "memory_save":
      return "";
    default:
      return block satisfies never;
  }
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}
