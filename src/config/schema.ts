/**
 * The schema of picklebot.yaml (docs/design.md §2.1): every key, its default and its checks,
 * in one place. Keys stay snake_case in the parsed {@link Config}.
 */
import path from "node:path";
import { z } from "zod";
import { CHAT_ADDRESS_FORMS, type ChatAddress, parseChatAddress } from "../base/chat-address.js";
import { isHeartbeatInterval, parseHeartbeatEvery } from "../base/heartbeat.js";
import { isLocalEndpoint } from "../base/local-endpoint.js";
import { hostTimeZone } from "../base/time-zone.js";
import {
  CHAT_PLATFORMS,
  type ChatPlatformKind,
  DEFAULT_DISCORD_CALL_TIMEOUT_MS,
  DEFAULT_MAX_ATTEMPTS,
  DEFAULT_MODEL_TIMEOUT_MS,
  DEFAULT_POOL_SIZE,
  DEFAULT_SLACK_CALL_TIMEOUT_MS,
} from "../ports/index.js";
import {
  type ApprovalPolicy,
  approvalPolicySchema,
  DEFAULT_APPROVAL_TIMEOUT_S,
  mcpPolicyServer,
  type PolicyTools,
} from "./approvals.js";
import { workspaceBudgetSchema } from "./budget.js";
import { fromText, httpUrl, modelPriceSchema } from "./fields.js";
import type { CustomIssueParams } from "./issues.js";
import { mcpServersSchema } from "./mcp.js";
import { closestMatch, didYouMean } from "./suggest.js";

/** Environment variables, as `process.env` holds them. */
export type Environment = Record<string, string | undefined>;

/** What the defaults depend on. */
export interface ConfigSchemaContext {
  /** Supplies the defaults of secrets and URLs (ANTHROPIC_API_KEY, DATABASE_URL…). */
  env: Environment;
  /** Absolute workspace path; `history.path` is resolved against it. */
  workspace: string;
  /**
   * The ids of the workspace's agents (`agents/<id>/AGENT.md` that loaded): `bindings`
   * may name these and `default_agent`. (Default: agent ids are not checked)
   */
  agentIds?: Iterable<string>;
  /**
   * The tools `approvals.policy` may name (the agents' tool registry).
   * (Default: tool names are not checked)
   */
  tools?: PolicyTools;
}

/** Letters, digits, `-` and `_`: the shape of agent and cron ids. */
export const ID_PATTERN = /^[A-Za-z0-9_-]+$/;

/** An instance id: at most 64 letters, digits, `-` and `_` (`cluster.instance_id`). */
export const INSTANCE_ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/** Hours finished jobs are kept when neither retention key is set: a week. */
export const DEFAULT_JOB_RETENTION_H = 168;

/**
 * How long finished jobs and delivered replies are kept: `queue.job_retention_h`, else
 * its old name `cluster.job_retention_h`, else {@link DEFAULT_JOB_RETENTION_H}.
 */
export function jobRetentionHours(config: {
  queue: { job_retention_h?: number | undefined };
  cluster: { job_retention_h?: number | undefined };
}): number {
  return config.queue.job_retention_h ?? config.cluster.job_retention_h ?? DEFAULT_JOB_RETENTION_H;
}

