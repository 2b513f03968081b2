import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { UserError } from "../../src/base/errors.js";
import {
  jobRetentionHours,
  loadConfig,
  modelChain,
  modelEntry,
  modelEntryNames,
  redactConfig,
  resolveWorkspace,
  secretValues,
  workspacePrices,
} from "../../src/config/index.js";
import { openWorkspaceDatabase } from "../../src/storage/sqlite/index.js";

let workspace: string;

beforeEach(() => {
  workspace = fs.mkdtempSync(path.join(os.tmpdir(), "picklebot-config-"));
});

afterEach(() => {
  fs.rmSync(workspace, { recursive: true, force: true });
});

function writeConfig(text: string): string {
  const file = path.join(workspace, "picklebot.yaml");
  fs.writeFileSync(file, text);
  return file;
}

function loadError(
  env: Record<string, string | undefined> = {},
  options: { agentIds?: string[] } = {},
): UserError {
  try {
    loadConfig(workspace, env, options);
  } catch (thrown) {
    if (thrown instanceof UserError) return thrown;
    throw thrown;
  }
  throw new Error("expected loadConfig to fail");
}

describe("loadConfig", () => {
  it("reads named models over llm's settings, and names an unknown fallback with the one meant", () => {
    writeConfig(
      [
        "llm:",
        "  api_key: main-key",
        "  base_url: http://127.0.0.1:9001",
        "  max_tokens: 1000",
        "  fallbacks: [haiku]",
        "models:",
        "  haiku:",
        "    model: claude-haiku-4-5",
        "    prices: { input: 1, output: 5, cache_read: 0.1, cache_write: 1.25 }",
        "  proxy:",
        "    model: some-model",
        "    base_url: http://127.0.0.1:9002",
        `    api_key: \${PROXY_KEY}`,
        "    fallbacks: [default, haiku]",
        "",
      ].join("\n"),
    );
    const config = loadConfig(workspace, { PROXY_KEY: "proxy-key" });
    expect(modelEntryNames(config)).toEqual(["default", "haiku", "proxy"]);
    expect(modelEntry(config, "haiku")?.llm).toMatchObject({
      model: "claude-haiku-4-5",
      api_key: "main-key",
      base_url: "http://127.0.0.1:9001",
      max_tokens: 1000,
    });
    expect(modelEntry(config, "proxy")?.llm).toMatchObject({
      api_key: "proxy-key",
      fallbacks: ["default", "haiku"],
    });
    expect(modelChain(config, {}).map((entry) => entry.name)).toEqual(["default", "haiku"]);
    expect(modelChain(config, { model: "claude-opus-4-1" })[0]?.llm.model).toBe("claude-opus-4-1");
    expect(workspacePrices(config)["claude-haiku-4-5"]).toEqual({
      input: 1,
      output: 5,
      cache_read: 0.1,
      cache_write: 1.25,
    });
    expect(secretValues(config)).toContain("proxy-key");
    expect(JSON.stringify(redactConfig(config))).not.toContain("proxy-key");

    const file = writeConfig("models:\n  haiku:\n    model: h\n    fallbacks: [haiku, defualt]\n");
    expect(loadError().message).toBe(
      `${file}: models.haiku.fallbacks[1]: unknown model "defualt"; did you mean "default"? (named models: default, haiku); name one of those or add it under models:.`,
    );
    writeConfig("models:\n  default:\n    model: h\n");
    expect(loadError().message).toContain('"default" is the name of the llm: section');
  });

  it("prices a named model on a local server at 0, unless it has prices; a hosted one stays unpriced", () => {
    writeConfig(
      [
        "llm:",
        "  api_key: k",
        "models:",
        "  ollama:",
        "    provider: openai-compatible",
        "    base_url: http://127.0.0.1:11434/v1",
        "    model: qwen2.5:7b",
        "  lan:",
        "    provider: openai-compatible",
        "    base_url: http://192.168.1.20:1234/v1",
        "    model: lan-model",
        "    prices: { input: 1, output: 2, cache_read: 0, cache_write: 0 }",
        "  router:",
        "    provider: openai-compatible",
        "    base_url: https://openrouter.ai/api/v1",
        "    api_key: r",
        "    model: meta-llama/llama-3.3-70b-instruct",
      ].join("\n"),
    );
    const prices = workspacePrices(loadConfig(workspace, {}));
    const free = { input: 0, output: 0, cache_read: 0, cache_write: 0 };
    expect(prices["qwen2.5:7b"]).toEqual(free);
    expect(prices["lan-model"]).toEqual({ input: 1, output: 2, cache_read: 0, cache_write: 0 });
    expect(prices["meta-llama/llama-3.3-70b-instruct"]).toBeUndefined();
  });

  it("follows fallbacks that name each other, or the entry itself, once each: no loop", () => {
    writeConfig(
      [
        "llm:",
        "  api_key: k",
        "  fallbacks: [a, default, a]",
        "models:",
        "  a:",
        "    model: claude-haiku-4-5",
        "    fallbacks: [default, a]",
        "  b:",
        "    model: claude-opus-4-5",
        "    fallbacks: [a]",
      ].join("\n"),
    );
    const config = loadConfig(workspace, {});
    const names = (model?: string) => modelChain(config, { model }).map((entry) => entry.name);
    expect(names()).toEqual(["default", "a"]);
    expect(names("a")).toEqual(["a", "default"]);
    // An entry's chain is its own fallbacks, not theirs in turn.
    expect(names("b")).toEqual(["b", "a"]);
  });

  it("gives an entry of another provider that provider's key from the environment, and its own vision; names a vision that is not true or false", () => {
    writeConfig(
      [
        "llm:",
        "  provider: openai-compatible",
        "  base_url: http://127.0.0.1:11434/v1",
        "  model: qwen2.5:7b",
        "  vision: false",
        "models:",
        "  claude:",
        "    provider: anthropic",
        "    model: claude-haiku-4-5",
        "  local:",
        "    model: llava",
        "",
      ].join("\n"),
    );
    const config = loadConfig(workspace, { ANTHROPIC_API_KEY: "sk-ant-env" });
    expect(modelEntry(config, "claude")?.llm).toMatchObject({
      api_key: "sk-ant-env",
      vision: true,
    });
    expect(modelEntry(config, "local")?.llm).toMatchObject({ api_key: undefined, vision: true });
    expect(modelEntry(config, "default")?.llm.vision).toBe(false);
    expect(secretValues(config)).toContain("sk-ant-env");

    const file = writeConfig("models:\n  local:\n    model: llava\n    vision: maybe\n");
    expect(loadError().message).toBe(
      `${file}: models.local.vision: expected true or false, found "maybe"; correct it or remove it to use the default.`,
    );
  });

  it("reads picklebot.yml next to an empty picklebot.yaml (the sandbox's placeholder), and the other way round", () => {
    fs.writeFileSync(path.join(workspace, "picklebot.yml"), "timezone: Asia/Tokyo\n");
    writeConfig("");
    expect(loadConfig(workspace, {}).timezone).toBe("Asia/Tokyo");
    fs.writeFileSync(path.join(workspace, "picklebot.yml"), "");
    writeConfig("timezone: Europe/Paris\n");
    expect(loadConfig(workspace, {}).timezone).toBe("Europe/Paris");
    fs.writeFileSync(path.join(workspace, "picklebot.yml"), "timezone: Asia/Tokyo\n");
    expect(loadError().message).toMatch(
      /^both .*picklebot\.yaml and .*picklebot\.yml exist; keep one/,
    );
  });

  it("fills every default when there is no picklebot.yaml", () => {
    const config = loadConfig(workspace, {});
    expect(config.default_agent).toBe("pickle");
    expect(config.timezone).toBe(Intl.DateTimeFormat().resolvedOptions().timeZone);
    expect(config.llm).toEqual({
      provider: "anthropic",
      model: "claude-sonnet-4-6",
      api_key: undefined,
      max_tokens: 4096,
      context_window: undefined,
      vision: true,
      timeout_s: 600,
      prices: {},
      prompt_cache_ttl: "1h",
      fallbacks: [],
      fallback_cooldown_s: 300,
      batch_max_steps: 5,
      batch_poll_s: 30,
    });
    expect(config.models).toEqual({});
    expect(config.queue).toEqual({
      backend: "sqlite",
      url: undefined,
      pool_size: 10,
      job_retention_h: undefined,
    });
    expect(config.cluster).toEqual({
      instance_id: undefined,
      heartbeat_s: 5,
      instance_ttl_s: 30,
      leader_ttl_s: 30,
      job_retention_h: undefined,
    });
    expect(config.workers).toEqual({
      agent_concurrency: 4,
      max_attempts: 5,
      job_timeout_s: 300,
      outage_budget_s: 300,
      subagent_max_depth: 3,
      subagent_timeout_s: 3600,
    });
    expect(config.history).toEqual({
      backend: "sqlite",
      path: path.join(workspace, "history"),
      max_messages: 200,
      keep_verbatim_tokens: 20_000,
      synchronous: "full",
    });
    expect(config.telegram.enabled).toBe(false);
    expect(config.telegram.allowed_user_ids).toEqual([]);
    expect(config.discord.channel_ids).toEqual([]);
    expect(config.discord.call_timeout_s).toBe(15);
    expect(config.http).toEqual({
      enabled: true,
      host: "127.0.0.1",
      port: 8787,
      read_only: false,
      dashboard: true,
    });
    expect(config.bindings).toEqual([]);
  });

  it("takes secrets and the database URL from the environment by default", () => {
    const config = loadConfig(workspace, {
      ANTHROPIC_API_KEY: "sk-test",
      TELEGRAM_BOT_TOKEN: "123:abc",
      DATABASE_URL: "postgres://localhost/picklebot",
    });
    expect(config.llm.api_key).toBe("sk-test");
    expect(config.telegram.bot_token).toBe("123:abc");
    expect(config.queue.url).toBe("postgres://localhost/picklebot");
  });

  it("reads values from the file and treats an empty section as defaults", () => {
    writeConfig(
      [
        "default_agent: helper",
        "timezone: Europe/Berlin",
        "telegram:",
        "llm:",
        "  model: claude-opus-4-1",
        "history:",
        "  path: /var/lib/picklebot",
        "http:",
        "  port: 0",
      ].join("\n"),
    );
    const config = loadConfig(workspace, {});
    expect(config.default_agent).toBe("helper");
    expect(config.timezone).toBe("Europe/Berlin");
    expect(config.llm.model).toBe("claude-opus-4-1");
    expect(config.telegram.enabled).toBe(false);
    expect(config.history.path).toBe(path.resolve("/var/lib/picklebot"));
    expect(config.http.port).toBe(0);
  });

  it("replaces environment references in string values, numbers included", () => {
    writeConfig(
      `llm:\n  api_key: \${MY_KEY}\n  base_url: "http://\${HOST}:9999"\nhttp:\n  port: \${PORT}\n`,
    );
    const config = loadConfig(workspace, { MY_KEY: "sk-1", HOST: "127.0.0.1", PORT: "9000" });
    expect(config.llm.api_key).toBe("sk-1");
    expect(config.llm.base_url).toBe("http://127.0.0.1:9999");
    expect(config.http.port).toBe(9000);
  });

  it("names the key and the variable when a variable is not set", () => {
    const file = writeConfig(`telegram:\n  bot_token: \${TG_TOKEN}\n`);
    expect(loadError().message).toBe(
      `${file}: telegram.bot_token: environment variable TG_TOKEN is not set; set it in the ` +
        "environment or in the workspace .env file, or remove the reference.",
    );
  });

  it("reads budget, park by default, and names a bad amount or action", () => {
    writeConfig("budget:\n  daily_usd: 2\n");
    expect(loadConfig(workspace, {}).budget).toEqual({ daily_usd: 2, on_exceeded: "park" });
    const file = writeConfig("budget:\n  daily_usd: -1\n  on_exceeded: stop\n");
    const message = loadError().message;
    expect(message).toContain(
      `${file}: budget.daily_usd: expected an amount in US dollars greater than 0`,
    );
    expect(message).toContain('budget.on_exceeded: expected "park" or "refuse"');
  });

  it("reads heartbeats, none by default, and names a bad interval, chat or check", () => {
    expect(loadConfig(workspace, {}).heartbeats).toEqual({ min_interval_m: 30, chats: {} });
    writeConfig('heartbeats:\n  chats:\n    "telegram:42": {every: 1h, check: the mail}\n');
    expect(loadConfig(workspace, {}).heartbeats.chats).toEqual({
      "telegram:42": { every: "1h", check: "the mail" },
    });
    const file = writeConfig(
      [
        "heartbeats:",
        "  chats:",
        '    "telegram:42": {every: 1s, check: the mail}',
        '    "telegram:43": {every: 45m, check: the mail}',
        '    "telegram:44": {every: 1h, check: ""}',
        '    "matrix:1": {every: 1h, check: the mail}',
        '    "telegram:45": {every: often, check: the mail}',
        "",
      ].join("\n"),
    );
    const message = loadError().message;
    expect(message).toContain(
      `${file}: heartbeats.chats.telegram:42.every: "1s" is shorter than the shortest heartbeat interval, 30 minutes (heartbeats.min_interval_m); choose a longer one`,
    );
    expect(message).toContain(
      'heartbeats.chats.telegram:43.every: "45m" does not divide an hour or a day evenly',
    );
    expect(message).toContain("heartbeats.chats.telegram:44.check: expected what the agent checks");
    expect(message).toContain(
      'heartbeats.chats.matrix:1: "matrix:1" is not a chat address; write telegram:<chat_id>',
    );
    expect(message).toContain(
      'heartbeats.chats.telegram:45.every: "often" is not an interval; write it like 30m or 2h',
    );
    // One sentence per mistake.
    expect(message.split("\n")).toHaveLength(5);
  });

  it("keeps $$ followed by {NAME} as the literal text", () => {
    writeConfig(`llm:\n  model: "a-$\${MODEL}"\n`);
    expect(loadConfig(workspace, {}).llm.model).toBe(`a-\${MODEL}`);
  });

  it("reads the workspace .env without overriding variables already set, or exporting it", () => {
    fs.writeFileSync(path.join(workspace, ".env"), "ANTHROPIC_API_KEY=from-dotenv\nMODEL=m-env\n");
    writeConfig(`llm:\n  model: \${MODEL}\n`);
    const env: Record<string, string | undefined> = { MODEL: "m-shell" };
    const config = loadConfig(workspace, env);
    expect(config.llm.model).toBe("m-shell");
    expect(config.llm.api_key).toBe("from-dotenv");
    expect(env).toEqual({ MODEL: "m-shell" });
  });

  it("keeps the secrets of .env in the config and out of process.env", () => {
    fs.writeFileSync(
      path.join(workspace, ".env"),
      "PB_TEST_TOKEN=123456:dotenv-token\nDATABASE_URL=postgres://bot:dotenv-pass@db/pb\n",
    );
    writeConfig(`telegram:\n  bot_token: \${PB_TEST_TOKEN}\n`);
    const before = { ...process.env };
    const config = loadConfig(workspace);
    expect(config.telegram.bot_token).toBe("123456:dotenv-token");
    expect(config.queue.url).toBe("postgres://bot:dotenv-pass@db/pb");
    expect(process.env).toEqual(before);
    expect(process.env.PB_TEST_TOKEN).toBeUndefined();
  });

  it("rejects an unknown key and suggests the closest known one", () => {
    const file = writeConfig("llm:\n  modle: claude-sonnet-4-5\n");
    expect(loadError().message).toBe(
      `${file}: llm.modle: unknown key; did you mean "model"? ` +
        "(known keys under llm: provider, model, api_key, base_url, max_tokens, context_window, vision, timeout_s, prices, prompt_cache_ttl, fallbacks, fallback_cooldown_s, batch_max_steps, batch_poll_s).",
    );
  });

  it("suggests for a misspelt top-level key too", () => {
    writeConfig("telegarm:\n  enabled: false\n");
    expect(loadError().message).toContain('telegarm: unknown key; did you mean "telegram"?');
  });

  it("names the key, the expected and the found value for a wrong type", () => {
    const file = writeConfig("workers:\n  agent_concurrency: lots\n");
    expect(loadError().message).toBe(
      `${file}: workers.agent_concurrency: expected a whole number, found "lots"; ` +
        "correct it or remove it to use the default.",
    );
  });

  it("checks ranges", () => {
    writeConfig(
      "http:\n  port: 70000\nhistory:\n  max_messages: 1\n  keep_verbatim_tokens: -1\nllm:\n  context_window: 512\n",
    );
    const message = loadError().message;
    expect(message).toContain(
      "llm.context_window: expected a whole number of at least 8000, found 512",
    );
    expect(message).toContain("http.port: expected a port number from 0 to 65535, found 70000");
    expect(message).toContain(
      "history.max_messages: expected a whole number of at least 2, found 1",
    );
    expect(message).toContain(
      "history.keep_verbatim_tokens: expected a whole number of at least 0, found -1",
    );
  });

  it("lists the allowed values of an enumeration", () => {
    writeConfig("queue:\n  backend: redis\n");
    expect(loadError().message).toContain(
      'queue.backend: expected one of "sqlite", "memory", "postgres", found "redis"',
    );
  });

  it("rejects a time zone Intl does not know", () => {
    const file = writeConfig("timezone: Mars/Olympus\n");
    expect(loadError().message).toBe(
      `${file}: timezone: expected an IANA time zone such as "Europe/Berlin" or "UTC", ` +
        'found "Mars/Olympus"; correct it or remove it to use the default.',
    );
  });

  it("requires a bot token only when the bus is enabled", () => {
    writeConfig("telegram:\n  enabled: true\n");
    expect(loadError().message).toContain(
      "telegram.bot_token: required when telegram.enabled is true; set TELEGRAM_BOT_TOKEN",
    );
    expect(loadConfig(workspace, { TELEGRAM_BOT_TOKEN: "1:x" }).telegram.enabled).toBe(true);
  });

  it("requires both Slack tokens when Slack is enabled, each of its own kind", () => {
    writeConfig("slack:\n  enabled: true\n");
    expect(loadError({ SLACK_BOT_TOKEN: "xoxb-1" }).message).toContain(
      "slack.app_token: required when slack.enabled is true; set SLACK_APP_TOKEN",
    );
    const swapped = loadError({ SLACK_BOT_TOKEN: "xapp-1", SLACK_APP_TOKEN: "xapp-2" }).message;
    expect(swapped).toContain(
      "slack.bot_token: expected a token starting with xoxb-, the Bot User OAuth Token (OAuth & Permissions), found a string (value hidden)",
    );
    expect(swapped).not.toContain("xapp-1");
    const slack = loadConfig(workspace, { SLACK_BOT_TOKEN: "xoxb-1", SLACK_APP_TOKEN: "xapp-2" });
    expect([slack.slack.bot_token, slack.slack.app_token]).toEqual(["xoxb-1", "xapp-2"]);
  });

  it("requires a database URL for the postgres queue", () => {
    writeConfig("queue:\n  backend: postgres\n");
    expect(loadError().message).toContain(
      "queue.url: required when queue.backend is postgres; set DATABASE_URL",
    );
  });

  it("takes the instance id from PICKLEBOT_INSTANCE_ID and checks its shape either way", () => {
    expect(loadConfig(workspace, { PICKLEBOT_INSTANCE_ID: "web-2" }).cluster.instance_id).toBe(
      "web-2",
    );
    writeConfig("cluster:\n  instance_id: web.example.com\n");
    expect(loadError().message).toContain(
      'cluster.instance_id: expected an instance id of 1 to 64 letters, digits, - and _ (set here or in PICKLEBOT_INSTANCE_ID), found "web.example.com"',
    );
    writeConfig("");
    expect(loadError({ PICKLEBOT_INSTANCE_ID: "x".repeat(65) }).message).toContain(
      "cluster.instance_id: expected an instance id of 1 to 64",
    );
  });

  it.each([
    ["llm", "llm:\n  provider: openai\n"],
    ["models.local", "models:\n  local:\n    provider: ollama\n    model: qwen2.5:7b\n"],
  ])("names the provider to use for an OpenAI or a local endpoint (%s.provider)", (key, text) => {
    writeConfig(text);
    const found = key === "llm" ? "openai" : "ollama";
    expect(loadError().message).toBe(
      `${path.join(workspace, "picklebot.yaml")}: ${key}.provider: expected "anthropic", or "openai-compatible" for OpenAI, OpenRouter, Groq, Together, Ollama, LM Studio, vLLM and llama.cpp's server (docs/guides/models.md), found "${found}"; correct it or remove it to use the default.`,
    );
  });

  it("refuses an instance TTL that is not longer than the heartbeat", () => {
    writeConfig("cluster:\n  heartbeat_s: 10\n  instance_ttl_s: 10\n");
    expect(loadError().message).toContain(
      "cluster.instance_ttl_s: must be longer than cluster.heartbeat_s (10)",
    );
  });

  it("refuses a postgres queue with a history only one host can see", () => {
    writeConfig("queue:\n  backend: postgres\n  url: postgres://db/picklebot\n");
    expect(loadError().message).toContain(
      "history.backend: must be postgres when queue.backend is postgres",
    );
  });

  it("accepts telegram ids as numbers or digit strings and discord ids as strings", () => {
    writeConfig(
      [
        "telegram:",
        '  allowed_user_ids: [123, "456"]',
        "discord:",
        '  allowed_user_ids: ["80351110224678912", 42]',
      ].join("\n"),
    );
    const config = loadConfig(workspace, {});
    expect(config.telegram.allowed_user_ids).toEqual([123, 456]);
    expect(config.discord.allowed_user_ids).toEqual(["80351110224678912", "42"]);
  });

  it("rejects a discord id too long to be an exact YAML number", () => {
    writeConfig("discord:\n  allowed_user_ids: [80351110224678912]\n");
    expect(loadError().message).toContain(
      "discord.allowed_user_ids[0]: expected a Discord user id written as quoted digits",
    );
  });

  it("takes Slack member ids, and names the field and the fix for a name or a channel id", () => {
    writeConfig('slack:\n  allowed_user_ids: ["U012AB3CD", "W0ENTERPRISE"]\n');
    expect(loadConfig(workspace, {}).slack.allowed_user_ids).toEqual(["U012AB3CD", "W0ENTERPRISE"]);
    writeConfig('slack:\n  allowed_user_ids: ["alice", "C0GENERAL"]\n');
    const message = loadError().message;
    for (const index of [0, 1]) {
      expect(message).toContain(
        `slack.allowed_user_ids[${index}]: expected a Slack member id such as "U012AB3CD" (profile → ⋮ → Copy member ID)`,
      );
    }
  });

  it("never repeats a secret value in an error", () => {
    writeConfig("llm:\n  api_key: [sk-secret-value]\n");
    expect(loadError().message).not.toContain("sk-secret-value");
  });

  it("names the file and line of a YAML syntax error", () => {
    const file = writeConfig("llm:\n  model: ok\n  max_tokens: [1, 2\nhttp:\n  port: 1\n");
    const message = loadError().message;
    expect(message).toMatch(
      new RegExp(`^${file.replaceAll("\\", "\\\\")}:\\d+: YAML syntax error`),
    );
    expect(message).toMatch(/fix the syntax on line \d+\.$/);
  });

  it("runs bash under bubblewrap without network unless tools.bash says otherwise", () => {
    expect(loadConfig(workspace, {}).tools).toEqual({
      bash: { sandbox: "bwrap", network: false },
      web_fetch: { allow_private_addresses: false },
      web_search: { max_per_turn: 5, timeout_s: 15 },
      schedule: { max_per_chat: 20, min_interval_m: 60, time_zones: {} },
    });
    writeConfig("tools:\n  bash:\n    sandbox: none\n    network: true\n");
    expect(loadConfig(workspace, {}).tools.bash).toEqual({ sandbox: "none", network: true });
  });

  it("reads tools.web_search, with BRAVE_API_KEY as the default key", () => {
    writeConfig("tools:\n  web_search:\n    backend: brave\n    max_per_turn: 2\n");
    expect(loadConfig(workspace, { BRAVE_API_KEY: "brave-env" }).tools.web_search).toEqual({
      backend: "brave",
      api_key: "brave-env",
      max_per_turn: 2,
      timeout_s: 15,
    });
  });

  it("refuses a web_search backend without what it needs, or one it does not know", () => {
    writeConfig("tools:\n  web_search:\n    backend: searxng\n");
    expect(loadError().message).toContain(
      "tools.web_search.base_url: required when tools.web_search.backend is searxng; set it to your SearXNG's root, e.g. http://127.0.0.1:8888",
    );
    writeConfig("tools:\n  web_search:\n    backend: brave\n");
    expect(loadError().message).toContain(
      "tools.web_search.api_key: required when tools.web_search.backend is brave; set BRAVE_API_KEY in the environment or the workspace .env",
    );
    writeConfig("tools:\n  web_search:\n    backend: google\n");
    expect(loadError().message).toContain(
      'tools.web_search.backend: expected "anthropic", "searxng" or "brave", found "google"',
    );
  });

  it("names the allowed sandboxes and refuses an unknown tools.bash key", () => {
    writeConfig("tools:\n  bash:\n    sandbox: docker\n");
    expect(loadError().message).toContain(
      'tools.bash.sandbox: expected "bwrap" (bubblewrap, the default) or "none" (no sandbox), found "docker"',
    );
    writeConfig("tools:\n  bash:\n    netwrok: true\n");
    expect(loadError().message).toContain("tools.bash.netwrok");
  });

  it("reads skills.max_listing_chars, 8000 by default, and names a bad value or key", () => {
    expect(loadConfig(workspace, {}).skills).toEqual({ max_listing_chars: 8000 });
    writeConfig("skills:\n  max_listing_chars: 2000\n");
    expect(loadConfig(workspace, {}).skills.max_listing_chars).toBe(2000);
    const file = writeConfig("skills:\n  max_listing_chars: 50\n");
    expect(loadError().message).toBe(
      `${file}: skills.max_listing_chars: expected a whole number of characters, at least 200, found 50; correct it or remove it to use the default.`,
    );
    writeConfig("skills:\n  max_listing_char: 2000\n");
    expect(loadError().message).toContain(
      'skills.max_listing_char: unknown key; did you mean "max_listing_chars"?',
    );
  });

  it("names a duplicated key and both of its lines", () => {
    const file = writeConfig("http:\n  port: 1\nhttp:\n  port: 2\n");
    expect(loadError().message).toBe(
      `${file}:3: the key "http" is written twice in the same block (first on line 1); merge the two into one, or remove one.`,
    );
    writeConfig("tools:\n  bash:\n    sandbox: none\n    network: true\n    sandbox: bwrap\n");
    expect(loadError().message).toContain(
      ':5: the key "sandbox" is written twice in the same block (first on line 3)',
    );
  });
});

