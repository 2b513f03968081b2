/**
 * `picklebot server`: runs the supervisor until SIGINT/SIGTERM.
 *
 * First signal: stop taking work, let running jobs finish (within job_timeout_s), exit 0.
 * Second signal: exit at once; jobs still running are requeued at the next start.
 * Database or lock file deleted or replaced (SQLite mode): exit 1 at once with the
 * reason, without waiting for running jobs (they could only write into the lost file).
 */
import { Command, InvalidArgumentError } from "commander";
import { modelProviders } from "../agents/providers/index.js";
import type { LoadedSkills } from "../agents/skills.js";
import { unpricedModels, unpricedWarning } from "../agents/unpriced.js";
import { CHAT_PLATFORM_KINDS } from "../base/chat-address.js";
import { createLogger, type Logger } from "../base/log.js";
import { releaseYoungGeneration } from "../base/young-generation.js";
import {
  type Config,
  enabledPlatforms,
  type ModelEntry,
  modelEntry,
  modelEntryNames,
  modelEntrySection,
  secretValues,
} from "../config/index.js";
import { clientToken, localBaseUrl, loginLink } from "../http/token-file.js";
import type { PicklebotServer } from "../server/server.js";
import { type LoadedWorkspace, loadWorkspace } from "./context.js";
import { describeCronsNow } from "./cron.js";
import { formatTime } from "./output.js";

/** The `server` command. */
export function serverCommand(): Command {
  return new Command("server")
    .description("run the agent server (workers, crons, chat buses, /healthz and /metrics)")
    .option(
      "-c, --agent-concurrency <n>",
      "jobs run at once (overrides workers.agent_concurrency)",
      positiveInteger,
    )
    .option("--json", "log JSON lines even on a terminal (they are JSON whenever it is not one)")
    .action(async (options: { agentConcurrency?: number; json?: boolean }, command: Command) => {
      const loaded = loadWorkspace(command);
      if (options.agentConcurrency)
        loaded.config.workers.agent_concurrency = options.agentConcurrency;
      const secrets = secretValues(loaded.config);
      const logger = createLogger(options.json ? { pretty: false, secrets } : { secrets });
      for (const { message, ...about } of loaded.loadWarnings) logger.warn(about, message);
      for (const unpriced of unpricedModels(loaded.config, loaded.agents)) {
        logger.warn(
          { model: unpriced.model, agents: unpriced.agentIds },
          unpricedWarning(unpriced),
        );
      }
      // Loaded here, not at the top: the other commands need none of the server's libraries.
      const { PicklebotServer } = await import("../server/server.js");
      const server = await PicklebotServer.start({ ...loaded, logger });
      releaseYoungGenerationOnceConnected(server);
      await printSummary(loaded, server, logger);
      printLoginLink(loaded, server);
      const lost = await Promise.race([untilSignalled(logger).then(() => null), server.lost]);
      if (lost) {
        // Not server.stop(): its drain would let running jobs write on into the deleted
        // file. The process ends once main() has printed the error (exit code 1).
        setTimeout(() => process.exit(), 0);
        throw lost;
      }
      await server.stop();
      exitIfStuck(logger);
      logger.info("picklebot server stopped");
    });
}

/**
 * The longest the young generation stays held for chat platforms that have not connected
 * yet: one that cannot (a refused token, Discord down) retries for as long as it takes.
 */
const CONNECT_HOLD_LIMIT_MS = 30_000;
/** How often the chat platforms' connections are looked at while the hold lasts. */
const CONNECT_CHECK_MS = 100;

/**
 * Lets V8's young generation grow again once the start is over: when every chat platform
 * has connected (logging in and the first gateway and polling calls are part of starting),
 * or after {@link CONNECT_HOLD_LIMIT_MS} at the latest (docs/decisions/young-generation-at-start.md).
 */
function releaseYoungGenerationOnceConnected(server: PicklebotServer): void {
  const deadline = Date.now() + CONNECT_HOLD_LIMIT_MS;
  const check = (): void => {
    if (server.chatConnected() || Date.now() >= deadline) releaseYoungGeneration();
    else setTimeout(check, CONNECT_CHECK_MS).unref();
  };
  check();
}

/** How long a stopped server may take to let go of its last connections. */
const EXIT_GRACE_MS = 2000;