/** True when `Intl` knows the zone (e.g. `Europe/Berlin`, `UTC`). */
export function isValidTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/** Builds the picklebot.yaml schema; defaults read from `context.env`. */
export function buildConfigSchema(context: ConfigSchemaContext) {
  return z
    .strictObject({
      /** Agent used for chats that name none. */
      default_agent: z
        .string()
        .regex(ID_PATTERN)
        .describe("an agent id (letters, digits, - and _)")
        .default("pickle"),
      /** Default zone of crons and of `{{now}}`. */
      timezone: z
        .string()
        .refine(isValidTimeZone)
        .describe('an IANA time zone such as "Europe/Berlin" or "UTC"')
        .default(hostTimeZone),
      llm: llmSchema(context.env),
      /** Named models (docs/guides/models.md): agents, crons and chats pick one by name. */
      models: modelsSchema(),
      /** The service voice notes are transcribed by (docs/guides/chat-platforms.md). (Default: none) */
      speech_to_text: speechToTextSchema().optional(),
      queue: queueSchema(context.env),
      workers: workersSchema(),
      cluster: clusterSchema(context.env),
      history: historySchema(context.workspace),
      ...chatPlatformSections(context.env),
      http: httpSchema(),
      tools: toolsSchema(context.env),
      skills: skillsSchema(),
      bindings: bindingsSchema(),
      heartbeats: heartbeatsSchema(),
      approvals: approvalsSchema(context.tools),
      budget: workspaceBudgetSchema(),
      /** MCP servers whose tools agents may list as `mcp:<name>`. */
      mcp_servers: mcpServersSchema(),
      /** Spoken replies (agents with `voice_replies: always` or `in_kind`); absent: none. */
      text_to_speech: textToSpeechSchema().optional(),
    })
    .superRefine((config, ctx) => {
      if (context.agentIds) checkBoundAgents(config, new Set(context.agentIds), ctx);
      checkFallbackNames(config, ctx);
      checkPolicyServers(config, ctx);
      if (config.queue.backend === "postgres" && config.history.backend !== "postgres") {
        ctx.addIssue({
          code: "custom",
          path: ["history", "backend"],
          message:
            "must be postgres when queue.backend is postgres: every process of the cluster " +
            "must see the same sessions; set history.backend: postgres",
          params: { standalone: true } satisfies CustomIssueParams,
        });
      }
      if (config.queue.url !== undefined) return;
      for (const part of ["queue", "history"] as const) {
        if (config[part].backend !== "postgres") continue;
        ctx.addIssue({
          code: "custom",
          path: ["queue", "url"],
          message:
            `required when ${part}.backend is postgres; set DATABASE_URL in the environment ` +
            "or the workspace .env, or set queue.url (postgres://user:password@host/database)",
          params: { standalone: true } satisfies CustomIssueParams,
        });
        return;
      }
    })
    .transform((config) => ({
      ...config,
      models: localEntriesFree(
        withProviderKeys(config.models, config.llm.provider, context.env),
        config.llm,
      ),
    }));
}

/**
 * The `models:` entries, each on this machine or the local network (an OpenAI-compatible
 * base URL such as Ollama's, its own or `llm`'s) and without `prices` given a price of 0,
 * as `llm:` is (localModelFree): usage and budgets count it as free, not unpriced.
 */
function localEntriesFree<
  T extends {
    provider?: ProviderName | undefined;
    base_url?: string | undefined;
    prices?: z.output<ReturnType<typeof modelPriceSchema>> | undefined;
  },
>(models: Record<string, T>, llm: { provider: ProviderName; base_url?: string | undefined }) {
  const priced: Record<string, T> = {};
  for (const [name, entry] of Object.entries(models)) {
    const provider = entry.provider ?? llm.provider;
    const baseUrl = entry.base_url ?? (provider === llm.provider ? llm.base_url : undefined);
    const local =
      provider === "openai-compatible" && baseUrl !== undefined && isLocalEndpoint(baseUrl);
    priced[name] = local && entry.prices === undefined ? { ...entry, prices: FREE } : entry;
  }
  return priced;
}

/**
 * The `models:` entries, each of a provider other than `llm`'s that sets no `api_key`
 * given that provider's key from the environment, as `llm:` would be
 * (`ANTHROPIC_API_KEY`; `OPENAI_API_KEY` for OpenAI's own API). An entry of `llm`'s
 * provider takes `llm.api_key` instead (src/config/models.ts).
 */
function withProviderKeys<
  T extends {
    provider?: ProviderName | undefined;
    api_key?: string | undefined;
    base_url?: string | undefined;
  },
>(models: Record<string, T>, llmProvider: ProviderName, env: Environment): Record<string, T> {
  const keyed: Record<string, T> = {};
  for (const [name, entry] of Object.entries(models)) {
    const other = entry.provider !== undefined && entry.provider !== llmProvider;
    const key =
      other && !entry.api_key
        ? defaultApiKey({ provider: entry.provider ?? llmProvider, base_url: entry.base_url }, env)
        : undefined;
    keyed[name] = key === undefined ? entry : { ...entry, api_key: key };
  }
  return keyed;
}

/** A value of {@link MODEL_PROVIDER_KINDS} (what {@link ModelProviderKind} is, before Config exists). */
type ProviderName = (typeof MODEL_PROVIDER_KINDS)[number];

/** The validated configuration, with every default filled in. */
export type Config = z.output<ReturnType<typeof buildConfigSchema>>;

/**
 * The values `llm.provider` takes: one per entry of the model-provider registry
 * (src/agents/providers/index.ts), which must list each of them.
 */
export const MODEL_PROVIDER_KINDS = ["anthropic", "openai-compatible"] as const;

/**
 * `llm.provider` and an entry's `provider`: one of {@link MODEL_PROVIDER_KINDS}. Its error
 * says which one serves OpenAI and the local servers, whose names people write here.
 */
function providerSchema() {
  return z
    .enum(MODEL_PROVIDER_KINDS)
    .describe(
      `"anthropic", or "openai-compatible" for OpenAI, OpenRouter, Groq, Together, Ollama, LM Studio, vLLM and llama.cpp's server (docs/guides/models.md)`,
    );
}

