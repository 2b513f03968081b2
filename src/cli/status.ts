/**
 * `picklebot status`: the server, its workers, the queue, sessions and crons at a glance;
 * in PostgreSQL mode the cluster's instances and leader instead of the local server.
 */
import { Command } from "commander";
import { formatContextUsage } from "../agents/context-budget.js";
import { type ControlPlaneWrite, latestControlPlaneWrites } from "../agents/control-plane-log.js";
import { describeBashSandbox } from "../agents/tools/index.js";
import { formatUsd, type Spend, spendNow } from "../agents/usage-report.js";
import { workspacePrices } from "../config/index.js";
import type { CronRow } from "../cron/worker.js";
import { clientToken } from "../http/token-file.js";
import type { OutboxSummary, Session } from "../ports/index.js";
import { type ClusterStatus, describeCluster } from "../storage/cluster-status.js";
import { runningServer } from "../storage/workspace-lock.js";
import { openWorkspace, runnerFor, type WorkspaceContext } from "./context.js";
import { describeCronsNow } from "./cron.js";
import { formatTime, printJson, printLine } from "./output.js";

/** Control-plane writes `status` lists. */
const CONTROL_PLANE_WRITES_SHOWN = 5;

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
            ? {
                running: true,
                pid: server.pid,
                health: await fetchHealth(
                  server.http,
                  clientToken(config.http.token, config.history.path),
                ),
              }
            : { running: false },
          cluster: await describeCluster(storage),
          bash: describeBashSandbox({
            kind: config.tools.bash.sandbox,
            network: config.tools.bash.network,
          }),
          brokenAgents: [...context.brokenAgents].map(([id, error]) => ({
            id,
            error: error.message,
          })),
          queue: await storage.queue.counts(),
          cost: await spendNow(storage.usage, {
            now: Date.now(),
            timezone: config.timezone,
            prices: workspacePrices(config),
          }),
          outbox: await storage.outbox.summary(),
          sessions: await withContextUsage(
            context,
            await storage.history.listSessions({ limit: 5 }),
          ),
          crons: await describeCronsNow(context, storage.cronState),
          controlPlaneWrites: await latestControlPlaneWrites(
            config.history.path,
            CONTROL_PLANE_WRITES_SHOWN,
          ),
        };
        if (options.json) return printJson(status);
        printStatus(status);
      } finally {
        await context.close();
      }
    });
}

/** Each session with its size against its agent's window. */
async function withContextUsage(context: WorkspaceContext, sessions: Session[]) {
  const runner = runnerFor(context);
  return Promise.all(
    sessions.map(async (session) => ({
      ...session,
      context: await runner.contextUsage(session.agentId, session.id),
    })),
  );
}

/**
 * The running server's `/healthz` report (the whole of it: sent with the workspace's
 * token when it has one), or null when it cannot be reached.
 */
