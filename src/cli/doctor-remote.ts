/**
 * The checks of `picklebot doctor` that ask a service: the model API, Telegram, Discord,
 * Slack (each one or two cheap, authenticated requests, none with `--offline`), the SearXNG
 * of `web_search` (one search), the MCP servers and PostgreSQL.
 */
import { checkMcpServers as connectToEachMcpServer } from "../agents/mcp/servers.js";
import { modelProviders } from "../agents/providers/index.js";
import { envReferenceFor, OPENAI_BASE_URL } from "../agents/providers/openai-compatible.js";
import { createSearxngBackend } from "../agents/tools/search-backends.js";
import { assertNever } from "../base/assert-never.js";
import { CHAT_PLATFORM_KINDS } from "../base/chat-address.js";
import { toError } from "../base/errors.js";
import { isLocalEndpoint } from "../base/local-endpoint.js";
import {
  type Config,
  CREDENTIAL_SERVICES,
  type CredentialService,
  type LlmConfig,
  type ModelEntry,
  type ModelProviderKind,
  modelEntry,
  modelEntryNames,
  modelEntrySection,
} from "../config/index.js";
import type { ChatPlatformKind } from "../ports/index.js";
import { type CheckResult, type DoctorCheck, needsConfig, result } from "./doctor-checks.js";

/** Longest wait for one service's answer. */
const REQUEST_TIMEOUT_MS = 10_000;

const ANTHROPIC_API = "https://api.anthropic.com";
const TELEGRAM_API = "https://api.telegram.org";
const DISCORD_API = "https://discord.com/api";
const SLACK_API = "https://slack.com/api";
/** The Messages API version every request names (the SDK sends the same). */
const ANTHROPIC_VERSION = "2023-06-01";

const OFFLINE = "not checked (--offline)";

/** A service as doctor names it: its credential and fix, what an accepted one means. */
interface Service extends CredentialService {
  /** Said when the credential is accepted. */
  ok: string;
  /** The setting that points at the service, when it cannot be reached. */
  where: string;
}

/** The answer of one GET: its status, or why none came. */
type Answer = { status: number } | { unreachable: string };

