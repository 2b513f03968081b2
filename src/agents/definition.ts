/**
 * Agent definitions: `agents/<id>/AGENT.md` in the workspace (docs/design.md §2.2), YAML front
 * matter between `---` lines followed by the system prompt in markdown.
 */
import fs from "node:fs";
import path from "node:path";
import { z } from "zod";
import { UserError } from "../base/errors.js";
import { zoneFormatter } from "../base/time-zone.js";
import { type BudgetLimits, budgetLimitsSchema } from "../config/budget.js";
import {
  type ApprovalPolicy,
  approvalPolicySchema,
  type Config,
  DEFAULT_MODEL_ENTRY,
  modelChain,
  modelChoiceProblem,
  modelEntry,
} from "../config/index.js";
import { type CustomIssueParams, userErrorFromIssues } from "../config/issues.js";
import { ID_PATTERN } from "../config/schema.js";
import { didYouMean } from "../config/suggest.js";
import { SPOKEN_REPLY_MODES, type SpokenReplyMode } from "../ports/index.js";
import { POLICY_TOOLS } from "./approval-policy.js";
import { parseFrontMatterFile, readFolderFile } from "./front-matter.js";
import { mcpSelectorProblem, parseMcpSelector, unknownMcpServersProblem } from "./mcp/names.js";
import { type AgentMemory, DEFAULT_MEMORY, MAX_MEMORY_CHARS } from "./memory/settings.js";
import { SKILL_NAME_PATTERN, SKILL_NAME_RULE } from "./skill-file.js";
import { DEFAULT_TOOLS, isToolName, TOOL_NAMES } from "./tools/index.js";

/** The file name of a definition inside `agents/<id>/`. */
export const AGENT_FILE_NAME = "AGENT.md";

/** A loaded agent: who it is, which model and tools it uses, and its system prompt. */
export interface AgentDefinition {
  /** The folder name under `agents/`. */
  id: string;
  /** Display name (front matter `name`). */
  name: string;
  /** One line on what the agent is for. */
  description: string;
  /**
   * The named model it uses (an entry of `models:`), or a model id called through the
   * default entry. (Default: the default entry, `llm:`)
   */
  model?: string;
  /** Named models tried in order when its model fails. (Default: its entry's `fallbacks`) */
  fallbacks?: string[];
  /** Overrides `llm.max_tokens` when set. */
  maxTokens?: number;
  /**
   * Tool names, each one of {@link TOOL_NAMES} or an MCP entry (`mcp:<server>`,
   * `mcp:<server>/<tool>`). (Default: {@link DEFAULT_TOOLS})
   */
  tools: string[];
  /**
   * The agents its `subagent` tool may call (front matter `subagents`). (Default: every
   * other agent)
   */
  subagents?: string[];
  /**
   * Which of its tool calls need the owner's consent (front matter `approvals`); an entry
   * replaces the one of picklebot.yaml's `approvals.policy` for that tool. (Default: none)
   */
  approvals: ApprovalPolicy;
  /** Its spending limits (front matter `budget`), besides the workspace's. (Default: none) */
  budget?: BudgetLimits;
  /**
   * Its chat replies are also sent as voice messages (front matter `voice_replies`), with
   * picklebot.yaml's `text_to_speech`: `always`, or `in_kind` (only the replies to a
   * message that came as a voice note or an audio file). (Default: off)
   */
  voiceReplies?: SpokenReplyMode;
  /**
   * Whether its `bash` may open network connections (front matter `bash: {network}`).
   * (Default: picklebot.yaml `tools.bash.network`)
   */
  bashNetwork?: boolean;
  /**
   * Limits of its `web_fetch` (front matter `web_fetch`): `allowDomains`, the only
   * domains it fetches from, each with its subdomains. (Default: any public host)
   */
  webFetch?: { allowDomains: string[] };
  /**
   * The skills it gets (front matter `skills`), by name; `[]` gives it none. (Default:
   * every skill of `skills/` and of `agents/<id>/skills/`)
   */
  skills?: string[];
  /**
   * Its memory (front matter `memory`): its notes and what it knows about each person,
   * with their budgets; null when `memory: false`. (Default: on, {@link DEFAULT_MEMORY})
   */
  memory: AgentMemory | null;
  /** The system prompt, before {@link renderSystemPrompt} substitutes placeholders. */
  prompt: string;
  /** Absolute path of the AGENT.md it came from, or `built-in`. */
  source: string;
}

/**
 * Ids of every agent `agents/` defines, valid or broken: what a cron, a binding or a
 * subagent list may name (a broken agent gets its own error, not "unknown agent").
 */
