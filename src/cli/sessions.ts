/** `picklebot sessions`: stored conversations, their size, and compacting one by hand. */
import { Command } from "commander";
import { describeCompaction } from "../agents/compaction.js";
import { formatContextUsage } from "../agents/context-budget.js";
import { resolveAgent } from "../agents/definition.js";
import { readTranscript } from "../agents/transcript.js";
import { UserError } from "../base/errors.js";
import type { Session } from "../ports/index.js";
import { openWorkspace, runnerFor, type WorkspaceContext } from "./context.js";
import { formatTime, parseLimit, printJson, printLine, printTable } from "./output.js";
import { printTranscript } from "./transcript-print.js";

/** Sessions `list` shows when not told otherwise. */
const DEFAULT_LIST_LIMIT = 20;
/** Sessions looked through when filtering by agent (the store filters by chat only). */
const AGENT_SCAN_LIMIT = 10_000;

/** Options of `sessions` and `sessions list`. */
interface ListOptions {
  limit?: number;
  json?: boolean;
  agent?: string;
  chat?: string;
}

/** The `sessions` command group. */
export function sessionsCommand(): Command {
  const sessions = listOptions(
    new Command("sessions").description(
      "list stored conversations (newest first) with their size; see also: sessions show, sessions compact",
    ),
  ).action(listSessions);
  listOptions(
    sessions
      .command("list")
      .description("list stored conversations (newest first), optionally of one agent or chat"),
  ).action(listSessions);
  sessions
    .command("show")
    .description(
      "print a whole conversation: messages, tool calls with shortened results, compaction summaries, times and tokens",
    )
    .argument("<id>", "session id (see picklebot sessions list)")
    .option("--json", "print the transcript as JSON")
    .action(async (id: string, _options: unknown, command: Command) => {
      const { json } = command.optsWithGlobals<{ json?: boolean }>();
      const context = await openWorkspace(command);
      try {
        const transcript = await readTranscript(context.storage, id);
        if (!transcript) {
          throw new UserError(`no session "${id}"; list them with picklebot sessions list`);
        }
        if (json) return printJson(transcript);
        printTranscript(transcript);
      } finally {
        await context.close();
      }
    });
  sessions
    .command("compact")
    .description(
      "summarise a conversation now, so its next requests start from the summary (raw messages stay stored)",
    )
    .argument("<id>", "session id (see picklebot sessions)")
    .option("--json", "print the result as JSON")
    .action(async (id: string, _options: unknown, command: Command) => {
      const { json } = command.optsWithGlobals<{ json?: boolean }>();
      const context = await openWorkspace(command);
      try {
        const session = await context.storage.history.getSession(id);
        if (!session) throw new UserError(`no session "${id}"; list them with picklebot sessions`);
        await refuseWhileRunning(context, session);
        const signal = AbortSignal.timeout(context.config.llm.timeout_s * 1000);
        const result = await runnerFor(context).compact(
          { agentId: session.agentId, sessionId: id, signal },
          { force: true },
        );
        if (json) return printJson(result);
        if (!result) return void printLine(`session ${id} has nothing to compact yet`);
        printLine(`compacted session ${id}: ${describeCompaction(result)}`);
      } finally {
        await context.close();
      }
    });
  return sessions;
}

function listOptions(command: Command): Command {
  return command
    .option("--agent <id>", "only this agent's sessions")
    .option("--chat <key>", "only this chat's sessions (its session key, e.g. telegram:42)")
    .option(
      "--limit <n>",
      `at most this many sessions (default: ${DEFAULT_LIST_LIMIT})`,
      parseLimit,
    )
    .option("--json", "print JSON for scripts");
}

async function listSessions(_options: unknown, command: Command): Promise<void> {
  // `sessions` and `sessions list` share their options: commander fills the parent's first.
  const options = command.optsWithGlobals<ListOptions>();
  const context = await openWorkspace(command);
  try {
    // A broken agent's sessions are still listed; an unknown id is refused with the known ones.
    if (options.agent && !context.brokenAgents.has(options.agent)) {
      resolveAgent(context.agents, options.agent, context.config.default_agent);
    }
    const limit = options.limit ?? DEFAULT_LIST_LIMIT;
    const found = await context.storage.history.listSessions({
      ...(options.chat ? { key: options.chat } : {}),
      limit: options.agent ? AGENT_SCAN_LIMIT : limit,
    });
    const list = found
      .filter((session) => !options.agent || session.agentId === options.agent)
      .slice(0, limit);
    const runner = runnerFor(context);
    const rows = await Promise.all(
      list.map(async (session) => ({
        ...session,
        context: await runner.contextUsage(session.agentId, session.id),
      })),
    );
    if (options.json) return printJson(rows);
    if (rows.length === 0) return void printLine(noneFound(options));
    printTable(
      ["id", "updated", "agent", "key", "messages", "context", "title"],
      rows.map((row) => [
        row.id,
        formatTime(row.updatedAt),
        row.agentId,
        row.key,
        String(row.messageCount),
        formatContextUsage(row.context),
        row.title ?? "",
      ]),
    );
  } finally {
    await context.close();
  }
}

function noneFound(options: ListOptions): string {
  const of = [
    options.agent ? `agent ${options.agent}` : null,
    options.chat ? `chat ${options.chat}` : null,
  ].filter(Boolean);
  return of.length > 0 ? `no sessions of ${of.join(" in ")}` : "no sessions yet";
}

/**
 * A compaction point written in the middle of a running turn would cut it: refuse while a
 * job of the session's conversation runs.
 */
async function refuseWhileRunning(context: WorkspaceContext, session: Session): Promise<void> {
  const running = await context.storage.queue.list({ state: "running", limit: 1000 });
  if (running.some((job) => job.sessionKey === session.key)) {
    throw new UserError(
      `a reply is running in session ${session.id} (${session.key}); compact it once that reply is done`,
    );
  }
}
