/**
 * `picklebot doctor [--offline] [--json]`: checks the host, the installation, the
 * workspace and the services it names, one line each with the fix; exits 1 when any
 * check fails. It reads and asks, and never writes to the workspace.
 *
 * Checks are plain functions in one ordered list, {@link DOCTOR_CHECKS}: adding one is
 * one import and one entry.
 */
import { Command } from "commander";
import { POLICY_TOOLS } from "../agents/approval-policy.js";
import { AgentCatalog } from "../agents/catalog.js";
import { agentConfigProblem, definedAgentIds } from "../agents/definition.js";
import { toError } from "../base/errors.js";
import { redactSecrets } from "../base/redact.js";
import {
  configFileOf,
  loadConfig,
  requireWorkspaceFiles,
  resolveWorkspace,
  secretValues,
} from "../config/index.js";
import {
  type CheckResult,
  type CheckStatus,
  checkAgents,
  checkBuild,
  checkCrons,
  checkDatabase,
  checkDiskSpace,
  checkHistoryFolder,
  checkMemory,
  checkNode,
  checkPrices,
  checkSandbox,
  type DoctorCheck,
  type DoctorContext,
  result,
} from "./doctor-checks.js";
import {
  chatPlatformChecks,
  checkMcpServers,
  checkModelKey,
  checkPostgres,
  checkWebSearch,
} from "./doctor-remote.js";
import { printable, printJson } from "./output.js";

/** Every check after the workspace and config lines, in the order they print. */
export const DOCTOR_CHECKS: readonly DoctorCheck[] = [
  checkAgents,
  checkHistoryFolder,
  checkDatabase,
  checkMemory,
  checkDiskSpace,
  checkModelKey,
  checkPrices,
  ...chatPlatformChecks,
  checkCrons,
  checkSandbox,
  checkWebSearch,
  checkMcpServers,
  checkPostgres,
];

/** Options of {@link runDoctor}. */
export interface DoctorOptions {
  /** `--workspace`, if given. */
  workspace?: string;
  offline: boolean;
  /** (Default: globalThis.fetch) */
  fetch?: typeof fetch;
}

/** The `doctor` command. */
export function doctorCommand(): Command {
  return new Command("doctor")
    .description(
      "check Node, the build, the workspace, its config, history/, disk space, API keys and " +
        "tokens, the models' prices, crons, the bash sandbox and PostgreSQL; one line each with the fix",
    )
    .option("--offline", "skip the requests to the model API, Telegram, Discord and Slack")
    .option("--json", "print JSON for scripts")
    .action(async (options: { offline?: boolean; json?: boolean }, command: Command) => {
      const { workspace } = command.optsWithGlobals<{ workspace?: string }>();
      const { results, secrets } = await runDoctor({
        ...(workspace ? { workspace } : {}),
        offline: options.offline === true,
      });
      const clean = results.map((line) => redactLine(line, secrets));
      const ok = clean.every((line) => line.status !== "fail");
      if (options.json) printJson({ ok, checks: clean });
      else printReport(clean, ok);
      if (!ok) process.exitCode = 1;
    });
}

/** Runs every check; `secrets` are the values no line may show. */
export async function runDoctor(
  options: DoctorOptions,
): Promise<{ results: CheckResult[]; secrets: string[] }> {
  const context: DoctorContext = {
    agents: new Map(),
    brokenAgents: new Map(),
    offline: options.offline,
    fetch: options.fetch ?? globalThis.fetch,
  };
  const results = [await checkNode(context), await checkBuild(context)].flat();
  results.push(loadWorkspaceInto(context, options.workspace));
  if (context.workspace) results.push(loadConfigInto(context, context.workspace));
  for (const check of DOCTOR_CHECKS) results.push(...[await runCheck(check, context)].flat());
  return { results, secrets: context.config ? secretValues(context.config) : [] };
}

function loadWorkspaceInto(context: DoctorContext, option: string | undefined): CheckResult {
  try {
    const workspace = resolveWorkspace(option);
    requireWorkspaceFiles(workspace);
    context.workspace = workspace;
    return result("workspace", "ok", workspace);
  } catch (thrown) {
    return result(
      "workspace",
      "fail",
      toError(thrown).message,
      "run picklebot init in a new folder, or pass --workspace DIR",
    );
  }
}

function loadConfigInto(context: DoctorContext, workspace: string): CheckResult {
  try {
    const catalog = new AgentCatalog(workspace);
    catalog.load();
    const config = loadConfig(workspace, process.env, {
      agentIds: definedAgentIds(catalog.agents, catalog.broken),
      tools: POLICY_TOOLS,
    });
    catalog.checkAgents((agent) => agentConfigProblem(agent, config));
    context.config = config;
    context.agents = catalog.agents;
    context.brokenAgents = catalog.broken;
    return result("config", "ok", `${configFileOf(workspace)} is valid`);
  } catch (thrown) {
    return result("config", "fail", toError(thrown).message, "fix the key named above");
  }
}

/** A check that throws is a failed line, not the end of the report. */
async function runCheck(check: DoctorCheck, context: DoctorContext) {
  try {
    return await check(context);
  } catch (thrown) {
    const name = check.name.replace(/^check/, "").toLowerCase() || "check";
    return result(name, "fail", `the check itself failed: ${toError(thrown).message}`);
  }
}

function redactLine(line: CheckResult, secrets: string[]): CheckResult {
  const detail = redactSecrets(line.detail, secrets);
  return line.fix === undefined
    ? { ...line, detail }
    : { ...line, detail, fix: redactSecrets(line.fix, secrets) };
}

const LABELS: Record<CheckStatus, string> = { ok: "ok", warn: "WARN", fail: "FAIL", skip: "-" };

function printReport(results: CheckResult[], ok: boolean): void {
  const width = Math.max(...results.map((line) => line.check.length));
  for (const line of results) {
    const head = `${LABELS[line.status].padEnd(4)}  ${line.check.padEnd(width)}  `;
    console.log(printable(`${head}${line.detail}`, { multiline: true }));
    if (line.fix) console.log(printable(`${" ".repeat(head.length)}fix: ${line.fix}`));
  }
  const failed = results.filter((line) => line.status === "fail").length;
  console.log(ok ? "\nall checks passed" : `\n${failed} check(s) failed: see the fix under each`);
}
