/**
 * Loads and validates cron definitions: one `crons/<id>.yaml` file per cron (docs/design.md §2.3).
 * Every problem becomes a {@link UserError} naming the file, the key and the fix; a folder
 * load collects them per file, so one bad file never hides the others. The YAML and the
 * keys go through the same parser and issue messages as picklebot.yaml (`src/config/`):
 * syntax errors name the line, unknown keys get "did you mean", bad values say what was
 * expected and what was found.
 */
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { CronExpressionParser } from "cron-parser";
import { z } from "zod";
import { CHAT_ADDRESS_FORMS, chatReplyTarget, parseChatAddress } from "../base/chat-address.js";
import { toError, UserError } from "../base/errors.js";
import { CRON_ID } from "../base/session-key.js";
import { closestMatch, didYouMean, parseYaml, userErrorFromIssues } from "../config/index.js";
import type { ReplyTarget } from "../ports/index.js";

/** A validated cron, as the CronWorker schedules it. */
export interface CronDefinition {
  /** The file name without `.yaml` (letters, digits, `-`, `_`). */
  id: string;
  /** Path of the file it was read from. */
  file: string;
  /** 5-field cron expression, read on the wall clock of {@link CronDefinition.timezone}. */
  schedule: string;
  /** The agent that runs the prompt. (Default: the config's `default_agent`) */
  agentId: string;
  /** The named model (or model id) its runs use instead of the agent's. (Default: the agent's) */
  model?: string;
  /** The message the agent receives at each occurrence. */
  prompt: string;
  /** IANA time zone name. (Default: the config's top-level `timezone`) */
  timezone: string;
  /** Where the reply goes. (Default: `{ kind: "silent" }`) */
  deliverTo: ReplyTarget;
  /** False: loaded and listed, never fired. (Default: true) */
  enabled: boolean;
  /** Fire once, then stay disabled in the cron state store. (Default: false) */
  oneOff: boolean;
  /** After downtime, run the latest missed occurrence at start-up. (Default: false) */
  catchUp: boolean;
  /**
   * Send the runs' model calls through the Message Batches API: half the price, the
   * answer within 24 h. (Default: false)
   */
  batch: boolean;
  /** sha256 of the file's bytes: tells an edited file from an unchanged one. */
  contentHash: string;
}

/** Values a cron file inherits from `picklebot.yaml`. */
export interface CronDefaults {
  /** `default_agent`. */
  agentId: string;
  /** Top-level `timezone`. */
  timezone: string;
  /**
   * The workspace's agent ids (loaded or broken). When given, a cron naming any other
   * agent is a bad file, reported when it loads instead of failing when it fires; the
   * default agent is always known (it has a built-in definition).
   */
  agentIds?: readonly string[];
  /**
   * The named models of picklebot.yaml (`default` and `models:`). When given, a `model`
   * within a typo of one of them (and not one) is a bad file. (Default: not checked)
   */
  modelNames?: readonly string[];
}

/** Result of {@link loadCronDir}: the good crons and one error per bad file. */
export interface CronDirLoad {
  crons: CronDefinition[];
  /** UserErrors with `context.file`, `context.field` and `context.contentHash`. */
  errors: UserError[];
}

/** What each key expects, used in error messages. */
const EXPECTED = {
  schedule: 'a 5-field cron expression in quotes, such as "0 8 * * *"',
  agent: "an agent id (a folder in agents/), such as pickle",
  model: "a named model of picklebot.yaml (models:), or a model id",
  prompt: "the non-empty message the agent receives",
  timezone: "an IANA time zone name, such as Europe/Berlin",
  deliver_to: `${CHAT_ADDRESS_FORMS} (leave it out for silent)`,
  enabled: "true or false",
  one_off: "true or false",
  catch_up: "true or false",
  batch: "true or false",
} as const;

