/**
 * The checks of `picklebot doctor` that look at this host and the workspace's files.
 * Each check is one small function of the {@link DoctorContext}; the list of them, in
 * the order they print, is {@link DOCTOR_CHECKS} in doctor.ts.
 */
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import type { AgentDefinition } from "../agents/definition.js";
import { memoriesOverBudget, memoryLabel } from "../agents/memory/owner.js";
import { unpricedFix } from "../agents/prices.js";
import { createModelProvider } from "../agents/providers/index.js";
import { BWRAP_HELP, probeBubblewrap } from "../agents/tools/sandbox.js";
import { unpricedModels, unpricedProblem } from "../agents/unpriced.js";
import { systemClock } from "../base/clock.js";
import { toError, type UserError } from "../base/errors.js";
import { memoryChars } from "../base/memory-text.js";
import { PACKAGE_ROOT, packageInfo } from "../base/package-info.js";
import type { Config } from "../config/index.js";
import { cronDirOf } from "../cron/admin.js";
import type { CronDefinition } from "../cron/definition.js";
import { AGENT_SCOPE, type Memory } from "../ports/index.js";
import { DATABASE_FILE, openStorage } from "../storage/index.js";
import { latestSchemaVersion } from "../storage/sqlite/database.js";
import { loadCrons } from "./cron.js";

/** How a check ended: `fail` makes doctor exit 1; `warn` and `skip` do not. */
export type CheckStatus = "ok" | "warn" | "fail" | "skip";

/** One line of the report. */
export interface CheckResult {
  /** Short name of what was checked, such as `model key`. */
  check: string;
  status: CheckStatus;
  /** What was found. */
  detail: string;
  /** What to do about it (for `warn` and `fail`). */
  fix?: string;
}

/** The workspace as far as it could be loaded; each later part needs the earlier ones. */
export interface DoctorContext {
  /** The workspace folder, when it exists and holds a workspace. */
  workspace?: string;
  /** Its config, when picklebot.yaml is valid. */
  config?: Config;
  agents: Map<string, AgentDefinition>;
  brokenAgents: Map<string, UserError>;
  /** `--offline`: no request leaves the host (model, Telegram, Discord). */
  offline: boolean;
  /** Used for every HTTP request. (Default: globalThis.fetch) */
  fetch: typeof fetch;
}

/** One check: it returns one line or several (one per bad file, say). */
export type DoctorCheck = (context: DoctorContext) => Promise<CheckResult | CheckResult[]>;

/** Free space below which the history folder fails, and below which it warns. */
const DISK_FAIL_BYTES = 100 * 1024 * 1024;
const DISK_WARN_BYTES = 1024 * 1024 * 1024;

/** A result line; `fix` only when there is something to do. */
export function result(
  check: string,
  status: CheckStatus,
  detail: string,
  fix?: string,
): CheckResult {
  return fix === undefined ? { check, status, detail } : { check, status, detail, fix };
}

/** The line of a check that needs a valid config when there is none. */
export function needsConfig(check: string): CheckResult {
  return result(check, "skip", "not checked: the workspace or its config did not load (see above)");
}

export const checkNode: DoctorCheck = async () => {
  const { nodeRange } = packageInfo();
  const needed = /(\d+)\.(\d+)/.exec(nodeRange);
  const [major = 0, minor = 0] = process.versions.node.split(".").map(Number);
  const neededMajor = Number(needed?.[1] ?? 0);
  const neededMinor = Number(needed?.[2] ?? 0);
  const recent = major > neededMajor || (major === neededMajor && minor >= neededMinor);
  return recent
    ? result("node", "ok", `Node ${process.versions.node} (needs ${nodeRange})`)
    : result(
        "node",
        "fail",
        `Node ${process.versions.node} is too old (needs ${nodeRange})`,
        "install a current Node LTS (https://nodejs.org or your distribution's nodesource packages)",
      );
};

export const checkBuild: DoctorCheck = async () => {
  const entry = fileURLToPath(new URL("dist/cli/main.js", PACKAGE_ROOT));
  const root = path.resolve(fileURLToPath(PACKAGE_ROOT));
  if (!fs.existsSync(entry)) {
    return result(
      "build",
      "fail",
      `${entry} is missing: picklebot is not built`,
      `run npm install (it builds) or npm run build in ${root}`,
    );
  }
  const { name, version } = packageInfo();
  const source = fileURLToPath(new URL("src/cli/main.ts", PACKAGE_ROOT));
  const stale = fs.existsSync(source) && fs.statSync(source).mtimeMs > fs.statSync(entry).mtimeMs;
  return stale
    ? result(
        "build",
        "warn",
        `dist/ in ${root} is older than src/: the command runs the previous build`,
        `run npm run build in ${root}`,
      )
    : result("build", "ok", `${name} ${version} in ${root}`);
};