/** The `llm` section of the validated configuration. */
export type LlmConfig = Config["llm"];

/** The `speech_to_text` section, when set. */
export type SpeechToTextConfig = NonNullable<Config["speech_to_text"]>;

/** A model provider `llm.provider` can name. */
export type ModelProviderKind = LlmConfig["provider"];

function llmSchema(env: Environment) {
  return z
    .strictObject({
      provider: providerSchema().default("anthropic"),
      model: z.string().min(1).default("claude-sonnet-4-6"),
      /**
       * Absent is allowed: the model call reports a missing key when it is made (a local
       * OpenAI-compatible server needs none). The default depends on the provider: see
       * {@link defaultApiKey}.
       */
      api_key: z.string().optional(),
      base_url: httpUrl().optional(),
      max_tokens: fromText(z.int().min(1)).default(4096),
      /** Tokens the model takes in one request. (Default: the model's, from a table) */
      context_window: fromText(z.int().min(8000)).optional(),
      /** The model takes images (and, on Anthropic's API, PDFs); false: they are described as text. */
      vision: z.boolean().default(true),
      timeout_s: fromText(z.number().positive()).default(DEFAULT_MODEL_TIMEOUT_MS / 1000),
      /** USD per million tokens, by model id: over the built-in table (src/agents/prices.ts). */
      prices: z.record(z.string().min(1), modelPriceSchema()).default({}),
      /**
       * How long the API caches the tools and system prompt (docs/guides/cost.md,
       * "Prompt cache").
       */
      prompt_cache_ttl: z.enum(["5m", "1h"]).default("1h"),
      /** Named models tried in order when a call to this one fails in a way retrying will not fix soon. */
      fallbacks: fallbackNamesSchema(),
      /** Seconds a model that failed is skipped (its fallback answers) before it is tried again. */
      fallback_cooldown_s: fromText(z.number().nonnegative()).default(DEFAULT_FALLBACK_COOLDOWN_S),
      /** Model steps of one batch job sent through the Message Batches API; later ones at full price. */
      batch_max_steps: fromText(z.int().min(0)).default(5),
      /** First wait between two polls of pending batches; it doubles while none ends, to 10 min. */
      batch_poll_s: fromText(z.number().positive()).default(30),
    })
    .transform((llm) => localModelFree({ ...llm, api_key: llm.api_key || defaultApiKey(llm, env) }))
    .prefault({});
}

/**
 * The key of an `llm` section that sets none: `ANTHROPIC_API_KEY` for Anthropic,
 * `OPENAI_API_KEY` for OpenAI's own API (`openai-compatible` without a `base_url`), and
 * none for any other endpoint, so a key is never sent where it was not meant to go.
 */
function defaultApiKey(
  llm: { provider: (typeof MODEL_PROVIDER_KINDS)[number]; base_url?: string | undefined },
  env: Environment,
): string | undefined {
  if (llm.provider === "anthropic") return env.ANTHROPIC_API_KEY || undefined;
  return llm.base_url === undefined ? env.OPENAI_API_KEY || undefined : undefined;
}

/**
 * The section with a price of 0 for its model when the model runs on this machine or
 * the local network (an OpenAI-compatible `base_url` such as Ollama's), unless
 * `llm.prices` prices it: usage reports and budgets then count it as free, not unpriced.
 */
function localModelFree<
  T extends {
    provider: string;
    model: string;
    base_url?: string | undefined;
    prices: Record<string, z.output<ReturnType<typeof modelPriceSchema>>>;
  },
>(llm: T): T {
  const local =
    llm.provider === "openai-compatible" &&
    llm.base_url !== undefined &&
    isLocalEndpoint(llm.base_url);
  if (!local || llm.prices[llm.model] !== undefined) return llm;
  return { ...llm, prices: { ...llm.prices, [llm.model]: FREE } };
}

/** The price of a model on this machine or the local network. */
const FREE = { input: 0, output: 0, cache_read: 0, cache_write: 0 };

/** The name `llm:` goes by among the named models: the default entry. */
export const DEFAULT_MODEL_ENTRY = "default";

/** Seconds a failed model is skipped by default (`llm.fallback_cooldown_s`). */
export const DEFAULT_FALLBACK_COOLDOWN_S = 300;

/** A list of named models (`fallbacks:`). */
function fallbackNamesSchema() {
  return z.array(z.string().min(1).describe("the name of a model entry")).default([]);
}

/**
 * `models:`: named entries over `llm`'s settings. An entry without `provider` has
 * `llm.provider`'s; with the same provider, it has `llm.api_key` and `llm.base_url`
 * unless it sets its own (docs/guides/models.md, "Named models").
 */
