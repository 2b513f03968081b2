/**
 * Finds the workspace and loads its picklebot.yaml: `.env` first, then YAML, then
 * `${ENV}` interpolation, then validation against the schema (which fills defaults).
 */
import fs from "node:fs";
import path from "node:path";
import { parseEnv } from "node:util";
import { parseDocument, type YAMLError } from "yaml";
import { UserError } from "../base/errors.js";
import { interpolateEnv } from "./interpolate.js";
import { userErrorFromIssues } from "./issues.js";
import {
  buildConfigSchema,
  type Config,
  type ConfigSchemaContext,
  type Environment,
} from "./schema.js";

/** The configuration file's name inside a workspace. */
export const CONFIG_FILE_NAME = "picklebot.yaml";

/** The other spelling of {@link CONFIG_FILE_NAME}, read when it is the only one. */
const ALTERNATE_CONFIG_FILE_NAME = "picklebot.yml";

/**
 * Every name the loader reads a workspace's config from, which the tools and the sandbox
 * protect whichever of them exists.
 */
export const CONFIG_FILE_NAMES = [CONFIG_FILE_NAME, ALTERNATE_CONFIG_FILE_NAME] as const;

/**
 * The path of the workspace's config file: `picklebot.yaml`, else `picklebot.yml` when
 * only that one exists. Both present is a UserError: which one counts would be a guess;
 * unless one of them is empty (as the sandbox's placeholder is, which keeps a command
 * from creating the other name): an empty file says nothing, so the other one counts.
 */
export function configFileOf(workspace: string): string {
  const main = path.join(workspace, CONFIG_FILE_NAME);
  const alternate = path.join(workspace, ALTERNATE_CONFIG_FILE_NAME);
  const hasMain = fs.existsSync(main) && !isEmptyFile(main);
  const hasAlternate = fs.existsSync(alternate) && !isEmptyFile(alternate);
  if (hasMain && hasAlternate) {
    throw new UserError(
      `both ${main} and ${alternate} exist; keep one (picklebot.yaml is the usual name) and delete the other.`,
      { context: { file: alternate } },
    );
  }
  return hasAlternate ? alternate : main;
}

function isEmptyFile(file: string): boolean {
  const stats = fs.statSync(file, { throwIfNoEntry: false });
  return stats?.isFile() === true && stats.size === 0;
}

/**
 * The name of the workspace's config file (`picklebot.yaml` or `picklebot.yml`) when it
 * exists and sets the key at `keyPath` (such as `["http", "port"]`), else undefined: the
 * value came from the defaults. For messages that say where a setting comes from.
 */
export function configFileSetting(
  workspace: string,
  keyPath: readonly string[],
): string | undefined {
  let file: string;
  try {
    file = configFileOf(workspace);
  } catch {
    return undefined;
  }
  let node: unknown = readYamlFile(file);
  for (const key of keyPath) {
    if (typeof node !== "object" || node === null || !Object.hasOwn(node, key)) return undefined;
    node = (node as Record<string, unknown>)[key];
  }
  return path.basename(file);
}

/**
 * Throws a UserError unless `workspace` holds a config file or an `agents/` folder, so a
 * command run in the wrong folder says so instead of creating a database there.
 */
export function requireWorkspaceFiles(workspace: string): void {
  const config = configFileOf(workspace);
  if (fs.existsSync(config) || fs.existsSync(path.join(workspace, "agents"))) return;
  throw new UserError(
    `${workspace} is not a picklebot workspace: no picklebot.yaml or agents/ here; ` +
      "run picklebot init, or pass --workspace.",
    { context: { file: workspace } },
  );
}

/**
 * The absolute workspace folder: `option` (from `--workspace`), else
 * `PICKLEBOT_WORKSPACE`, else the current directory. Throws a UserError when it does
 * not exist or is not a folder.
 */
export function resolveWorkspace(
  option: string | undefined,
  env: Environment = process.env,
): string {
  const chosen = option || env.PICKLEBOT_WORKSPACE || process.cwd();
  const workspace = path.resolve(chosen);
  const source = option ? "--workspace" : env.PICKLEBOT_WORKSPACE ? "PICKLEBOT_WORKSPACE" : "";
  const from = source ? ` (from ${source})` : "";
  let stats: fs.Stats;
  try {
    stats = fs.statSync(workspace);
  } catch {
    throw new UserError(
      `workspace ${workspace}${from} does not exist; create one with \`picklebot init ${chosen}\` ` +
        "or pass an existing folder with --workspace.",
      { context: { file: workspace } },
    );
  }
  if (!stats.isDirectory()) {
    throw new UserError(
      `workspace ${workspace}${from} is a file, not a folder; pass a folder with --workspace.`,
      { context: { file: workspace } },
    );
  }
  return workspace;
}

