/** `picklebot status`: the server, its workers, the queue, sessions and crons at a glance. */
import { Command } from "commander";
import type { Session } from "../ports.js";
import type { CronRow } from "../server/cron/worker.js";
import { runningServer } from "../server/workspace-lock.js";
import { openWorkspace } from "./context.js";
import { describeCronsNow } from "./cron.js";
import { formatTime, printJson } from "./output.js";

/** The `status` command. */
export function statusCommand(): Command {
  return new Command("status")
    .description(
      "show the server, workers, queue depth, recent sessions and crons (works while a server runs)",
    )
    .option("--json", "print JSON for scripts")
    .action(async (options: { json?: boolean }, command: Command) => {
      const context = await openWorkspace(command);
      try {
        const { config, storage, workspace } = context;
        const server = runningServer(config.history.path);
        const status = {
          workspace,
          server: server
            ? { running: true, pid: server.pid, health: await fetchHealth(server.http) }
            : { running: false },
          queue: await storage.queue.counts(),
          sessions: await storage.history.listSessions({ limit: 5 }),
          crons: await describeCronsNow(workspace, config, storage.cronState),
        };
        if (options.json) return printJson(status);
        printStatus(status);
      } finally {
        await context.close();
      }
    });
}

/** The running server's `/healthz` report, or null when it cannot be reached. */
async function fetchHealth(address: string | undefined): Promise<unknown> {
  if (!address) return null;
  try {
    const response = await fetch(`http://${address}/healthz`, {
      signal: AbortSignal.timeout(1000),
    });
    return await response.json();
  } catch {
    return null;
  }
}

interface Status {
  workspace: string;
  server: { running: boolean; pid?: number; health?: unknown };
  queue: Record<string, number>;
  sessions: Session[];
  crons: CronRow[];
}

function printStatus(status: Status): void {
  console.log(`workspace  ${status.workspace}`);
  const { server } = status;
  console.log(
    `server     ${server.running ? `running (pid ${server.pid})` : "not running (start it with picklebot server)"}`,
  );
  const workers = (
    server.health as { workers?: { name: string; state: string; restarts: number }[] } | null
  )?.workers;
  for (const worker of workers ?? []) {
    console.log(`  worker   ${worker.name}: ${worker.state}, ${worker.restarts} restarts`);
  }
  const queue = Object.entries(status.queue).map(([state, count]) => `${count} ${state}`);
  console.log(`queue      ${queue.join(", ")}`);
  console.log(`sessions   ${status.sessions.length === 0 ? "none yet" : "most recent:"}`);
  for (const session of status.sessions) {
    const tokens = session.usage.input + session.usage.output;
    console.log(
      `  ${session.id}  ${formatTime(session.updatedAt)}  ${session.key}  ${session.messageCount} msgs, ${tokens} tokens  ${session.title ?? ""}`,
    );
  }
  console.log(`crons      ${status.crons.length === 0 ? "none" : ""}`);
  for (const cron of status.crons) {
    console.log(
      `  ${cron.id}  ${cron.schedule} (${cron.timezone})  ${cron.status}, next ${formatTime(cron.nextRunAt)}`,
    );
  }
}