/**
 * Everything is stopped and stored: the process should end now, and does by itself when
 * every connection is closed. If a library still holds one open, exit anyway after
 * {@link EXIT_GRACE_MS}, saying what was left open, with the exit code set so far.
 */
function exitIfStuck(logger: Logger): void {
  setTimeout(() => {
    const open = (process as unknown as { _getActiveHandles(): object[] })
      ._getActiveHandles()
      .map((handle) => handle.constructor.name);
    logger.warn({ open }, "connections were still open after the stop; exiting anyway");
    process.exit();
  }, EXIT_GRACE_MS).unref();
}

/** Resolves on the first SIGINT/SIGTERM; a second one exits the process at once. */
function untilSignalled(logger: Logger): Promise<void> {
  return new Promise((resolve) => {
    const onSignal = (signal: NodeJS.Signals) => {
      process.removeListener("SIGINT", onSignal).removeListener("SIGTERM", onSignal);
      process.once("SIGINT", () => forceExit(logger)).once("SIGTERM", () => forceExit(logger));
      logger.info(
        { signal },
        "shutting down: finishing running jobs (press Ctrl+C again to force)",
      );
      resolve();
    };
    process.on("SIGINT", onSignal).on("SIGTERM", onSignal);
  });
}

function forceExit(logger: Logger): never {
  logger.warn("forced exit: running jobs will be requeued at the next start");
  process.exit(130);
}

async function printSummary(loaded: LoadedWorkspace, server: PicklebotServer, logger: Logger) {
  const { workspace, config, agents } = loaded;
  // The cron worker has logged each bad file already.
  const crons = await describeCronsNow(loaded, server.cronState, () => undefined);
  const summary = {
    workspace,
    instance: server.instanceId,
    queue: config.queue.backend,
    history: `${config.history.backend} (${config.history.path})`,
    agents: [...new Set([config.default_agent, ...agents.keys()])].join(", "),
    skills: skillNames(loaded.catalog.skills).join(", ") || "none",
    crons:
      crons.length === 0
        ? "none"
        : crons
            .map(
              (cron) =>
                `${cron.id} (${cron.status}, next ${formatTime(cron.nextRunAt, cron.timezone)})`,
            )
            .join("; "),
    buses:
      enabledPlatforms(config).join(", ") ||
      `none (enable ${CHAT_PLATFORM_KINDS.join(" or ")} in picklebot.yaml)`,
    http: server.httpAddress ? `http://${server.httpAddress} (${httpRoutes(config)})` : "disabled",
  };
  logger.info(summary, "picklebot server started");
  for (const name of modelEntryNames(config)) {
    const { llm } = modelEntry(config, name) as ModelEntry;
    const missingKey = modelProviders[llm.provider].missingKey(llm, modelEntrySection(name));
    if (missingKey) logger.warn(missingKey);
  }
}

/**
 * On a terminal, the link that logs the owner's browser in to the dashboard. It holds the
 * access token, so nowhere else (journald and `docker compose logs` keep stderr):
 * `picklebot dashboard` prints it later, in a terminal.
 */
function printLoginLink({ config }: LoadedWorkspace, server: PicklebotServer): void {
  if (process.stderr.isTTY !== true || !server.httpAddress || !config.http.dashboard) return;
  const token = clientToken(config.http.token, config.history.path);
  if (token === null) return;
  const link = loginLink(localBaseUrl(server.httpAddress), token);
  process.stderr.write(`Dashboard (this link logs you in; it holds the access token): ${link}\n`);
}

/** The workspace's skills, then each agent's own as `<agent>/<skill>`. */
function skillNames({ shared, byAgent }: LoadedSkills): string[] {
  const own = [...byAgent].flatMap(([id, skills]) =>
    [...skills.keys()].map((name) => `${id}/${name}`),
  );
  return [...shared.keys(), ...own];
}

function positiveInteger(value: string): number {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 1) {
    throw new InvalidArgumentError("expected a positive whole number, e.g. 4");
  }
  return parsed;
}

/** What the HTTP endpoint serves, for the "started" line. */
function httpRoutes(config: Config): string {
  const access = config.http.read_only ? "dashboard (read-only)" : "dashboard";
  return `${config.http.dashboard ? `${access} /, ` : ""}/healthz, /metrics, /events`;
}