describe("the models guide's worked examples", () => {
  const guide = fs.readFileSync(new URL("../../docs/guides/models.md", import.meta.url), "utf8");
  /** The yaml block under a `### <title>` heading of the guide. */
  function example(title: string): string {
    const section = guide.split(`### ${title}\n`)[1] ?? "";
    return /```yaml\n([\s\S]*?)```/.exec(section)?.[1] ?? "";
  }

  it.each([
    ["OpenRouter", { base_url: "https://openrouter.ai/api/v1", api_key: "sk-or-test" }],
    ["Ollama", { base_url: "http://127.0.0.1:11434/v1", context_window: 32768, vision: false }],
    ["LM Studio", { base_url: "http://127.0.0.1:1234/v1", context_window: 16384 }],
  ])("%s loads as written, on openai-compatible", (title, expected) => {
    writeConfig(example(title));
    const { llm } = loadConfig(workspace, { OPENROUTER_API_KEY: "sk-or-test" });
    expect(llm).toMatchObject({ provider: "openai-compatible", ...expected });
    if (title !== "OpenRouter") expect(llm.api_key).toBeUndefined();
  });

  it("every yaml block of the guide loads", () => {
    const blocks = [...guide.matchAll(/```yaml\n([\s\S]*?)```/g)].map((match) => match[1] ?? "");
    expect(blocks.length).toBeGreaterThanOrEqual(5);
    for (const block of blocks) {
      writeConfig(block);
      expect(() =>
        loadConfig(workspace, { OPENROUTER_API_KEY: "k", PROXY_KEY: "k" }),
      ).not.toThrow();
    }
  });
});

