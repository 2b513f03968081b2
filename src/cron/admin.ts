/**
 * What the owner does to the crons of a workspace from outside the CronWorker (the CLI's
 * `cron list` / `cron run`, the dashboard): load the folder with the workspace's defaults,
 * find one cron by id with a helpful error, and switch a cron on or off by editing the
 * `enabled:` key of its file in place. The running CronWorker watches the folder, so an
 * edit takes effect there without a restart.
 */
import { createHash, randomBytes } from "node:crypto";
import { readFileSync, realpathSync, renameSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseDocument } from "yaml";
import { toError, UserError } from "../base/errors.js";
import { type Config, modelEntryNames } from "../config/index.js";
import { type CronDefinition, type CronDirLoad, loadCronDir } from "./definition.js";

/** The `crons/` folder of `workspace`. */
export function cronDirOf(workspace: string): string {
  return join(workspace, "crons");
}

/**
 * Loads every cron file of the workspace, with the defaults of its picklebot.yaml; with
 * `agentIds`, a cron naming another agent is an error of its file.
 */
export function loadWorkspaceCrons(
  workspace: string,
  config: Config,
  agentIds?: readonly string[],
): CronDirLoad {
  return loadCronDir(cronDirOf(workspace), {
    agentId: config.default_agent,
    timezone: config.timezone,
    ...(agentIds ? { agentIds: [...agentIds] } : {}),
    modelNames: modelEntryNames(config),
  });
}

/**
 * The cron with this id, or a UserError: the file's own error when the file is broken,
 * else the list of known ids.
 */
export function findCron(load: CronDirLoad, id: string): CronDefinition {
  const cron = load.crons.find((candidate) => candidate.id === id);
  if (cron) return cron;
  const broken = load.errors.find((error) => error.context.file?.toString().endsWith(`${id}.yaml`));
  if (broken) throw broken;
  const known = load.crons.map((candidate) => candidate.id);
  const list = known.length > 0 ? known.join(", ") : "none";
  throw new UserError(
    `no cron "${id}" in crons/ (known: ${list}); the id is the file name without .yaml`,
    { context: { cron: id } },
  );
}

/**
 * Sets `enabled:` in the cron's file, keeping its comments, order and other keys; the file
 * is replaced in one rename, so the CronWorker never reads half of it. Refuses (UserError)
 * when the file changed since `cron` was loaded, rather than overwrite an edit.
 */
export function setCronEnabled(cron: CronDefinition, enabled: boolean): void {
  const text = readCronText(cron.file);
  if (createHash("sha256").update(text).digest("hex") !== cron.contentHash) {
    throw new UserError(
      `${cron.file}: the file changed while you were looking at it; reload the page and try again`,
      { context: { file: cron.file, cron: cron.id } },
    );
  }
  // The text is the one that loaded, so it parses.
  const document = parseDocument(text);
  document.set("enabled", enabled);
  // A symlinked cron file stays a symlink: the file it points to is the one replaced.
  const target = realpathSync(cron.file);
  const temporary = `${target}.${randomBytes(4).toString("hex")}.tmp`;
  writeFileSync(temporary, String(document), { mode: statSync(target).mode });
  renameSync(temporary, target);
}

function readCronText(file: string): string {
  try {
    return readFileSync(file, "utf8");
  } catch (error) {
    throw new UserError(`${file}: the file cannot be read (${toError(error).message})`, {
      context: { file },
    });
  }
}