export const checkHistoryFolder: DoctorCheck = async ({ config }) => {
  if (!config) return needsConfig("history");
  const folder = config.history.path;
  if (!fs.existsSync(folder)) {
    const parent = nearestExisting(folder);
    return writable(parent)
      ? result("history", "ok", `${folder} will be created at the first start`)
      : result(
          "history",
          "fail",
          `${folder} does not exist and ${parent} is not writable`,
          `create it as the user that runs picklebot: mkdir -p ${folder}`,
        );
  }
  if (process.getuid?.() === 0 && fs.statSync(folder).uid !== 0) {
    // Root can write anything: the risk is the reverse, files the owner then cannot write.
    return result(
      "history",
      "warn",
      `you run this as root, but ${folder} belongs to uid ${fs.statSync(folder).uid}`,
      "run picklebot as the user that owns the workspace, never as root: files root creates there lock that user out",
    );
  }
  const problems = [folder, path.join(folder, DATABASE_FILE)]
    .filter((file) => fs.existsSync(file))
    .flatMap((file) => ownershipProblems(file));
  if (problems.length > 0) {
    return result(
      "history",
      "fail",
      problems.join("; "),
      `give them back to the user that runs picklebot: sudo chown -R $(id -u):$(id -g) ${folder} (and never run picklebot with sudo)`,
    );
  }
  return result("history", "ok", `${folder} is writable and yours`);
};

export const checkDatabase: DoctorCheck = async ({ config }) => {
  if (!config) return needsConfig("database");
  if (config.queue.backend === "postgres" || config.history.backend === "postgres") {
    return result("database", "skip", "distributed mode: see the postgres line");
  }
  const file = path.join(config.history.path, DATABASE_FILE);
  if (!fs.existsSync(file))
    return result("database", "ok", `${file} will be created at the first start`);
  try {
    const db = new Database(file, { readonly: true, fileMustExist: true });
    try {
      const answer = db.pragma("quick_check(1)", { simple: true });
      if (answer === "ok") return result("database", "ok", `${file} passes SQLite's quick_check`);
      return damaged(file, String(answer));
    } finally {
      db.close();
    }
  } catch (thrown) {
    return damaged(file, toError(thrown).message);
  }
};

/**
 * Memory longer than its budget: a warning for each, with the command that shortens it.
 * Read only from a database at this release's schema: doctor migrates nothing.
 */
export const checkMemory: DoctorCheck = async ({ config, agents }) => {
  if (!config) return needsConfig("memory");
  const unready = await unmigratedDatabase(config);
  if (unready) return result("memory", "skip", `not checked: ${unready}`);
  const storage = await openStorage(config, systemClock);
  let memories: Memory[];
  try {
    memories = await storage.memory.list();
  } finally {
    await storage.close();
  }
  const over = memoriesOverBudget(memories, { agents, defaultAgentId: config.default_agent });
  if (over.length === 0) {
    return result("memory", "ok", `${memories.length} memories, each within its budget`);
  }
  return over.map(({ memory, budget }) =>
    result(
      "memory",
      "warn",
      `${memoryLabel(memory.agentId, memory.scope)} is ${memoryChars(memory.text)} characters, over its budget of ${budget}; every conversation sends it whole and the agent can add nothing to it`,
      `shorten it: picklebot memory edit ${memory.scope} --agent ${memory.agentId} (or raise memory.${memory.scope === AGENT_SCOPE ? "agent_chars" : "person_chars"} in the agent's AGENT.md)`,
    ),
  );
};

/**
 * Why the workspace's database cannot be read as this release stores it (none yet, one
 * not reachable, one an earlier release made), or null when it can.
 */
async function unmigratedDatabase(config: Config): Promise<string | null> {
  const distributed = config.queue.backend === "postgres" || config.history.backend === "postgres";
  if (distributed) {
    if (!config.queue.url) return "no PostgreSQL url (see the postgres line)";
    const { pendingPostgresMigrations } = await import("../storage/postgres/database.js");
    const pending = await pendingPostgresMigrations(config.queue.url).catch(() => null);
    return pending?.length === 0
      ? null
      : "the database is not reachable or not migrated (see the postgres line)";
  }
  const file = path.join(config.history.path, DATABASE_FILE);
  if (!fs.existsSync(file)) return "nothing saved yet (no database)";
  try {
    const db = new Database(file, { readonly: true, fileMustExist: true });
    try {
      const version = db.pragma("user_version", { simple: true });
      if (version === latestSchemaVersion()) return null;
    } finally {
      db.close();
    }
  } catch {
    return "the database did not open (see the database line)";
  }
  return "the database is from an earlier release; the server upgrades it at its next start";
}