describe("loadConfig: bindings", () => {
  const agentIds = ["coder", "pickle"];

  it("reads chat addresses and the agent each chat is pinned to", () => {
    writeConfig(
      [
        "bindings:",
        "  - chat: telegram:123456789",
        "    agent: coder",
        '  - chat: "discord:80351110224678912"',
        "    agent: pickle",
        "  - chat: telegram:-1001234",
        "    agent: coder",
      ].join("\n"),
    );
    expect(loadConfig(workspace, {}, { agentIds }).bindings).toEqual([
      { chat: { platform: "telegram", chatId: "123456789" }, agent: "coder" },
      { chat: { platform: "discord", chatId: "80351110224678912" }, agent: "pickle" },
      { chat: { platform: "telegram", chatId: "-1001234" }, agent: "coder" },
    ]);
  });

  it("names bindings[i].agent and the known agents for an unknown agent", () => {
    const file = writeConfig("bindings:\n  - chat: telegram:1\n    agent: codr\n");
    expect(loadError({}, { agentIds }).message).toBe(
      `${file}: bindings[0].agent: unknown agent "codr"; did you mean "coder"? (known: coder, pickle); ` +
        "name one of those or create agents/codr/AGENT.md.",
    );
    expect(loadError({}, { agentIds }).context).toMatchObject({ key: "bindings[0].agent" });
  });

  it("accepts default_agent without an AGENT.md (the built-in agent)", () => {
    writeConfig("default_agent: helper\nbindings:\n  - chat: discord:5\n    agent: helper\n");
    expect(loadConfig(workspace, {}, { agentIds: [] }).bindings).toHaveLength(1);
  });

  it("names bindings[i].chat for an address of no platform, and for a chat bound twice", () => {
    const file = writeConfig(
      "bindings:\n  - chat: slack:1\n    agent: coder\n  - chat: discord:general\n    agent: coder\n",
    );
    const lines = loadError({}, { agentIds }).message.split("\n");
    expect(lines).toEqual([
      `${file}: bindings[0].chat: expected a chat address, telegram:<chat_id> or discord:<channel_id> or slack:<channel_id>, such as telegram:123456789, found "slack:1"; correct it.`,
      `${file}: bindings[1].chat: expected a chat address, telegram:<chat_id> or discord:<channel_id> or slack:<channel_id>, such as telegram:123456789, found "discord:general"; correct it.`,
    ]);
    writeConfig(
      "bindings:\n  - chat: telegram:1\n    agent: coder\n  - chat: telegram:1\n    agent: pickle\n",
    );
    expect(loadError({}, { agentIds }).message).toBe(
      `${file}: bindings[1].chat: telegram:1 is already bound by bindings[0]; a chat has one agent, so remove one of the two.`,
    );
  });

  it("names a missing or unknown field of an entry", () => {
    writeConfig("bindings:\n  - chat: telegram:1\n");
    expect(loadError({}, { agentIds }).message).toContain(
      "bindings[0].agent: missing (expected an agent id (letters, digits, - and _)); add it.",
    );
    writeConfig("bindings:\n  - chat: telegram:1\n    agnet: coder\n    agent: coder\n");
    expect(loadError({}, { agentIds }).message).toContain(
      'bindings[0].agnet: unknown key; did you mean "agent"?',
    );
  });
});