async function fetchHealth(address: string | undefined, token: string | null): Promise<unknown> {
  if (!address) return null;
  try {
    const response = await fetch(`http://${address}/healthz`, {
      headers: token === null ? {} : { authorization: `Bearer ${token}` },
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
  cluster: ClusterStatus | null;
  /** The sandbox `bash` runs in (docs/operations/security.md, "What `bash` can reach"). */
  bash: string;
  /** Agents whose AGENT.md is broken: their jobs fail until it is fixed. */
  brokenAgents: Array<{ id: string; error: string }>;
  queue: Record<string, number>;
  /** Model calls' cost at the workspace's prices (`picklebot usage` has the details). */
  cost: Spend;
  outbox: OutboxSummary;
  sessions: Array<Session & { context: { tokens: number; window: number } }>;
  crons: CronRow[];
  controlPlaneWrites: ControlPlaneWrite[];
}

function printStatus(status: Status): void {
  printLine(`workspace  ${status.workspace}`);
  if (status.cluster) printCluster(status.cluster);
  else printServer(status);
  printLine(`bash       ${status.bash}`);
  for (const { id, error } of status.brokenAgents) {
    printLine(`agent      ${id}: BROKEN, its jobs fail until fixed: ${error}`);
  }
  const queue = Object.entries(status.queue).map(([state, count]) => `${count} ${state}`);
  printLine(`queue      ${queue.join(", ")}${status.cluster ? " (whole cluster)" : ""}`);
  printLine(`outbox     ${describeOutbox(status.outbox)}`);
  const { todayUsd, monthUsd } = status.cost;
  printLine(`cost       ${formatUsd(todayUsd)} today, ${formatUsd(monthUsd)} this month`);
  printSessionsAndCrons(status);
  printControlPlaneWrites(status.controlPlaneWrites);
}

/** Writes to agents/, crons/ and skills/ that an approvals policy let through, newest first. */
function printControlPlaneWrites(writes: ControlPlaneWrite[]): void {
  printLine(`control-plane writes  ${writes.length === 0 ? "none" : "most recent:"}`);
  for (const write of writes) {
    const job = write.jobId === undefined ? "" : `  job ${write.jobId}`;
    printLine(
      `  ${formatTime(write.at)}  ${write.agentId}  ${write.tool} ${JSON.stringify(write.path)}${job}`,
    );
  }
}

function printCluster({ instances, leader, now }: ClusterStatus): void {
  printLine(
    `leader     ${leader ? `${leader.holder} (since ${formatTime(leader.acquiredAt)})` : "none (no instance holds the lease)"}`,
  );
  printLine(`instances  ${instances.length === 0 ? "none running" : instances.length}`);
  for (const instance of instances) {
    const age = ((now - instance.heartbeatAt) / 1000).toFixed(1);
    const role = instance.id === leader?.holder ? "  [leader]" : "";
    printLine(
      `  ${instance.id}  ${instance.hostname} pid ${instance.pid}  v${instance.version}  concurrency ${instance.concurrency}  agents ${instance.agents.join(",")}  heartbeat ${age} s ago${role}`,
    );
  }
}

function printServer(status: Status): void {
  const { server } = status;
  printLine(
    `server     ${server.running ? `running (pid ${server.pid})` : "not running (start it with picklebot server)"}`,
  );
  const health = server.health as {
    unhealthy?: string[];
    workers?: { name: string; state: string; restarts: number }[];
    buses?: { platform: string; state: string }[];
  } | null;
  for (const reason of health?.unhealthy ?? []) printLine(`  unhealthy  ${reason}`);
  for (const worker of health?.workers ?? []) {
    printLine(`  worker   ${worker.name}: ${worker.state}, ${worker.restarts} restarts`);
  }
  for (const bus of health?.buses ?? []) printLine(`  bus      ${bus.platform}: ${bus.state}`);
}

function printSessionsAndCrons(status: Status): void {
  printLine(`sessions   ${status.sessions.length === 0 ? "none yet" : "most recent:"}`);
  for (const session of status.sessions) {
    const tokens = session.usage.input + session.usage.output;
    printLine(
      `  ${session.id}  ${formatTime(session.updatedAt)}  ${session.key}  ${session.messageCount} msgs, ${formatContextUsage(session.context)}, ${tokens} tokens used  ${session.title ?? ""}`,
    );
  }
  printLine(`crons      ${status.crons.length === 0 ? "none" : ""}`);
  for (const cron of status.crons) {
    printLine(
      `  ${cron.id}  ${cron.schedule} (${cron.timezone})  ${cron.status}, next ${formatTime(cron.nextRunAt, cron.timezone)}`,
    );
  }
}

/** One line about chat replies not delivered yet; a pile-up says what to look at. */
function describeOutbox(outbox: OutboxSummary): string {
  const line = `${outbox.pending} replies waiting for delivery, ${outbox.failed} refused by the platform`;
  if (outbox.pending === 0 && outbox.failed === 0) return line;
  const oldest =
    outbox.oldestPendingAt === null ? "" : ` (oldest from ${formatTime(outbox.oldestPendingAt)})`;
  return `${line}${oldest}; see the server log for why (an unreachable platform is retried)`;
}