const cronFileSchema = z.strictObject({
  schedule: z.string().describe(EXPECTED.schedule),
  agent: z.string().trim().min(1).describe(EXPECTED.agent).optional(),
  model: z.string().trim().min(1).describe(EXPECTED.model).optional(),
  prompt: z.string().trim().min(1).describe(EXPECTED.prompt),
  timezone: z.string().trim().min(1).describe(EXPECTED.timezone).optional(),
  deliver_to: z.string().trim().describe(EXPECTED.deliver_to).optional(),
  enabled: z.boolean().default(true),
  one_off: z.boolean().default(false),
  catch_up: z.boolean().default(false),
  batch: z.boolean().default(false),
});

/**
 * Reads every `*.yaml` file of `dir` (sorted by name). A missing folder holds no crons.
 * Files named `*.yml` are reported, since they would otherwise be silently ignored.
 */
export function loadCronDir(dir: string, defaults: CronDefaults): CronDirLoad {
  const crons: CronDefinition[] = [];
  const errors: UserError[] = [];
  for (const name of listCronFiles(dir)) {
    const file = join(dir, name);
    if (name.endsWith(".yml")) {
      const fix = `${name.slice(0, -".yml".length)}.yaml`;
      errors.push(
        fileError(file, "file name", `cron files must end in .yaml; rename it to ${fix}`),
      );
      continue;
    }
    try {
      crons.push(loadCronFile(file, defaults));
    } catch (error) {
      const reason = toError(error).message;
      errors.push(
        error instanceof UserError
          ? error
          : fileError(file, "file", `the file failed to load (${reason})`),
      );
    }
  }
  return { crons, errors };
}

/** Reads and validates one cron file; throws a {@link UserError} naming the bad key. */
export function loadCronFile(file: string, defaults: CronDefaults): CronDefinition {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    throw fileError(file, "file", `the file cannot be read (${toError(error).message})`);
  }
  return parseCronDefinition(file, text, defaults);
}

/** Validates the text of a cron file; `file` names it in errors and gives the id. */
export function parseCronDefinition(
  file: string,
  text: string,
  defaults: CronDefaults,
): CronDefinition {
  const contentHash = createHash("sha256").update(text).digest("hex");
  const fail = (field: string, problem: string): UserError =>
    fileError(file, field, problem, contentHash);
  const id = cronIdOf(file);
  if (!CRON_ID.test(id)) {
    throw fail(
      "file name",
      `the file name "${id}" becomes the cron id and may use only letters, digits, "-" and "_"; rename the file`,
    );
  }
  const raw = readYamlMapping(file, text, fail, contentHash);
  const fields = cronFileSchema.safeParse(raw, { reportInput: true });
  if (!fields.success) {
    const error = userErrorFromIssues(file, fields.error.issues, cronFileSchema);
    throw new UserError(error.message, {
      context: { ...error.context, field: error.context.key, contentHash },
    });
  }
  const value = fields.data;
  const timezone = checkTimeZone(value.timezone ?? defaults.timezone, value.timezone, fail);
  const schedule = checkSchedule(id, value.schedule, timezone, fail);
  return {
    id,
    file,
    schedule,
    agentId: checkAgent(value.agent ?? defaults.agentId, defaults, fail),
    ...(value.model === undefined ? {} : { model: checkModel(value.model, defaults, fail) }),
    prompt: value.prompt,
    timezone,
    deliverTo: parseDeliverTo(value.deliver_to, fail),
    enabled: value.enabled,
    oneOff: value.one_off,
    catchUp: value.catch_up,
    batch: value.batch,
    contentHash,
  };
}

/** The cron id a file stands for: its name without folder and `.yaml`. */
export function cronIdOf(file: string): string {
  const name = file.split(/[\\/]/).pop() ?? file;
  return name.replace(/\.ya?ml$/, "");
}

type FailWith = (field: string, problem: string) => UserError;

function listCronFiles(dir: string): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw error;
  }
  // Hidden files are editor swap files and the like, not crons.
  return names
    .filter((name) => !name.startsWith(".") && /\.ya?ml$/.test(name))
    .filter((name) => isFile(join(dir, name)))
    .sort();
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false; // removed between readdir and stat
  }
}