/**
 * Loads `<workspace>/picklebot.yaml` (optional: every key has a default). Variables of
 * `<workspace>/.env` fill in those `env` does not set, for `${NAME}` and the defaults
 * only: `env` (usually `process.env`) is left as it is, so the secrets of `.env` stay
 * in the returned config and never reach a child process. Throws a
 * UserError naming the file and key for any problem. With `options.agentIds` (the loaded
 * agents), agents named by `bindings` are checked against them; with `options.tools` (the
 * tool registry), the tools named by `approvals.policy`.
 */
export function loadConfig(
  workspace: string,
  env: Environment = process.env,
  options: Pick<ConfigSchemaContext, "agentIds" | "tools"> = {},
): Config {
  const variables = withDotEnv(workspace, env);
  const file = configFileOf(workspace);
  const raw = interpolateEnv(readYamlFile(file) ?? {}, variables, file);
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new UserError(
      `${file}: expected a mapping of keys to values (such as \`llm:\`), found ${
        Array.isArray(raw) ? "a list" : JSON.stringify(raw)
      }; see \`picklebot init\` for an example.`,
      { context: { file } },
    );
  }
  const schema = buildConfigSchema({ env: variables, workspace, ...options });
  const result = schema.safeParse(raw, { reportInput: true });
  if (!result.success) throw userErrorFromIssues(file, result.error.issues, schema);
  return result.data;
}

/**
 * A new environment: `env` with the variables of `<workspace>/.env` that it does not
 * set. `env` itself is not changed.
 */
function withDotEnv(workspace: string, env: Environment): Environment {
  const text = readTextIfExists(path.join(workspace, ".env"));
  if (text === undefined) return env;
  const variables: Environment = { ...parseEnv(text) };
  for (const [name, value] of Object.entries(env)) {
    if (value !== undefined) variables[name] = value;
  }
  return variables;
}

/**
 * The parsed content of a YAML file, or undefined when the file does not exist. A
 * syntax error is a UserError naming the file and line; `lineOffset` shifts the line
 * numbers when the YAML is embedded in a larger file (front matter).
 */
export function parseYaml(text: string, file: string, lineOffset = 0): unknown {
  const document = parseDocument(text);
  const error = document.errors[0];
  if (error) {
    const line = (error.linePos?.[0].line ?? 1) + lineOffset;
    if (error.code === "DUPLICATE_KEY") throw duplicateKeyError(text, file, error, lineOffset);
    const reason = error.message.split("\n")[0]?.replace(/ at line \d+, column \d+:?$/, "");
    throw new UserError(
      `${file}:${line}: YAML syntax error: ${reason}; fix the syntax on line ${line}.`,
      { cause: error, context: { file, line } },
    );
  }
  return document.toJS();
}

/**
 * A key written twice in one mapping (two uncommented `tools:` blocks, say): names the key
 * and both lines, since the YAML parser's message names neither.
 */
function duplicateKeyError(text: string, file: string, error: YAMLError, offset: number) {
  const [start] = error.pos;
  // The parser points at the key's first character: the key runs to its colon.
  const key = /^[^:\n]*/.exec(text.slice(start))?.[0].trim() ?? "";
  const lines = text.slice(0, start).split("\n");
  const indent = lines.at(-1)?.length ?? 0;
  const same = new RegExp(`^ {${indent}}${escapeRegExp(key)}\\s*:`);
  const first = lines.slice(0, -1).findLastIndex((candidate) => same.test(candidate));
  const line = lines.length + offset;
  const earlier = first < 0 ? "" : ` (first on line ${first + 1 + offset})`;
  return new UserError(
    `${file}:${line}: the key "${key}" is written twice in the same block${earlier}; merge the two into one, or remove one.`,
    { cause: error, context: { file, line, key } },
  );
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

function readYamlFile(file: string): unknown {
  const text = readTextIfExists(file);
  return text === undefined ? undefined : parseYaml(text, file);
}

function readTextIfExists(file: string): string | undefined {
  try {
    return fs.readFileSync(file, "utf8");
  } catch (thrown) {
    if ((thrown as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw new UserError(
      `cannot read ${file}: ${(thrown as Error).message}; check its permissions.`,
      {
        cause: thrown,
        context: { file },
      },
    );
  }
}