describe("redactConfig", () => {
  it("shows whether secrets are set, never their values", () => {
    const config = loadConfig(workspace, { ANTHROPIC_API_KEY: "sk-hidden" });
    const shown = redactConfig(config);
    expect(shown.llm.api_key).toBe("[set]");
    expect(shown.telegram.bot_token).toBe("[not set]");
    expect(JSON.stringify(shown)).not.toContain("sk-hidden");
    expect(config.llm.api_key).toBe("sk-hidden");
  });

  it("hides both Slack tokens", () => {
    const config = loadConfig(workspace, {
      SLACK_BOT_TOKEN: "xoxb-hidden-bot",
      SLACK_APP_TOKEN: "xapp-hidden-app",
    });
    const shown = redactConfig(config);
    expect([shown.slack.bot_token, shown.slack.app_token]).toEqual(["[set]", "[set]"]);
    expect(JSON.stringify(shown)).not.toMatch(/hidden-(bot|app)/);
  });
});

describe("secretValues", () => {
  it("lists the API key, the bot tokens and the database password, from any source", () => {
    fs.writeFileSync(
      path.join(workspace, ".env"),
      "DISCORD_BOT_TOKEN=discord-from-dotenv\nSLACK_APP_TOKEN=xapp-from-dotenv\n",
    );
    writeConfig(`telegram:\n  bot_token: \${TG}\n`);
    const config = loadConfig(workspace, {
      ANTHROPIC_API_KEY: "sk-from-env",
      TG: "123:from-interpolation",
      DATABASE_URL: "postgres://bot:p%40ss@db/pb",
      SLACK_BOT_TOKEN: "xoxb-from-env",
    });
    expect(secretValues(config).sort()).toEqual(
      [
        "123:from-interpolation",
        "discord-from-dotenv",
        "p@ss",
        "sk-from-env",
        "xoxb-from-env",
        "xapp-from-dotenv",
      ].sort(),
    );
  });
});