async function get(
  fetcher: typeof fetch,
  url: string,
  headers: Record<string, string>,
): Promise<Answer> {
  try {
    const response = await fetcher(url, {
      headers,
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    await response.body?.cancel();
    return { status: response.status };
  } catch (thrown) {
    return unreachable(thrown);
  }
}

/** Why a request got no answer, with the cause under fetch's own words. */
function unreachable(thrown: unknown): { unreachable: string } {
  const error = toError(thrown);
  const cause = error.cause instanceof Error ? ` (${error.cause.message})` : "";
  return { unreachable: `${error.message}${cause}` };
}

/**
 * The line for one service's answer: 2xx ok, 401/403 the credential refused, anything
 * else (or no answer) the service not reachable as configured.
 */
function judge(check: string, answer: Answer, service: Service): CheckResult {
  if ("unreachable" in answer) {
    return result(
      check,
      "fail",
      `cannot reach ${service.name}: ${answer.unreachable}`,
      `check the network and ${service.where}`,
    );
  }
  if (answer.status >= 200 && answer.status < 300) return result(check, "ok", service.ok);
  if (answer.status === 401 || answer.status === 403) {
    return result(
      check,
      "fail",
      `${service.name} refused ${service.credential} (HTTP ${answer.status})`,
      service.fix,
    );
  }
  return result(
    check,
    "fail",
    `${service.name} answered HTTP ${answer.status}`,
    `check ${service.where}; try again later if the service is having trouble`,
  );
}

/**
 * The model key check of one `llm.provider`, for the entry whose keys are under
 * `section` (`llm`, `models.haiku`).
 */
type ModelKeyCheck = (
  llm: LlmConfig,
  offline: boolean,
  fetcher: typeof fetch,
  section: string,
) => Promise<CheckResult>;

/** How each provider's key is checked: one entry per `llm.provider` value. */
const modelKeyChecks = {
  anthropic: checkAnthropicKey,
  "openai-compatible": checkOpenAiCompatibleKey,
} satisfies Record<ModelProviderKind, ModelKeyCheck>;

/**
 * Every named model's key, each with its provider's check: one line, the worst status
 * first; with `models:` entries each part is named after its entry. Then the features
 * the default provider turns off, when it turns some off.
 */
export const checkModelKey: DoctorCheck = async (context) => {
  const keys = await checkModelKeys(context);
  const provider = context.config?.llm.provider;
  const off = provider === undefined ? [] : modelProviders[provider].featuresOff;
  if (off.length === 0) return keys;
  const features = result(
    "model features",
    "ok",
    `${provider} turns off what only Anthropic's API has: ${off.join("; ")}`,
  );
  return [keys, features];
};

const checkModelKeys = async ({
  config,
  offline,
  fetch: fetcher,
}: Parameters<DoctorCheck>[0]): Promise<CheckResult> => {
  if (!config) return needsConfig("model key");
  const entries = modelEntryNames(config).map((name) => modelEntry(config, name) as ModelEntry);
  const checked = await Promise.all(
    entries.map(({ name, llm }) => {
      const check: ModelKeyCheck = modelKeyChecks[llm.provider];
      return check(llm, offline, fetcher, modelEntrySection(name));
    }),
  );
  const [only] = checked;
  if (only && checked.length === 1) return only;
  return worstOfEntries(entries, checked);
};

const STATUS_ORDER: readonly CheckResult["status"][] = ["fail", "warn", "skip", "ok"];

/** One result for several entries: the worst status, each entry's detail, the first fix. */
function worstOfEntries(entries: readonly ModelEntry[], checked: CheckResult[]): CheckResult {
  const named = checked.map((each, index) => ({ ...each, name: entries[index]?.name ?? "" }));
  const worst = [...named].sort(
    (a, b) => STATUS_ORDER.indexOf(a.status) - STATUS_ORDER.indexOf(b.status),
  )[0] as (typeof named)[number];
  const detail = named.map((each) => `${each.name}: ${each.detail}`).join("; ");
  const fix = worst.fix === undefined ? undefined : `${worst.name}: ${worst.fix}`;
  return result("model key", worst.status, detail, fix);
}

/**
 * An OpenAI-compatible endpoint: a hosted one needs a key; `/models` must answer with
 * JSON (a web page means a base URL without its `/v1`) and list `llm.model`.
 */
async function checkOpenAiCompatibleKey(
  llm: LlmConfig,
  offline: boolean,
  fetcher: typeof fetch,
  section = "llm",
): Promise<CheckResult> {
  const baseUrl = (llm.base_url ?? OPENAI_BASE_URL).replace(/\/+$/, "");
  const local = isLocalEndpoint(baseUrl);
  if (!llm.api_key && !local) {
    return result(
      "model key",
      "fail",
      `no API key for the hosted endpoint ${baseUrl}: picklebot.yaml ${section}.api_key is unset`,
      `set ${section}.api_key: ${envReferenceFor(baseUrl)} (the variable your key is in) and put the key in the workspace's .env`,
    );
  }
  const keyWords = llm.api_key ? "key present" : "no key (a local server needs none)";
  if (offline) return result("model key", "skip", `${keyWords}; ${OFFLINE}`);
  const headers: Record<string, string> = llm.api_key
    ? { authorization: `Bearer ${llm.api_key}` }
    : {};
  const listed = await listModels(fetcher, `${baseUrl}/models`, headers);
  const service: Service = {
    ...CREDENTIAL_SERVICES["openai-compatible"],
    name: `the model endpoint ${baseUrl}`,
    ok: `${keyWords}; ${baseUrl} lists ${llm.model}`,
    where: `${section}.base_url in picklebot.yaml (it usually ends in /v1)`,
  };
  if ("problem" in listed) {
    return result(
      "model key",
      "fail",
      `${baseUrl}/models ${listed.problem}`,
      `check ${service.where}`,
    );
  }
  if (!("ids" in listed)) return judge("model key", listed, service);
  if (listed.ids.includes(llm.model)) return judge("model key", { status: 200 }, service);
  const shown = listed.ids.slice(0, 10).join(", ") || "no models";
  return result(
    "model key",
    "fail",
    `in picklebot.yaml, ${section}.model ${llm.model} is not in the endpoint's /v1/models list (it lists ${shown}${listed.ids.length > 10 ? ", …" : ""})`,
    `set ${section}.model in picklebot.yaml to one of them (for Ollama: ollama pull the model first)`,
  );
}

/** A GET's answer with its JSON body (undefined when it is not JSON), or why none came. */
type JsonAnswer = { status: number; html: boolean; body: unknown } | { unreachable: string };

/** One GET whose answer is read as JSON; a web page is told apart (`html`). */
async function getJson(
  fetcher: typeof fetch,
  url: string,
  headers: Record<string, string>,
): Promise<JsonAnswer> {
  let response: Response;
  try {
    response = await fetcher(url, { headers, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
  } catch (thrown) {
    return unreachable(thrown);
  }
  const html = (response.headers.get("content-type") ?? "").includes("text/html");
  if (html) {
    await response.body?.cancel();
    return { status: response.status, html, body: undefined };
  }
  const body: unknown = await response.json().catch(() => undefined);
  return { status: response.status, html, body };
}

/** The model ids a `/models` answer lists, or the answer that is not such a list. */
async function listModels(
  fetcher: typeof fetch,
  url: string,
  headers: Record<string, string>,
): Promise<Answer | { ids: string[] } | { problem: string }> {
  const answer = await getJson(fetcher, url, headers);
  if ("unreachable" in answer) return answer;
  if (answer.html) return { problem: "answered with a web page, not the OpenAI API" };
  if (answer.status < 200 || answer.status >= 300) return { status: answer.status };
  const data = (answer.body as { data?: unknown } | undefined)?.data;
  if (!Array.isArray(data)) return { problem: "answered with something other than a model list" };
  return { ids: data.map((entry: { id?: unknown }) => String(entry?.id)) };
}

/**
 * An Anthropic endpoint: the key must be set; `GET /v1/models/{model}` (free, and it
 * needs a valid key) must know the entry's model, an alias such as `claude-sonnet-4-6`
 * included.
 */
async function checkAnthropicKey(
  llm: LlmConfig,
  offline: boolean,
  fetcher: typeof fetch,
  section: string,
): Promise<CheckResult> {
  const { api_key: apiKey } = llm;
  if (!apiKey) {
    return result(
      "model key",
      "fail",
      `no Anthropic API key: picklebot.yaml ${section}.api_key is unset and ANTHROPIC_API_KEY is not in the environment`,
      `put ANTHROPIC_API_KEY=... in the workspace's .env (or export it), or set ${section}.api_key in picklebot.yaml`,
    );
  }
  if (offline) return result("model key", "skip", `present; ${OFFLINE}`);
  const root = (llm.base_url ?? ANTHROPIC_API).replace(/\/+$/, "");
  const path = `/v1/models/${encodeURIComponent(llm.model)}`;
  const answer = await getJson(fetcher, `${root}${path}`, {
    "x-api-key": apiKey,
    "anthropic-version": ANTHROPIC_VERSION,
  });
  const where = `${section}.base_url in picklebot.yaml`;
  if ("status" in answer && answer.html) {
    return result(
      "model key",
      "fail",
      `${root}${path} answered with a web page (HTTP ${answer.status}), not the Anthropic API`,
      `check ${where}: it is the API's root, without /v1`,
    );
  }
  if ("status" in answer && answer.status === 404 && isNotFoundError(answer.body)) {
    return result(
      "model key",
      "fail",
      `in picklebot.yaml, ${section}.model ${llm.model} is not a model ${root} knows (GET ${path} answered 404)`,
      `set ${section}.model in picklebot.yaml to a model id the API lists (GET /v1/models), e.g. claude-sonnet-4-6`,
    );
  }
  return judge("model key", "status" in answer ? { status: answer.status } : answer, {
    ...CREDENTIAL_SERVICES.anthropic,
    ok: `accepted by ${root}, which knows ${llm.model}`,
    where,
  });
}

/** Whether an error body is the Messages API's `not_found_error` (an unknown model). */
function isNotFoundError(body: unknown): boolean {
  const error = (body as { error?: { type?: unknown } } | undefined)?.error;
  return error?.type === "not_found_error";
}

/** How one chat platform's token(s) are checked, given its section's bot token. */
interface ChatTokenCheck {
  check(
    kind: ChatPlatformKind,
    config: Config,
    token: string,
    fetcher: typeof fetch,
  ): Promise<CheckResult>;
}

/** A check by one cheap, authenticated GET that only a valid token passes (2xx). */
function byStatus(
  request: (config: Config, token: string) => { url: string; headers: Record<string, string> },
  service: Service,
): ChatTokenCheck {
  return {
    async check(kind, config, token, fetcher) {
      const { url, headers } = request(config, token);
      return judge(kind, await get(fetcher, url, headers), service);
    },
  };
}

/** One entry per chat platform: a platform without one does not compile. */
const chatTokenChecks = {
  telegram: byStatus(
    ({ telegram }, token) => ({
      url: `${apiRoot(telegram.api_root, TELEGRAM_API)}/bot${token}/getMe`,
      headers: {},
    }),
    {
      ...CREDENTIAL_SERVICES.telegram,
      ok: "the bot token is valid (getMe)",
      where: "telegram.api_root in picklebot.yaml",
    },
  ),
  discord: byStatus(
    ({ discord }, token) => ({
      url: `${apiRoot(discord.api_base, DISCORD_API)}/v10/users/@me`,
      headers: { authorization: `Bot ${token}` },
    }),
    {
      ...CREDENTIAL_SERVICES.discord,
      ok: "the bot token is valid (GET /users/@me)",
      where: "discord.api_base in picklebot.yaml",
    },
  ),
  slack: { check: checkSlackTokens },
} satisfies Record<ChatPlatformKind, ChatTokenCheck>;

function apiRoot(configured: string | undefined, fallback: string): string {
  return (configured ?? fallback).replace(/\/+$/, "");
}

/** The bot token scopes the Slack adapter needs for text (the app manifest in chat-platforms.md). */
const SLACK_BOT_SCOPES = ["chat:write", "im:history", "app_mentions:read", "users:read"];

/**
 * The scopes of files in and out: without them text still works, so their absence is a
 * warning (an app made from the manifest before files came lacks them).
 */
const SLACK_FILE_SCOPES = ["files:read", "files:write"];

/** Where the owner adds scopes to the Slack app. */
const SLACK_SCOPES_FIX =
  "add them under OAuth & Permissions → Bot Token Scopes (or paste the manifest of docs/guides/chat-platforms.md), reinstall the app, and copy the new bot token";

/** What one Slack Web API call answered: its `ok`, `error` and granted scopes. */
type SlackAnswer =
  | { ok: boolean; error?: string; user?: string; scopes: string[] }
  | { unreachable: string };

async function callSlack(fetcher: typeof fetch, url: string, token: string): Promise<SlackAnswer> {
  try {
    const response = await fetcher(url, {
      method: "POST",
      headers: { authorization: `Bearer ${token}` },
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    if (response.status !== 200) {
      await response.body?.cancel();
      return { ok: false, error: `HTTP ${response.status}`, scopes: [] };
    }
    const body = (await response.json()) as { ok?: boolean; error?: string; user?: string };
    const scopes = (response.headers.get("x-oauth-scopes") ?? "").split(",").filter(Boolean);
    return { ok: body.ok === true, error: body.error, user: body.user, scopes };
  } catch (thrown) {
    return { unreachable: toError(thrown).message };
  }
}

/**
 * Slack answers a refused token with HTTP 200 and `ok: false`: the bot token by
 * auth.test (and its scopes, from `x-oauth-scopes`), the app token by
 * apps.connections.open (a connection URL that is never used).
 */
async function checkSlackTokens(
  kind: ChatPlatformKind,
  { slack }: Config,
  botToken: string,
  fetcher: typeof fetch,
): Promise<CheckResult> {
  const root = apiRoot(slack.api_url, SLACK_API);
  const refused = (token: string, answer: string) =>
    result(kind, "fail", `Slack refused the ${token} (${answer})`, CREDENTIAL_SERVICES.slack.fix);
  const bot = await callSlack(fetcher, `${root}/auth.test`, botToken);
  if ("unreachable" in bot) {
    return result(
      kind,
      "fail",
      `cannot reach Slack: ${bot.unreachable}`,
      "check the network and slack.api_url in picklebot.yaml",
    );
  }
  if (!bot.ok) return refused("bot token", `auth.test: ${bot.error}`);
  const missing = SLACK_BOT_SCOPES.filter((scope) => !bot.scopes.includes(scope));
  if (missing.length > 0) {
    return result(
      kind,
      "fail",
      `the bot token lacks the scopes ${missing.join(", ")}`,
      SLACK_SCOPES_FIX,
    );
  }
  const app = await callSlack(fetcher, `${root}/apps.connections.open`, slack.app_token ?? "");
  if ("unreachable" in app)
    return result(kind, "fail", `cannot reach Slack: ${app.unreachable}`, "check the network");
  if (!app.ok) return refused("app-level token", `apps.connections.open: ${app.error}`);
  const noFiles = SLACK_FILE_SCOPES.filter((scope) => !bot.scopes.includes(scope));
  if (noFiles.length > 0) {
    return result(
      kind,
      "warn",
      `both tokens are valid, but the bot token lacks the scopes ${noFiles.join(", ")}: files people send are not read, and send_file and spoken replies fail`,
      SLACK_SCOPES_FIX,
    );
  }
  return result(
    kind,
    "ok",
    `both tokens are valid (auth.test as ${bot.user}; apps.connections.open), scopes ${[...SLACK_BOT_SCOPES, ...SLACK_FILE_SCOPES].join(", ")}`,
  );
}

/** The token check of one chat platform, named after it. */
function chatTokenCheck(kind: ChatPlatformKind): DoctorCheck {
  return async ({ config, offline, fetch: fetcher }) => {
    if (!config) return needsConfig(kind);
    const { enabled, bot_token: token } = config[kind];
    if (!enabled || !token) return result(kind, "skip", "not enabled");
    if (offline) return result(kind, "skip", `token present; ${OFFLINE}`);
    return chatTokenChecks[kind].check(kind, config, token, fetcher);
  };
}

/** The bot token checks, one per chat platform, in the order of `CHAT_PLATFORMS`. */
export const chatPlatformChecks: readonly DoctorCheck[] = CHAT_PLATFORM_KINDS.map(chatTokenCheck);

export const checkPostgres: DoctorCheck = async ({ config }) => {
  if (!config) return needsConfig("postgres");
  const distributed = config.queue.backend === "postgres" || config.history.backend === "postgres";
  if (!distributed || !config.queue.url)
    return result("postgres", "skip", "not in distributed mode");
  // Loaded only here: a single server does not need pg.
  const { pendingPostgresMigrations } = await import("../storage/postgres/database.js");
  let pending: string[];
  try {
    pending = await pendingPostgresMigrations(config.queue.url);
  } catch (thrown) {
    return result(
      "postgres",
      "fail",
      toError(thrown).message,
      "start PostgreSQL, or correct queue.url / DATABASE_URL",
    );
  }
  if (pending.length === 0) return result("postgres", "ok", "reachable, every migration applied");
  return result(
    "postgres",
    "fail",
    `reachable, but ${pending.length} migration(s) not applied: ${pending.join(", ")}`,
    "start one picklebot server with the owner's credentials (it migrates at start-up) before the instances",
  );
};

/**
 * Connects to each configured MCP server and lists its tools (none with `--offline`); a
 * duplicate tool name, or a name of picklebot.yaml or an AGENT.md that matches none of
 * its tools, is a warning line of its own.
 */
export const checkMcpServers: DoctorCheck = async ({ workspace, config, offline, agents }) => {
  if (!workspace || !config) return needsConfig("mcp servers");
  const names = Object.keys(config.mcp_servers);
  if (names.length === 0) return result("mcp servers", "ok", "none configured");
  if (offline) return result("mcp servers", "skip", `${names.join(", ")}; ${OFFLINE}`);
  const checks = await connectToEachMcpServer(workspace, config, agents.values());
  return checks.flatMap(({ server, ok, detail, warnings }) => [
    ok
      ? result(`mcp ${server}`, "ok", detail)
      : result(
          `mcp ${server}`,
          "fail",
          detail,
          `fix mcp_servers.${server} in picklebot.yaml, or run its command by hand to see why it stops`,
        ),
    ...warnings.map((warning) =>
      result(
        `mcp ${server}`,
        "warn",
        warning,
        "correct or remove the entry it names; a tool listed twice is for the server's author to fix",
      ),
    ),
  ]);
};

/**
 * Where `web_search` searches: one search on a SearXNG (its JSON format on, its address
 * right); Brave's key is not sent, since a search there uses the plan's quota.
 */
export const checkWebSearch: DoctorCheck = async ({ config, offline, fetch: fetcher }) => {
  if (!config) return needsConfig("web search");
  const settings = config.tools.web_search;
  switch (settings.backend) {
    case undefined:
      return result("web search", "skip", "no tools.web_search.backend: web_search says so");
    case "anthropic":
      return result("web search", "ok", "the model API searches (anthropic), $10 per 1,000");
    case "brave":
      return result("web search", "ok", "Brave Search key present; not sent (a search uses quota)");
    case "searxng":
      break;
    default:
      return assertNever(settings.backend, "web search backend");
  }
  const baseUrl = settings.base_url ?? "";
  if (offline) return result("web search", "skip", `SearXNG at ${baseUrl}; ${OFFLINE}`);
  const searxng = createSearxngBackend(baseUrl, { timeoutMs: REQUEST_TIMEOUT_MS, fetch: fetcher });
  try {
    await searxng.search("picklebot", 1, new AbortController().signal);
    return result("web search", "ok", `SearXNG at ${baseUrl} answers searches in JSON`);
  } catch (thrown) {
    const fix = "fix the instance or tools.web_search.base_url; web_search fails until then";
    return result("web search", "fail", toError(thrown).message, fix);
  }
};