export function definedAgentIds(
  agents: ReadonlyMap<string, unknown>,
  broken: ReadonlyMap<string, unknown> = new Map(),
): string[] {
  return [...agents.keys(), ...broken.keys()];
}

/** What {@link loadAgents} found: the valid agents and one error per broken definition. */
export interface LoadedAgents {
  agents: Map<string, AgentDefinition>;
  errors: UserError[];
  /**
   * The broken definitions by agent id (folder name): such an agent does not run at all,
   * and never falls back to the built-in default (see {@link resolveAgent}).
   */
  broken: Map<string, UserError>;
}

const BUILT_IN_PROMPT = `You are Pickle, a helpful personal assistant.
Answer clearly and briefly, and ask when a request is ambiguous.
Your workspace is {{workspace}}; file paths are relative to it.
Today is {{now}}; the newest message ends with the current time.
Use your tools when a task needs them, and say so when you are unsure.
Save what the person will want you to remember later with the memory tool.`;

/** A host name: labels of letters, digits and `-`, joined by dots. */
const DOMAIN_PATTERN =
  /^(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/i;

const frontMatterSchema = z.strictObject({
  name: z.string().min(1),
  description: z.string().min(1),
  model: z.string().min(1).optional(),
  fallbacks: z.array(z.string().min(1).describe("the name of a model entry")).optional(),
  max_tokens: z.int().positive().describe("a whole number of at least 1").optional(),
  tools: z
    .preprocess(
      (value) => (typeof value === "string" ? value.split(/[\s,]+/).filter(Boolean) : value),
      z.array(z.string()).superRefine(checkToolNames),
    )
    .optional(),
  subagents: z
    .array(z.string().regex(ID_PATTERN, "an agent id (a folder name under agents/)"))
    .optional(),
  skills: z.array(z.string().regex(SKILL_NAME_PATTERN, SKILL_NAME_RULE)).optional(),
  approvals: approvalPolicySchema(POLICY_TOOLS).optional(),
  budget: budgetLimitsSchema().optional(),
  bash: z.strictObject({ network: z.boolean().optional() }).optional(),
  voice_replies: z.enum(["off", ...SPOKEN_REPLY_MODES]).optional(),
  memory: z.union([z.boolean(), memorySchema()]).optional(),
  web_fetch: z
    .strictObject({
      allow_domains: z
        .array(
          z
            .string()
            .regex(DOMAIN_PATTERN, "a domain name such as example.com (it admits its subdomains)"),
        )
        .min(1),
    })
    .optional(),
});

/** A memory budget: a whole number of characters, from 100 to {@link MAX_MEMORY_CHARS}. */
function memoryChars() {
  return z
    .int()
    .min(100)
    .max(MAX_MEMORY_CHARS)
    .describe(`a whole number of characters from 100 to ${MAX_MEMORY_CHARS}`)
    .optional();
}

/** Front matter `memory: {agent_chars, person_chars, read_only}`. */
function memorySchema() {
  return z.strictObject({
    agent_chars: memoryChars(),
    person_chars: memoryChars(),
    read_only: z.boolean().optional(),
  });
}

/** The memory an AGENT.md's `memory` field gives: absent or true the default, false none. */
function agentMemory(field: z.output<ReturnType<typeof memorySchema>> | boolean | undefined) {
  if (field === false) return null;
  if (field === undefined || field === true) return { ...DEFAULT_MEMORY };
  return {
    agentChars: field.agent_chars ?? DEFAULT_MEMORY.agentChars,
    personChars: field.person_chars ?? DEFAULT_MEMORY.personChars,
    readOnly: field.read_only ?? DEFAULT_MEMORY.readOnly,
  };
}

/**
 * Loads every `agents/<id>/AGENT.md` of the workspace. A broken definition becomes an
 * error naming its file and field while the others still load; a workspace without
 * `agents/` has no agents.
 */
export function loadAgents(workspace: string): LoadedAgents {
  const agents = new Map<string, AgentDefinition>();
  const errors: UserError[] = [];
  const broken = new Map<string, UserError>();
  for (const folder of subfolders(path.join(workspace, "agents"))) {
    try {
      const agent = loadAgentFolder(folder);
      agents.set(agent.id, agent);
    } catch (thrown) {
      if (!(thrown instanceof UserError)) throw thrown;
      errors.push(thrown);
      broken.set(path.basename(folder), thrown);
    }
  }
  return { agents, errors, broken };
}

/**
 * The agent to run for `id`: a loaded one, else a UserError when its definition is
 * broken (fail closed: never the wider built-in in its place), else the built-in default
 * agent when `id` is the configured default, else a UserError listing the known ids.
 */
export function resolveAgent(
  agents: ReadonlyMap<string, AgentDefinition>,
  id: string,
  defaultAgentId: string,
  broken: ReadonlyMap<string, UserError> = new Map(),
): AgentDefinition {
  const agent = agents.get(id);
  if (agent) return agent;
  const error = broken.get(id);
  if (error) throw brokenAgentError(id, error);
  if (id === defaultAgentId) return builtInAgent(defaultAgentId);
  const known = [...new Set([defaultAgentId, ...agents.keys()])].sort();
  const suggestion = didYouMean(id, known);
  throw new UserError(
    `unknown agent "${id}"${suggestion ? `; ${suggestion}` : ""} (known: ${known.join(", ")}); ` +
      `use one of those or create agents/${id}/${AGENT_FILE_NAME}.`,
    { context: { agent: id } },
  );
}

/**
 * Why a job of a broken agent fails: permanent until the owner fixes the file. The chat
 * user is told only that, and who can fix it: the details (the file's absolute path, what
 * is wrong in it) are for the owner, in the log, `picklebot doctor` and `/healthz`.
 */
export function brokenAgentError(id: string, error: UserError): UserError {
  return new UserError(
    `agent "${id}" is broken and does not run until its definition is fixed: ${error.message}`,
    {
      cause: error,
      context: { agent: id, ...error.context },
      chatNotice: `agent "${id}" is broken; the owner can see why with \`picklebot doctor\` and fix it.`,
    },
  );
}

/**
 * Why `agent` cannot run with this workspace's config, as one sentence naming its file:
 * an `mcp:` server or a named model the config lacks; null when it can.
 */
export function agentConfigProblem(agent: AgentDefinition, config: Config): string | null {
  return (
    unknownMcpServersProblem(agent, Object.keys(config.mcp_servers)) ??
    modelChoiceProblem(config, agent, agent.source)
  );
}

/**
 * The model id an agent calls first: its entry's model, or the id its `model` names, else
 * `llm.model` (an unknown agent: `llm.model`).
 */
export function modelOf(agent: Pick<AgentDefinition, "model"> | undefined, config: Config): string {
  return primaryModelOf(config, agent?.model ?? DEFAULT_MODEL_ENTRY);
}

/**
 * The model ids a turn of `agent` may call, in order: its chain's (docs/guides/models.md,
 * "Fallbacks"), headed by `chosen` (a chat's `/model`, a cron's `model`) when one is.
 */
export function chainModelsOf(
  agent: Pick<AgentDefinition, "model" | "fallbacks"> | undefined,
  config: Config,
  chosen?: string,
): string[] {
  const choice = { model: chosen ?? agent?.model, fallbacks: agent?.fallbacks };
  return modelChain(config, choice).map((entry) => entry.llm.model);
}

/** The model id a choice's `model` (an entry name or a model id) calls first. */
export function primaryModelOf(config: Config, model: string): string {
  return modelEntry(config, model)?.llm.model ?? model;
}

/** The agent used when `agents/` does not define the default agent. */
export function builtInAgent(id: string): AgentDefinition {
  return {
    id,
    name: "Pickle",
    description: "General assistant",
    tools: [...DEFAULT_TOOLS],
    approvals: {},
    memory: { ...DEFAULT_MEMORY },
    prompt: BUILT_IN_PROMPT,
    source: "built-in",
  };
}

/**
 * The agent's system prompt with `{{workspace}}` and `{{now}}` filled in. `{{now}}` is
 * the date, not the time: the system prompt heads the cached prompt, so it may change
 * only once a day; the model is given the exact time with the newest message instead.
 */
export function renderSystemPrompt(
  agent: AgentDefinition,
  values: { workspace: string; now: Date; timezone: string },
): string {
  return agent.prompt.replace(/\{\{\s*(workspace|now)\s*\}\}/g, (_, name: string) =>
    name === "workspace" ? values.workspace : formatLocalDate(values.now, values.timezone),
  );
}

/** `2025-06-01 (Sunday, Europe/Berlin)`: the date in the zone. */
export function formatLocalDate(now: Date, timezone: string): string {
  const parts = localTimeParts(now, timezone);
  return `${parts.date} (${parts.weekday}, ${timezone})`;
}

/** `2025-06-01T08:00:00+02:00 (Sunday, Europe/Berlin)`: the wall-clock time in the zone. */
export function formatLocalTime(now: Date, timezone: string): string {
  const parts = localTimeParts(now, timezone);
  return `${parts.date}T${parts.time}${parts.offset} (${parts.weekday}, ${timezone})`;
}

const PROMPT_TIME: Intl.DateTimeFormatOptions = {
  hourCycle: "h23",
  weekday: "long",
  year: "numeric",
  month: "2-digit",
  day: "2-digit",
  hour: "2-digit",
  minute: "2-digit",
  second: "2-digit",
  timeZoneName: "longOffset",
};

function localTimeParts(now: Date, timezone: string) {
  const parts = zoneFormatter("en-US", timezone, PROMPT_TIME).formatToParts(now);
  const part = (type: Intl.DateTimeFormatPartTypes) =>
    parts.find((candidate) => candidate.type === type)?.value ?? "";
  return {
    date: `${part("year")}-${part("month")}-${part("day")}`,
    time: `${part("hour")}:${part("minute")}:${part("second")}`,
    offset: part("timeZoneName").replace("GMT", "") || "+00:00",
    weekday: part("weekday"),
  };
}

/** Parses one AGENT.md; `file` names it in errors. Throws a UserError when it is broken. */
export function parseAgentFile(id: string, text: string, file: string): AgentDefinition {
  const { fields: raw, body: prompt } = parseFrontMatterFile(
    text,
    file,
    "name, description, optional model, fallbacks, max_tokens, tools, subagents, skills, memory",
  );
  const result = frontMatterSchema.safeParse(raw, { reportInput: true });
  if (!result.success) throw userErrorFromIssues(file, result.error.issues, frontMatterSchema);
  if (prompt === "") {
    throw new UserError(
      `${file}: the system prompt is empty; write the agent's instructions below the closing ---.`,
      { context: { file } },
    );
  }
  const fields = result.data;
  return {
    id,
    name: fields.name,
    description: fields.description,
    ...(fields.model === undefined ? {} : { model: fields.model }),
    ...(fields.fallbacks === undefined ? {} : { fallbacks: [...new Set(fields.fallbacks)] }),
    ...(fields.max_tokens === undefined ? {} : { maxTokens: fields.max_tokens }),
    tools: fields.tools ? [...new Set(fields.tools)] : [...DEFAULT_TOOLS],
    ...(fields.subagents === undefined ? {} : { subagents: [...new Set(fields.subagents)] }),
    ...(fields.skills === undefined ? {} : { skills: [...new Set(fields.skills)] }),
    approvals: fields.approvals ?? {},
    memory: agentMemory(fields.memory),
    ...(fields.budget === undefined ? {} : { budget: fields.budget }),
    ...(fields.bash?.network === undefined ? {} : { bashNetwork: fields.bash.network }),
    ...(fields.voice_replies === undefined || fields.voice_replies === "off"
      ? {}
      : { voiceReplies: fields.voice_replies }),
    ...(fields.web_fetch === undefined
      ? {}
      : { webFetch: { allowDomains: [...new Set(fields.web_fetch.allow_domains)] } }),
    prompt,
    source: file,
  };
}

function checkToolNames(tools: string[], ctx: z.RefinementCtx): void {
  for (const tool of tools) {
    if (isToolName(tool)) continue;
    const selector = parseMcpSelector(tool);
    if (selector) {
      const problem = mcpSelectorProblem(selector);
      if (problem) {
        ctx.addIssue({
          code: "custom",
          message: `bad MCP entry "${tool}": ${problem}`,
          params: { standalone: true } satisfies CustomIssueParams,
        });
      }
      continue;
    }
    const suggestion = didYouMean(tool, TOOL_NAMES);
    ctx.addIssue({
      code: "custom",
      message:
        `unknown tool "${tool}"${suggestion ? `; ${suggestion}` : ""} ` +
        `(allowed: ${TOOL_NAMES.join(", ")}, or mcp:<server> for an MCP server's tools); ` +
        "fix or remove it",
      params: { standalone: true } satisfies CustomIssueParams,
    });
  }
}

/**
 * Absolute paths of the folders in `dir` (agent folders, skill folders), sorted;
 * dot-folders and plain files are skipped, and a missing `dir` has none.
 */
export function subfolders(dir: string): string[] {
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch (thrown) {
    const code = (thrown as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") return [];
    throw thrown;
  }
  return names
    .filter((name) => !name.startsWith("."))
    .map((name) => path.join(dir, name))
    .filter((folder) => fs.statSync(folder, { throwIfNoEntry: false })?.isDirectory() === true)
    .sort();
}

function loadAgentFolder(folder: string): AgentDefinition {
  const id = path.basename(folder);
  if (!ID_PATTERN.test(id)) {
    throw new UserError(
      `${folder}: "${id}" is not a valid agent id; rename the folder using only letters, ` +
        "digits, - and _.",
      { context: { file: folder } },
    );
  }
  const file = path.join(folder, AGENT_FILE_NAME);
  const text = readFolderFile(folder, AGENT_FILE_NAME, "see agents/pickle/AGENT.md");
  return parseAgentFile(id, text, file);
}