export const checkDiskSpace: DoctorCheck = async ({ config, workspace }) => {
  const folder = config ? nearestExisting(config.history.path) : workspace;
  if (!folder) return needsConfig("disk");
  const stats = fs.statfsSync(folder);
  const free = stats.bavail * stats.bsize;
  const shown = `${(free / 1024 ** 3).toFixed(1)} GiB free on the disk of ${folder}`;
  const fix = "free some space (old logs, docker images) or move the workspace to a larger disk";
  if (free < DISK_FAIL_BYTES) return result("disk", "fail", shown, fix);
  if (free < DISK_WARN_BYTES) return result("disk", "warn", shown, fix);
  return result("disk", "ok", shown);
};

export const checkAgents: DoctorCheck = async ({ config, agents, brokenAgents }) => {
  if (!config) return needsConfig("agents");
  if (brokenAgents.size === 0) {
    const ids = [...agents.keys()].sort().join(", ") || `${config.default_agent} (built in)`;
    return result("agents", "ok", ids);
  }
  return [...brokenAgents.values()].map((error) =>
    result(
      "agents",
      "fail",
      error.message,
      "fix the file named above; the agent does not run until then",
    ),
  );
};

/**
 * Every model the agents call has a price: a warning for one that has none (its calls
 * count as $0), a failure when a budget applies to its agents (their calls are refused).
 */
export const checkPrices: DoctorCheck = async ({ config, agents }) => {
  if (!config) return needsConfig("prices");
  const unpriced = unpricedModels(config, agents);
  if (unpriced.length === 0)
    return result("prices", "ok", "every model the agents call has a price");
  return unpriced.map((entry) =>
    result(
      "prices",
      entry.refusedAgentIds.length > 0 ? "fail" : "warn",
      unpricedProblem(entry),
      unpricedFix(entry.model),
    ),
  );
};

export const checkCrons: DoctorCheck = async (context) => {
  const { workspace, config } = context;
  if (!workspace || !config) return needsConfig("crons");
  const { crons, errors } = loadCrons({ ...context, workspace, config });
  const batchless = batchCronsWithoutBatches(crons, config);
  if (errors.length === 0 && batchless.length === 0)
    return result("crons", "ok", `${crons.length} valid in ${cronDirOf(workspace)}`);
  return [
    ...errors.map((error) =>
      result("crons", "fail", error.message, "fix the file; the cron does not run until then"),
    ),
    ...batchless,
  ];
};

/**
 * A warning for the crons that ask for the batch API (`batch: true`) when the provider
 * has none: they run as normal calls, at the full price.
 */
function batchCronsWithoutBatches(crons: readonly CronDefinition[], config: Config): CheckResult[] {
  const batched = crons.filter((cron) => cron.batch).map((cron) => cron.id);
  if (batched.length === 0 || createModelProvider(config.llm).batches) return [];
  return [
    result(
      "crons",
      "warn",
      `${batched.join(", ")} set batch: true, but llm.provider ${config.llm.provider} has no batch API: they run as normal calls, at the full price`,
      'remove batch: true from those crons (docs/guides/models.md, "What only Anthropic has")',
    ),
  ];
}

export const checkSandbox: DoctorCheck = async ({ config }) => {
  if (!config) return needsConfig("bash sandbox");
  if (config.tools.bash.sandbox === "none") {
    return result(
      "bash sandbox",
      "warn",
      "tools.bash.sandbox is none: agents' bash commands run unconfined as this user",
      "install bubblewrap and remove tools.bash.sandbox from picklebot.yaml",
    );
  }
  const probe = probeBubblewrap();
  return probe.usable
    ? result("bash sandbox", "ok", `${probe.version}`)
    : result("bash sandbox", "fail", `bash calls fail: ${probe.problem}`, BWRAP_HELP);
};

function damaged(file: string, reason: string): CheckResult {
  return result(
    "database",
    "fail",
    `${file} is damaged or not a picklebot database (${reason})`,
    "stop the server, move the file away (keep it for recovery) and restore a backup, or start again with an empty database",
  );
}

/** Why `file` will trouble picklebot: not writable, or owned by another user. */
function ownershipProblems(file: string): string[] {
  const problems: string[] = [];
  if (!writable(file)) problems.push(`${file} is not writable`);
  const uid = process.getuid?.();
  const owner = fs.statSync(file).uid;
  if (uid !== undefined && owner !== uid)
    problems.push(`${file} belongs to uid ${owner}, not to uid ${uid} that runs this`);
  return problems;
}

function writable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

function nearestExisting(folder: string): string {
  let current = folder;
  while (!fs.existsSync(current) && path.dirname(current) !== current)
    current = path.dirname(current);
  return current;
}