function readYamlMapping(
  file: string,
  text: string,
  fail: FailWith,
  contentHash: string,
): Record<string, unknown> {
  let value: unknown;
  try {
    value = parseYaml(text, file);
  } catch (error) {
    if (!(error instanceof UserError)) throw error;
    throw new UserError(error.message, {
      cause: error.cause,
      context: { ...error.context, field: "file", contentHash },
    });
  }
  if (value === null || value === undefined) {
    throw fail("file", `the file is empty; it needs at least "schedule" and "prompt"`);
  }
  if (typeof value !== "object" || Array.isArray(value)) {
    throw fail(
      "file",
      `the file must be a YAML mapping of keys (schedule, prompt, …), but it ${describeFound(value)}`,
    );
  }
  const mapping: Record<string, unknown> = {};
  for (const [key, entry] of Object.entries(value)) {
    // `key:` with no value means "not set", so the default applies (or "missing" is reported).
    if (entry !== null) mapping[key] = entry;
  }
  return mapping;
}

function checkTimeZone(zone: string, fromFile: string | undefined, fail: FailWith): string {
  try {
    return new Intl.DateTimeFormat("en-US", { timeZone: zone }).resolvedOptions().timeZone;
  } catch {
    const inherited = fromFile === undefined ? " (inherited from picklebot.yaml)" : "";
    throw fail(
      "timezone",
      `"timezone" "${zone}"${inherited} is not a known IANA time zone; use a name such as Europe/Berlin or America/New_York`,
    );
  }
}

function checkAgent(agentId: string, defaults: CronDefaults, fail: FailWith): string {
  if (!defaults.agentIds || agentId === defaults.agentId) return agentId;
  if (defaults.agentIds.includes(agentId)) return agentId;
  const known = [...new Set([defaults.agentId, ...defaults.agentIds])].sort();
  const suggestion = didYouMean(agentId, known);
  throw fail(
    "agent",
    `"agent" "${agentId}" is not an agent of this workspace${suggestion ? ` (${suggestion})` : ""}; ` +
      `name one of ${known.join(", ")} or create agents/${agentId}/AGENT.md`,
  );
}

/** A `model` is a named model, or a model id that is no typo of one (see models.ts). */
function checkModel(model: string, defaults: CronDefaults, fail: FailWith): string {
  const names = defaults.modelNames;
  if (!names || names.includes(model)) return model;
  const match = closestMatch(model, names);
  if (match === undefined) return model;
  throw fail(
    "model",
    `"model" "${model}" is no named model (did you mean "${match}"?); name one of ${names.join(", ")} (models: in picklebot.yaml), or a model id`,
  );
}

function checkSchedule(id: string, schedule: string, timezone: string, fail: FailWith): string {
  const trimmed = schedule.trim();
  const fieldCount = trimmed === "" ? 0 : trimmed.split(/\s+/).length;
  if (fieldCount !== 5) {
    throw fail(
      "schedule",
      `"schedule" "${schedule}" has ${fieldCount} fields; write 5 (minute hour day-of-month month day-of-week), such as "0 8 * * *"`,
    );
  }
  try {
    const expression = CronExpressionParser.parse(trimmed, { tz: timezone, hashSeed: id });
    expression.next();
  } catch (error) {
    throw fail(
      "schedule",
      `"schedule" "${schedule}" is not a valid cron expression (${toError(error).message}); expected ${EXPECTED.schedule}`,
    );
  }
  return trimmed;
}

function parseDeliverTo(value: string | undefined, fail: FailWith): ReplyTarget {
  if (value === undefined || value === "silent") return { kind: "silent" };
  const address = parseChatAddress(value);
  if (address) return chatReplyTarget(address);
  throw fail("deliver_to", `"deliver_to" is "${value}"; expected ${EXPECTED.deliver_to}`);
}

function fileError(file: string, field: string, problem: string, contentHash?: string): UserError {
  return new UserError(`${file}: ${problem}.`, {
    context: { file, field, contentHash },
  });
}

function describeFound(value: unknown): string {
  if (value === undefined) return "is missing";
  if (typeof value === "string") return value.trim() === "" ? "is empty" : `is "${value}"`;
  if (Array.isArray(value)) return "is a list";
  if (typeof value === "object") return "is a mapping";
  return `is ${String(value)}`;
}
