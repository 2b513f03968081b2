import { CHAT_PLATFORM_KINDS } from "../base/chat-address.js";
import { passwordOfUrl } from "../base/redact.js";
import { isStdioServer, mcpServerSecrets } from "./mcp.js";
import type { Config } from "./schema.js";

/**
 * What `status` shows instead of a secret: whether it is set. This is a presentation of
 * presence, not redaction of text (that is `redactSecrets` in base/redact.ts, whose
 * marker a printed config never needs: no secret's text is kept here at all).
 */
function presence(secret: string | undefined): string {
  return secret === undefined ? "[not set]" : "[set]";
}

/**
 * A copy of `config` safe to print: API keys, bot tokens (and Slack's app token) and the database URL (which
 * may hold a password) and the dashboard's `http.token` are replaced by "[set]" or "[not set]".
 */
export function redactConfig(config: Config): Config {
  return {
    ...config,
    llm: { ...config.llm, api_key: presence(config.llm.api_key) },
    models: Object.fromEntries(
      Object.entries(config.models).map(([name, entry]) => [
        name,
        entry.api_key === undefined ? entry : { ...entry, api_key: presence(entry.api_key) },
      ]),
    ),
    ...(config.speech_to_text
      ? {
          speech_to_text: {
            ...config.speech_to_text,
            api_key: presence(config.speech_to_text.api_key),
          },
        }
      : {}),
    queue: { ...config.queue, url: presence(config.queue.url) },
    http: { ...config.http, token: presence(config.http.token) },
    ...(config.text_to_speech === undefined
      ? {}
      : {
          text_to_speech: {
            ...config.text_to_speech,
            api_key: presence(config.text_to_speech.api_key),
          },
        }),
    ...Object.fromEntries(
      CHAT_PLATFORM_KINDS.map((kind) => [
        kind,
        { ...config[kind], bot_token: presence(config[kind].bot_token) },
      ]),
    ),
    // Slack's second token, for Socket Mode.
    slack: {
      ...config.slack,
      bot_token: presence(config.slack.bot_token),
      app_token: presence(config.slack.app_token),
    },
    mcp_servers: Object.fromEntries(
      Object.entries(config.mcp_servers).map(([name, server]) => [
        name,
        isStdioServer(server)
          ? { ...server, env: hideValues(server.env) }
          : { ...server, headers: hideValues(server.headers) },
      ]),
    ),
  };
}

/** An MCP server's env or headers with every value shown as `[set]`. */
function hideValues(values: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.keys(values).map((key) => [key, presence(values[key])]));
}

/**
 * Every secret value the config holds, wherever it came from (picklebot.yaml, `${NAME}`,
 * `.env` or the environment): the API keys (`llm` and `models:`), the bot tokens, the database password, `http.token` and MCP servers' env and headers.
 * These are what `redactSecrets` takes out of tool output, model replies and logs.
 */
export function secretValues(config: Config): string[] {
  const values = [
    config.llm.api_key,
    ...Object.values(config.models).map((entry) => entry.api_key),
    config.speech_to_text?.api_key,
    ...CHAT_PLATFORM_KINDS.map((kind) => config[kind].bot_token),
    config.slack.app_token,
    config.queue.url === undefined ? undefined : passwordOfUrl(config.queue.url),
    ...Object.values(config.mcp_servers).flatMap(mcpServerSecrets),
    config.http.token,
    config.text_to_speech?.api_key,
    config.tools.web_search.api_key,
  ];
  return values.filter((value): value is string => value !== undefined && value !== "");
}
