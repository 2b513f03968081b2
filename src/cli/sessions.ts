/** `picklebot sessions`: stored conversations, their size, and compacting one by hand. */
import { Command } from "commander";
import { describeCompaction } from "../agents/compaction.js";
import { formatContextUsage } from "../agents/context-budget.js";
import { UserError } from "../base/errors.js";
import type { Session } from "../ports/index.js";
import { openWorkspace, runnerFor, type WorkspaceContext } from "./context.js";
import { formatTime, parseLimit, printJson, printLine, printTable } from "./output.js";

/** The `sessions` command group. */
export function sessionsCommand(): Command {
  const sessions = new Command("sessions")
    .description(
      "list stored conversations (newest first) with their size; see also: sessions compact",
    )
    .option("--limit <n>", "at most this many sessions (default: 20)", parseLimit)
    .option("--json", "print JSON for scripts")
    .action(async (options: { limit?: number; json?: boolean }, command: Command) => {
      const context = await openWorkspace(command);
      try {
        const runner = runnerFor(context);
        const list = await context.storage.history.listSessions({ limit: options.limit ?? 20 });
        const rows = await Promise.all(
          list.map(async (session) => ({
            ...session,
            context: await runner.contextUsage(session.agentId, session.id),
          })),
        );
        if (options.json) return printJson(rows);
        if (rows.length === 0) return void printLine("no sessions yet");
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