function modelsSchema() {
  const entry = z.strictObject({
    provider: providerSchema().optional(),
    model: z.string().min(1),
    api_key: z.string().optional(),
    base_url: httpUrl().optional(),
    max_tokens: fromText(z.int().min(1)).optional(),
    context_window: fromText(z.int().min(8000)).optional(),
    /** This entry's model takes images; not inherited from `llm`. (Default: true) */
    vision: z.boolean().optional(),
    timeout_s: fromText(z.number().positive()).optional(),
    prompt_cache_ttl: z.enum(["5m", "1h"]).optional(),
    /** USD per million tokens of this entry's model. */
    prices: modelPriceSchema().optional(),
    fallbacks: fallbackNamesSchema(),
  });
  const name = z
    .string()
    .regex(ID_PATTERN)
    .describe("a model entry name (letters, digits, - and _)");
  return z.record(name, entry).default({});
}

/**
 * Every `fallbacks:` of picklebot.yaml names an entry of `models:` (or `default`), and no
 * entry takes the name `default`.
 */
function checkFallbackNames(
  config: { llm: { fallbacks: string[] }; models: Record<string, { fallbacks: string[] }> },
  ctx: z.RefinementCtx,
): void {
  if (Object.hasOwn(config.models, DEFAULT_MODEL_ENTRY)) {
    ctx.addIssue({
      code: "custom",
      path: ["models", DEFAULT_MODEL_ENTRY],
      message: `"${DEFAULT_MODEL_ENTRY}" is the name of the llm: section; give this entry another name`,
      params: { standalone: true } satisfies CustomIssueParams,
    });
  }
  const known = [DEFAULT_MODEL_ENTRY, ...Object.keys(config.models)];
  const lists: Array<[Array<string | number>, string[]]> = [
    [["llm", "fallbacks"], config.llm.fallbacks],
    ...Object.entries(config.models).map(
      ([entry, { fallbacks }]): [Array<string | number>, string[]] => [
        ["models", entry, "fallbacks"],
        fallbacks,
      ],
    ),
  ];
  for (const [path, names] of lists) {
    names.forEach((name, index) => {
      if (known.includes(name)) return;
      const suggestion = didYouMean(name, known);
      ctx.addIssue({
        code: "custom",
        path: [...path, index],
        message: `unknown model "${name}"${suggestion ? `; ${suggestion}` : ""} (named models: ${known.join(", ")}); name one of those or add it under models:`,
        params: { standalone: true } satisfies CustomIssueParams,
      });
    });
  }
}

/** An OpenAI-compatible `/audio/transcriptions` endpoint: OpenAI, Groq, faster-whisper, whisper.cpp. */
function speechToTextSchema() {
  return z.strictObject({
    /** Root of the API, `/v1` included: `https://api.openai.com/v1`. */
    base_url: httpUrl(),
    /** Sent as `Authorization: Bearer`; a self-hosted server may need none. (Default: none) */
    api_key: z.string().optional(),
    /** `whisper-1`, `gpt-4o-mini-transcribe`, `whisper-large-v3`… */
    model: z.string().min(1),
    /**
     * USD per minute of audio: each transcription's cost goes into the usage ledger (and
     * counts against budgets). (Default: none, transcriptions are not counted)
     */
    price_per_minute: fromText(
      z.number().min(0).describe("a price in USD per minute of audio, such as 0.006"),
    ).optional(),
  });
}