describe("resolveWorkspace", () => {
  it("prefers the option, then PICKLEBOT_WORKSPACE, then the current directory", () => {
    expect(resolveWorkspace(workspace, {})).toBe(workspace);
    expect(resolveWorkspace(undefined, { PICKLEBOT_WORKSPACE: workspace })).toBe(workspace);
    expect(resolveWorkspace(undefined, {})).toBe(process.cwd());
  });

  it("explains a workspace that does not exist", () => {
    const missing = path.join(workspace, "nope");
    expect(() => resolveWorkspace(missing, {})).toThrow(
      `workspace ${missing} (from --workspace) does not exist; create one with ` +
        `\`picklebot init ${missing}\` or pass an existing folder with --workspace.`,
    );
  });

  it("explains a workspace that is a file", () => {
    const file = path.join(workspace, "file.txt");
    fs.writeFileSync(file, "");
    expect(() => resolveWorkspace(undefined, { PICKLEBOT_WORKSPACE: file })).toThrow(
      /is a file, not a folder/,
    );
  });
});

describe("job retention", () => {
  it("is a week by default, queue.job_retention_h when set, else the old cluster.job_retention_h", () => {
    expect(jobRetentionHours(loadConfig(workspace, {}))).toBe(168);
    writeConfig("cluster:\n  job_retention_h: 48\n");
    expect(jobRetentionHours(loadConfig(workspace, {}))).toBe(48);
    writeConfig("queue:\n  job_retention_h: 24\ncluster:\n  job_retention_h: 48\n");
    expect(jobRetentionHours(loadConfig(workspace, {}))).toBe(24);
  });

  it("refuses a retention that is not a positive number, naming the key", () => {
    writeConfig("queue:\n  job_retention_h: 0\n");
    expect(loadError().message).toContain("queue.job_retention_h");
  });
});