function queueSchema(env: Environment) {
  return z
    .strictObject({
      backend: z.enum(["sqlite", "memory", "postgres"]).default("sqlite"),
      url: z
        .string()
        .regex(/^postgres(ql)?:\/\//)
        .describe("a PostgreSQL URL (postgres://user:password@host/database)")
        .optional()
        .transform((url) => url ?? (env.DATABASE_URL || undefined)),
      /** Connections in each process's pool (PostgreSQL; one LISTEN connection comes on top). */
      pool_size: fromText(z.int().min(1).max(1000)).default(DEFAULT_POOL_SIZE),
      /** Hours done and failed jobs and delivered replies are kept. (Default: 168, a week) */
      job_retention_h: fromText(z.number().positive()).optional(),
    })
    .prefault({});
}

/** Several processes on one PostgreSQL database (docs/operations/distributed-mode.md). */
function clusterSchema(env: Environment) {
  return z
    .strictObject({
      /** (Default: PICKLEBOT_INSTANCE_ID, then the host name) */
      instance_id: z
        .string()
        .optional()
        .transform((value, ctx) => {
          const id = value ?? (env.PICKLEBOT_INSTANCE_ID || undefined);
          if (id === undefined || INSTANCE_ID_PATTERN.test(id)) return id;
          ctx.addIssue({
            code: "custom",
            message: `expected an instance id of 1 to 64 letters, digits, - and _ (set here or in PICKLEBOT_INSTANCE_ID), found ${JSON.stringify(id)}`,
            params: { standalone: true } satisfies CustomIssueParams,
          });
          return z.NEVER;
        }),
      heartbeat_s: fromText(z.number().positive()).default(5),
      instance_ttl_s: fromText(z.number().positive()).default(30),
      leader_ttl_s: fromText(z.number().positive()).default(30),
      /** Old name of `queue.job_retention_h`, still read when that one is not set. */
      job_retention_h: fromText(z.number().positive()).optional(),
    })
    .superRefine((cluster, ctx) => {
      if (cluster.instance_ttl_s > cluster.heartbeat_s) return;
      ctx.addIssue({
        code: "custom",
        path: ["instance_ttl_s"],
        message: `must be longer than cluster.heartbeat_s (${cluster.heartbeat_s}), or live processes are taken for dead; raise it to at least ${cluster.heartbeat_s * 3}`,
        params: { standalone: true } satisfies CustomIssueParams,
      });
    })
    .prefault({});
}

function workersSchema() {
  return z
    .strictObject({
      agent_concurrency: fromText(z.int().min(1)).default(4),
      max_attempts: fromText(z.int().min(1)).default(DEFAULT_MAX_ATTEMPTS),
      job_timeout_s: fromText(z.number().positive()).default(300),
      /** How long a job rides out an unavailable service before such failures count. */
      outage_budget_s: fromText(z.number().min(0)).default(300),
      /** How deep subagents may nest: a subagent at this depth cannot call another. */
      subagent_max_depth: fromText(z.int().min(1).max(10)).default(3),
      /** How long a job waits for its subagent before the call fails as timed out. */
      subagent_timeout_s: fromText(z.number().positive()).default(3600),
    })
    .prefault({});
}

function historySchema(workspace: string) {
  return z
    .strictObject({
      backend: z.enum(["sqlite", "jsonl", "postgres"]).default("sqlite"),
      path: z
        .string()
        .min(1)
        .default("history")
        .transform((folder) => path.resolve(workspace, folder)),
      max_messages: fromText(z.int().min(2)).default(200),
      /**
       * Tokens of the latest whole turns a compaction's summary keeps word for word after
       * it (docs/decisions/compaction-keeps-recent-turns.md); 0 summarises everything.
       */
      keep_verbatim_tokens: fromText(z.int().min(0)).default(20_000),
      /**
       * SQLite: `full` fsyncs every commit (nothing committed is lost on a power cut);
       * `normal` is several times faster but a power cut can lose the last commits.
       */
      synchronous: z
        .enum(["full", "normal"])
        .describe(
          '"full" (every commit on disk, the default) or "normal" (faster; a power cut can lose the last commits)',
        )
        .default("full"),
    })
    .prefault({});
}

/** Each chat platform's section; a platform of CHAT_PLATFORMS without one does not compile. */
function chatPlatformSections(env: Environment) {
  return {
    telegram: telegramSchema(env),
    discord: discordSchema(env),
    slack: slackSchema(env),
  } satisfies Record<ChatPlatformKind, z.ZodType>;
}

function telegramSchema(env: Environment) {
  const userId = fromText(
    z.int().positive().describe("a Telegram user id (a number such as 123456789)"),
  );
  return z
    .strictObject({
      enabled: flag().default(false),
      bot_token: secret(env, "TELEGRAM_BOT_TOKEN"),
      allowed_user_ids: z.array(userId).default([]),
      api_root: httpUrl().optional(),
    })
    .superRefine(requireTokenWhenEnabled("telegram", "TELEGRAM_BOT_TOKEN"))
    .prefault({});
}

function discordSchema(env: Environment) {
  return z
    .strictObject({
      enabled: flag().default(false),
      bot_token: secret(env, "DISCORD_BOT_TOKEN"),
      allowed_user_ids: z.array(snowflake("user")).default([]),
      channel_ids: z.array(snowflake("channel")).default([]),
      api_base: httpUrl().optional(),
      call_timeout_s: fromText(z.number().positive()).default(
        DEFAULT_DISCORD_CALL_TIMEOUT_MS / 1000,
      ),
    })
    .superRefine(requireTokenWhenEnabled("discord", "DISCORD_BOT_TOKEN"))
    .prefault({});
}

function slackSchema(env: Environment) {
  const userId = z
    .string()
    .regex(CHAT_PLATFORMS.slack.userId)
    .describe('a Slack member id such as "U012AB3CD" (profile → ⋮ → Copy member ID)');
  return z
    .strictObject({
      enabled: flag().default(false),
      bot_token: slackToken(
        secret(env, "SLACK_BOT_TOKEN"),
        "xoxb-",
        "the Bot User OAuth Token (OAuth & Permissions)",
      ),
      app_token: slackToken(
        secret(env, "SLACK_APP_TOKEN"),
        "xapp-",
        "an app-level token with connections:write (Basic Information)",
      ),
      allowed_user_ids: z.array(userId).default([]),
      api_url: httpUrl().optional(),
      call_timeout_s: fromText(z.number().positive()).default(DEFAULT_SLACK_CALL_TIMEOUT_MS / 1000),
    })
    .superRefine(requireTokenWhenEnabled("slack", "SLACK_BOT_TOKEN"))
    .superRefine(requireTokenWhenEnabled("slack", "SLACK_APP_TOKEN", "app_token"))
    .prefault({});
}

/** A Slack token of one kind: it starts with `prefix`; `what` says which token belongs here. */
function slackToken(token: ReturnType<typeof secret>, prefix: string, what: string) {
  return token.refine((value) => value === undefined || value.startsWith(prefix), {
    message: `a token starting with ${prefix}, ${what}`,
  });
}

function httpSchema() {
  return z
    .strictObject({
      enabled: flag().default(true),
      host: z.string().min(1).default("127.0.0.1"),
      port: fromText(z.int().min(0).max(65535).describe("a port number from 0 to 65535")).default(
        8787,
      ),
      /**
       * The access token every HTTP client needs, on every bind (without it the server
       * generates one into history/http-token). Write it as `${PICKLEBOT_HTTP_TOKEN}`.
       */
      token: z
        .string()
        .min(16)
        .describe("a token of at least 16 characters, e.g. from the environment")
        .optional(),
      /** The dashboard shows everything and changes nothing: no buttons, every POST refused. */
      read_only: flag().default(false),
      /** Serve the web dashboard at `/` (false: only /healthz, /metrics and /events). */
      dashboard: flag().default(true),
    })
    .prefault({});
}

/** `skills`: how agents' skills are offered (docs/guides/tools-and-skills.md, "Prompt budget"). */
function skillsSchema() {
  return z
    .strictObject({
      /** Longest listing of an agent's skills in its system prompt; the rest are left out. */
      max_listing_chars: fromText(
        z.int().min(200).describe("a whole number of characters, at least 200"),
      ).default(8000),
    })
    .prefault({});
}

/**
 * `text_to_speech`: an OpenAI-compatible `/audio/speech` endpoint that speaks the replies
 * of agents with `voice_replies` (docs/guides/chat-platforms.md, "Spoken replies").
 */
function textToSpeechSchema() {
  return z.strictObject({
    /** The API root the endpoint is below, with its version: `<base_url>/audio/speech`. */
    base_url: httpUrl().default("https://api.openai.com/v1"),
    api_key: z.string().min(1),
    model: z.string().min(1).default("gpt-4o-mini-tts"),
    voice: z.string().min(1).default("alloy"),
    /** How long one synthesis may take before it is abandoned. */
    timeout_s: fromText(z.number().positive()).default(60),
  });
}

/** `tools`: settings of the agents' tools. */
function toolsSchema(env: Environment) {
  return z
    .strictObject({
      bash: z
        .strictObject({
          /** bwrap, or none: bash unconfined (only when the owner says so). */
          sandbox: z
            .enum(["bwrap", "none"])
            .describe('"bwrap" (bubblewrap, the default) or "none" (no sandbox)')
            .default("bwrap"),
          /** Whether bash may open network connections; AGENT.md `bash.network` overrides it. */
          network: flag().default(false),
        })
        .prefault({}),
      web_fetch: z
        .strictObject({
          /**
           * DANGEROUS: lets web_fetch reach loopback, private and link-local addresses
           * (this host's services, the LAN, cloud metadata). Meant for tests only.
           */
          allow_private_addresses: flag().default(false),
        })
        .prefault({}),
      web_search: webSearchSchema(env),
      schedule: scheduleToolSchema(),
    })
    .prefault({});
}

/** The backends `tools.web_search.backend` names (src/agents/tools/web-search.ts). */
export const WEB_SEARCH_BACKENDS = ["anthropic", "searxng", "brave"] as const;

/** `tools.web_search`: where `web_search` searches (docs/guides/tools-and-skills.md, "web_search"). */
function webSearchSchema(env: Environment) {
  return z
    .strictObject({
      /** anthropic (the API's server-side search), searxng or brave; absent: no search. */
      backend: z.enum(WEB_SEARCH_BACKENDS).describe('"anthropic", "searxng" or "brave"').optional(),
      /** The SearXNG instance's root (http://127.0.0.1:8888); for brave, its API's root. */
      base_url: httpUrl().optional(),
      /** The Brave Search API key (X-Subscription-Token); default: $BRAVE_API_KEY. */
      api_key: secret(env, "BRAVE_API_KEY"),
      /** Searches one turn may run; the rest are refused with a message to the model. */
      max_per_turn: fromText(z.int().min(1).max(50)).default(5),
      /** Time one search may take before it is retried. */
      timeout_s: fromText(z.number().positive()).default(15),
    })
    .superRefine((search, ctx) => {
      const missing =
        search.backend === "searxng" && search.base_url === undefined
          ? { key: "base_url", fix: "set it to your SearXNG's root, e.g. http://127.0.0.1:8888" }
          : search.backend === "brave" && search.api_key === undefined
            ? { key: "api_key", fix: "set BRAVE_API_KEY in the environment or the workspace .env" }
            : null;
      if (missing === null) return;
      ctx.addIssue({
        code: "custom",
        path: [missing.key],
        message: `required when tools.web_search.backend is ${search.backend}; ${missing.fix}`,
        params: { standalone: true } satisfies CustomIssueParams,
      });
    })
    .prefault({});
}

/** `tools.schedule`: the limits of the reminders agents set up (docs/guides/reminders.md). */
function scheduleToolSchema() {
  return z
    .strictObject({
      /** Active schedules one chat may have at once. */
      max_per_chat: fromText(z.int().min(1).describe("a whole number, at least 1")).default(20),
      /** Shortest time between two runs of a recurring schedule, in minutes. */
      min_interval_m: fromText(
        z.int().min(1).describe("a whole number of minutes, at least 1"),
      ).default(60),
      /** The zone of each chat's person, by chat address; others use `timezone`. */
      time_zones: z
        .record(
          z.string().refine((text) => parseChatAddress(text) !== null, CHAT_ADDRESS_FORMS),
          z
            .string()
            .refine(isValidTimeZone)
            .describe('an IANA time zone such as "Europe/Berlin" or "UTC"'),
        )
        .default({}),
    })
    .prefault({});
}

/** `heartbeats`: chats' recurring idle checks (docs/guides/reminders.md, "Heartbeats"). */
function heartbeatsSchema() {
  return z
    .strictObject({
      /** Shortest interval `/heartbeat every …` and `chats` may set, in minutes. */
      min_interval_m: fromText(
        z.int().min(1).describe("a whole number of minutes, at least 1"),
      ).default(30),
      /** A heartbeat per chat address, set here rather than with /heartbeat in the chat. */
      chats: z
        .record(
          z.string(),
          z.strictObject({
            /** How often: `30m`, `2h`. */
            every: z.string().superRefine((every, ctx) => {
              // Its length and evenness are checked below, against min_interval_m.
              const read = parseHeartbeatEvery(every, 0);
              if (!isHeartbeatInterval(every) && typeof read === "string") {
                standaloneIssue(ctx, [], read);
              }
            }),
            /** What the agent checks at each tick. */
            check: z.string().trim().min(1).describe("what the agent checks, in words"),
          }),
        )
        .superRefine((chats, ctx) => {
          for (const address of Object.keys(chats)) {
            if (parseChatAddress(address) !== null) continue;
            standaloneIssue(
              ctx,
              [address],
              `"${address}" is not a chat address; write ${CHAT_ADDRESS_FORMS}`,
            );
          }
        })
        .default({}),
    })
    .superRefine((heartbeats, ctx) => {
      for (const [chat, { every }] of Object.entries(heartbeats.chats)) {
        if (!isHeartbeatInterval(every)) continue;
        const read = parseHeartbeatEvery(every, heartbeats.min_interval_m);
        if (typeof read === "string") standaloneIssue(ctx, ["chats", chat, "every"], read);
      }
    })
    .prefault({});
}

/** An issue whose message is a whole sentence (no "expected …, found …" around it). */
function standaloneIssue(ctx: z.RefinementCtx, path: string[], message: string): void {
  ctx.addIssue({
    code: "custom",
    path,
    message,
    params: { standalone: true } satisfies CustomIssueParams,
  });
}

/** `bindings`: chats pinned to an agent (docs/guides/agents.md, "An agent per chat"). */
function bindingsSchema() {
  return z
    .array(
      z.strictObject({
        chat: z
          .string()
          .transform((text, ctx): ChatAddress => {
            const address = parseChatAddress(text.trim());
            if (address) return address;
            ctx.addIssue({ code: "custom", message: CHAT_ADDRESS_FORMS, input: text });
            return z.NEVER;
          })
          .describe(`a chat address, ${CHAT_ADDRESS_FORMS}, such as telegram:123456789`),
        agent: z.string().regex(ID_PATTERN).describe("an agent id (letters, digits, - and _)"),
      }),
    )
    .default([])
    .superRefine((bindings, ctx) => {
      const seen = new Map<string, number>();
      for (const [index, { chat }] of bindings.entries()) {
        const text = `${chat.platform}:${chat.chatId}`;
        const first = seen.get(text);
        if (first === undefined) {
          seen.set(text, index);
          continue;
        }
        ctx.addIssue({
          code: "custom",
          path: [index, "chat"],
          message: `${text} is already bound by bindings[${first}]; a chat has one agent, so remove one of the two`,
          params: { standalone: true } satisfies CustomIssueParams,
        });
      }
    });
}

/** `approvals`: the default tool-call policy and how long the owner has to answer. */
function approvalsSchema(tools: PolicyTools | undefined) {
  return z
    .strictObject({
      policy: approvalPolicySchema(tools).default({}),
      timeout_s: fromText(z.int().min(1)).default(DEFAULT_APPROVAL_TIMEOUT_S),
    })
    .prefault({});
}

/** Every bound agent must be one the workspace has, or `default_agent` (built in). */
function checkBoundAgents(
  config: { default_agent: string; bindings: Array<{ agent: string }> },
  agentIds: ReadonlySet<string>,
  ctx: z.RefinementCtx,
): void {
  const known = [...new Set([config.default_agent, ...agentIds])].sort();
  config.bindings.forEach(({ agent }, index) => {
    if (known.includes(agent)) return;
    const suggestion = didYouMean(agent, known);
    ctx.addIssue({
      code: "custom",
      path: ["bindings", index, "agent"],
      message: `unknown agent "${agent}"${suggestion ? `; ${suggestion}` : ""} (known: ${known.join(", ")}); name one of those or create agents/${agent}/AGENT.md`,
      params: { standalone: true } satisfies CustomIssueParams,
    });
  });
}

/**
 * Every MCP server `approvals.policy` names must be one of `mcp_servers`: an entry for no
 * server matches nothing, so the server the owner meant would run without it.
 */
function checkPolicyServers(
  config: { approvals: { policy: ApprovalPolicy }; mcp_servers: Record<string, unknown> },
  ctx: z.RefinementCtx,
): void {
  const configured = Object.keys(config.mcp_servers);
  for (const entry of Object.keys(config.approvals.policy)) {
    const server = mcpPolicyServer(entry);
    if (server === null || configured.includes(server)) continue;
    const match = closestMatch(server, configured);
    const suggestion = match
      ? `; did you mean "mcp:${match}${entry.slice(`mcp:${server}`.length)}"?`
      : "";
    ctx.addIssue({
      code: "custom",
      path: ["approvals", "policy", entry],
      message:
        `names no server of mcp_servers${suggestion} (configured: ${configured.join(", ") || "none"}); ` +
        "correct the entry, or add the server under mcp_servers",
      params: { standalone: true } satisfies CustomIssueParams,
    });
  }
}

function requireTokenWhenEnabled(
  bus: string,
  envName: string,
  key: "bot_token" | "app_token" = "bot_token",
) {
  return (
    section: { enabled: boolean } & Partial<Record<typeof key, string | undefined>>,
    ctx: z.RefinementCtx,
  ) => {
    if (!section.enabled || section[key] !== undefined) return;
    ctx.addIssue({
      code: "custom",
      path: [key],
      message:
        `required when ${bus}.enabled is true; set ${envName} in the environment or the ` +
        `workspace .env, or set ${bus}.${key}, or set ${bus}.enabled: false`,
      params: { standalone: true } satisfies CustomIssueParams,
    });
  };
}

/** A secret string; when the key is absent it comes from the environment variable. */
function secret(env: Environment, envName: string) {
  return z
    .string()
    .optional()
    .transform((value) => (value === undefined ? env[envName] : value) || undefined);
}

/** A Discord id: digits, best quoted (snowflakes are too long for YAML numbers). */
function snowflake(kind: string) {
  return z.preprocess(
    (value) => (typeof value === "number" && Number.isSafeInteger(value) ? String(value) : value),
    z
      .string()
      .regex(/^\d+$/)
      .describe(`a Discord ${kind} id written as quoted digits, e.g. "80351110224678912"`),
  );
}

/** Booleans may also arrive as the text "true" / "false", e.g. from `${ENABLED}`. */
function flag() {
  return z.preprocess(
    (value) => (value === "true" ? true : value === "false" ? false : value),
    z.boolean(),
  );
}