describe("history.synchronous", () => {
  it("is full unless set to normal, and is handed to the workspace database", () => {
    const fsynced = openWorkspaceDatabase(loadConfig(workspace, {}));
    expect(fsynced.pragma("synchronous", { simple: true })).toBe(2);
    fsynced.close();
    writeConfig("history:\n  synchronous: normal\n");
    const faster = openWorkspaceDatabase(loadConfig(workspace, {}));
    expect(faster.pragma("synchronous", { simple: true })).toBe(1);
    faster.close();
  });

  it("refuses another value, naming the key and the choices", () => {
    writeConfig("history:\n  synchronous: off\n");
    const message = loadError().message;
    expect(message).toContain("history.synchronous");
    expect(message).toContain('"full"');
  });
});

describe("http: the dashboard's keys", () => {
  it("reads http.token from the environment, and read_only and dashboard as flags", () => {
    writeConfig(
      `http:\n  host: 0.0.0.0\n  token: \${DASH_TOKEN}\n  read_only: true\n  dashboard: false\n`,
    );
    const config = loadConfig(workspace, { DASH_TOKEN: "a-long-enough-token-1234" });
    expect(config.http).toMatchObject({
      host: "0.0.0.0",
      token: "a-long-enough-token-1234",
      read_only: true,
      dashboard: false,
    });
    expect(secretValues(config)).toContain("a-long-enough-token-1234");
    expect(JSON.stringify(redactConfig(config))).not.toContain("a-long-enough-token-1234");
    expect(redactConfig(config).http.token).toBe("[set]");
  });

  it("refuses a short token and an unknown key under http, saying what to write", () => {
    const file = writeConfig("http:\n  token: short\n");
    expect(loadError().message).toContain(`${file}: http.token: expected a token of at least 16`);
    writeConfig("http:\n  readonly: true\n");
    expect(loadError().message).toContain('http.readonly: unknown key; did you mean "read_only"?');
  });
});
