/**
 * `picklebot doctor` as a user runs it: a child process on a workspace made by
 * `picklebot init`, the model, Telegram and Discord played by the fakes on loopback
 * (which refuse a bad key or token with a 401 as the real services do). It passes on a
 * healthy workspace and fails with the right line, and exit code 1, for each broken thing.
 */
import fs, { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { type FakeAnthropic, startFakeAnthropic } from "../fakes/anthropic.js";
import { type FakeDiscord, startFakeDiscord } from "../fakes/discord.js";
import { stdioFake } from "../fakes/mcp.js";
import { startFakeOpenAi } from "../fakes/openai.js";
import { startFakeSearxng } from "../fakes/search-engines.js";
import { startFakeSlack } from "../fakes/slack.js";
import { type FakeTelegram, startFakeTelegram } from "../fakes/telegram.js";
import { runCli } from "../helpers/cli.js";
import { createTestDatabase, postgresSkipReason, type TestDatabase } from "../helpers/postgres.js";

const API_KEY = "sk-ant-doctor-good-key";
const TELEGRAM_TOKEN = "111222333:AAF-doctor-telegram-token";
const DISCORD_TOKEN = "doctor-discord-token.abc.def";

/** One line of `doctor --json`. */
interface CheckLine {
  check: string;
  status: "ok" | "warn" | "fail" | "skip";
  detail: string;
  fix?: string;
}

let model: FakeAnthropic;
let dir: string;

beforeAll(async () => {
  model = await startFakeAnthropic({ apiKey: API_KEY });
});

afterAll(async () => {
  await model.close();
});

beforeEach(async () => {
  dir = path.join(mkdtempSync(path.join(tmpdir(), "picklebot-doctor-")), "ws");
  const init = await runCli(["init", dir]);
  expect(init.code).toBe(0);
  editConfig((yaml) => yaml.replace("# base_url: http://127.0.0.1:9999", `base_url: ${model.url}`));
  fs.writeFileSync(path.join(dir, ".env"), `ANTHROPIC_API_KEY=${API_KEY}\n`);
});

afterEach(() => {
  fs.rmSync(path.dirname(dir), { recursive: true, force: true });
});

function editConfig(edit: (yaml: string) => string): void {
  const file = path.join(dir, "picklebot.yaml");
  fs.writeFileSync(file, edit(fs.readFileSync(file, "utf8")));
}

/** Replaces a top-level section of the picklebot.yaml init wrote. */
function replaceSection(name: string, body: string): void {
  editConfig((yaml) => {
    const start = yaml.indexOf(`\n${name}:`);
    const next = yaml.slice(start + 1).search(/\n[a-z_]+:/);
    const end = next === -1 ? yaml.length : start + 1 + next;
    return `${yaml.slice(0, start)}\n${name}:\n${body}${yaml.slice(end)}`;
  });
}

async function doctor(args: string[] = [], env: Record<string, string> = {}) {
  const run = await runCli(["doctor", "--json", "--workspace", dir, ...args], { env });
  const report = JSON.parse(run.stdout) as { ok: boolean; checks: CheckLine[] };
  return {
    ...run,
    report,
    line: (check: string) => report.checks.filter((l) => l.check === check),
  };
}

describe("picklebot doctor", () => {
  it("passes on a fresh init workspace with the fake model, and says so in plain text", async () => {
    const run = await runCli(["doctor", "--workspace", dir]);

    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^ok +model key +accepted by http:\/\/127\.0\.0\.1/m);
    expect(run.stdout).toMatch(/^ok +crons +1 valid/m);
    expect(run.stdout).toMatch(/all checks passed/);
    expect(run.stdout).not.toContain(API_KEY);
    expect(fs.existsSync(path.join(dir, "history", "picklebot.db"))).toBe(false);
  });

  it("fails the model line when the API refuses the key, without printing it", async () => {
    fs.writeFileSync(path.join(dir, ".env"), "ANTHROPIC_API_KEY=sk-ant-wrong-key\n");

    const { code, line, stdout } = await doctor();

    expect(code).toBe(1);
    expect(line("model key")).toEqual([
      expect.objectContaining({ status: "fail", detail: expect.stringContaining("HTTP 401") }),
    ]);
    expect(line("model key")[0]?.fix).toContain("ANTHROPIC_API_KEY");
    expect(stdout).not.toContain("sk-ant-wrong-key");
  });

  it("fails the model line when no key is set, and --offline skips only the request", async () => {
    fs.rmSync(path.join(dir, ".env"));
    const missing = await doctor();
    fs.writeFileSync(path.join(dir, ".env"), "ANTHROPIC_API_KEY=sk-ant-wrong-key\n");
    const offline = await doctor(["--offline"]);

    expect(missing.code).toBe(1);
    expect(missing.line("model key")[0]).toMatchObject({
      status: "fail",
      detail: expect.stringContaining("no Anthropic API key"),
    });
    expect(offline.code).toBe(0);
    expect(offline.line("model key")[0]).toMatchObject({ status: "skip" });
    expect(model.requests).toHaveLength(0);
  });

  it("checks every named model's key, and names the entry whose key is refused", async () => {
    editConfig(
      (yaml) =>
        `${yaml}\nmodels:\n  haiku:\n    model: claude-haiku-4-5\n  other:\n    model: x\n    api_key: sk-ant-other-key\n`,
    );

    const { code, line, stdout } = await doctor();

    expect(code).toBe(1);
    const [check] = line("model key");
    expect(check).toMatchObject({ status: "fail" });
    expect(check?.detail).toMatch(
      /^default: accepted by .*; haiku: accepted by .*; other: .*HTTP 401/,
    );
    expect(check?.fix).toMatch(/^other: /);
    expect(stdout).not.toContain("sk-ant-other-key");
  });

  it("names picklebot.yaml and the entry's model key when the Anthropic API does not know its model, and an endpoint that is a web page", async () => {
    const site = await startFakeOpenAi();
    try {
      editConfig(
        (yaml) =>
          `${yaml}\nmodels:\n  old:\n    model: claude-3-nonexistent\n  site:\n    model: claude-haiku-4-5\n    base_url: ${site.root}/ui\n`,
      );

      const { code, line } = await doctor();

      expect(code).toBe(1);
      const [check] = line("model key");
      expect(check?.detail).toContain(
        `old: in picklebot.yaml, models.old.model claude-3-nonexistent is not a model ${model.url} knows (GET /v1/models/claude-3-nonexistent answered 404)`,
      );
      expect(check?.detail).toContain(
        `site: ${site.root}/ui/v1/models/claude-haiku-4-5 answered with a web page (HTTP 200), not the Anthropic API`,
      );
      expect(check?.detail).toMatch(/^default: accepted by .*, which knows claude-sonnet-4-6;/);
      expect(check?.fix).toBe(
        "old: set models.old.model in picklebot.yaml to a model id the API lists (GET /v1/models), e.g. claude-sonnet-4-6",
      );
    } finally {
      await site.close();
    }
  });

  describe("chat tokens", () => {
    let telegram: FakeTelegram;
    let discord: FakeDiscord;

    beforeEach(async () => {
      telegram = await startFakeTelegram({ token: TELEGRAM_TOKEN });
      discord = await startFakeDiscord({ token: DISCORD_TOKEN });
    });

    afterEach(async () => {
      await telegram.close();
      await discord.close();
    });

    function enableChats(telegramToken: string, discordToken: string): void {
      replaceSection(
        "telegram",
        `  enabled: true\n  bot_token: ${telegramToken}\n  api_root: ${telegram.apiRoot}\n`,
      );
      replaceSection(
        "discord",
        `  enabled: true\n  bot_token: ${discordToken}\n  api_base: ${discord.restRoot}\n`,
      );
    }

    it("accepts the tokens Telegram (getMe) and Discord (users/@me) accept", async () => {
      enableChats(TELEGRAM_TOKEN, DISCORD_TOKEN);

      const { code, line } = await doctor();

      expect(line("telegram")[0]).toMatchObject({ status: "ok" });
      expect(line("discord")[0]).toMatchObject({ status: "ok" });
      expect(code).toBe(0);
    });

    it("fails each line whose token the platform refuses with 401, never showing it", async () => {
      enableChats("999:AAF-revoked-telegram", "revoked.discord.token");

      const { code, line, stdout } = await doctor();

      expect(code).toBe(1);
      expect(line("telegram")[0]).toMatchObject({
        status: "fail",
        detail: "Telegram refused the bot token (HTTP 401)",
        fix: expect.stringContaining("@BotFather"),
      });
      expect(line("discord")[0]).toMatchObject({
        status: "fail",
        detail: "Discord refused the bot token (HTTP 401)",
      });
      expect(stdout).not.toContain("AAF-revoked-telegram");
      expect(stdout).not.toContain("revoked.discord.token");
    });
  });

  describe("Slack tokens and scopes", () => {
    /** Enables Slack against a fake with `scopes`; returns its tokens. */
    async function enableSlack(scopes?: string[]) {
      const slack = await startFakeSlack(scopes === undefined ? {} : { scopes });
      replaceSection(
        "slack",
        `  enabled: true\n  bot_token: ${slack.botToken}\n  app_token: ${slack.appToken}\n  api_url: ${slack.apiUrl}\n`,
      );
      return slack;
    }

    it("accepts both tokens (auth.test, apps.connections.open) with the six scopes", async () => {
      const slack = await enableSlack();
      try {
        const { code, line } = await doctor();
        expect(line("slack")[0]).toMatchObject({
          status: "ok",
          detail: expect.stringContaining(
            "chat:write, im:history, app_mentions:read, users:read, files:read, files:write",
          ),
        });
        expect(code).toBe(0);
      } finally {
        await slack.close();
      }
    });

    it("accepts an app made from the manifest of the chat platforms guide", async () => {
      const guide = fs.readFileSync(
        new URL("../../docs/guides/chat-platforms.md", import.meta.url),
        "utf8",
      );
      const block = /Create the app from this manifest[\s\S]*?```yaml\n([\s\S]*?)```/.exec(guide);
      const manifest = parseYaml((block?.[1] ?? "").replace(/^ {3}/gm, ""));
      const slack = await enableSlack(manifest.oauth_config.scopes.bot);
      try {
        const { code, line } = await doctor();
        expect(line("slack")[0]).toMatchObject({ status: "ok" });
        expect(code).toBe(0);
        expect(manifest.settings).toMatchObject({
          socket_mode_enabled: true,
          interactivity: { is_enabled: true },
          event_subscriptions: { bot_events: ["app_mention", "message.im"] },
        });
      } finally {
        await slack.close();
      }
    });

    it("warns when the bot token lacks the file scopes: text works, files do not", async () => {
      const slack = await enableSlack([
        "chat:write",
        "im:history",
        "app_mentions:read",
        "users:read",
      ]);
      try {
        const { line } = await doctor();
        expect(line("slack")[0]).toMatchObject({
          status: "warn",
          detail: expect.stringContaining("lacks the scopes files:read, files:write"),
          fix: expect.stringContaining("reinstall the app"),
        });
      } finally {
        await slack.close();
      }
    });

    it("fails on a missing scope, then on a revoked token, naming which, never showing it", async () => {
      const slack = await enableSlack(["chat:write", "im:history"]);
      try {
        const scopes = await doctor();
        expect(scopes.line("slack")[0]).toMatchObject({
          status: "fail",
          detail: "the bot token lacks the scopes app_mentions:read, users:read",
          fix: expect.stringContaining("Bot Token Scopes"),
        });
        slack.revoke(slack.botToken);
        const bot = await doctor();
        expect(bot.code).toBe(1);
        expect(bot.line("slack")[0]).toMatchObject({
          status: "fail",
          detail: "Slack refused the bot token (auth.test: invalid_auth)",
          fix: expect.stringContaining("SLACK_BOT_TOKEN"),
        });
        expect(bot.stdout).not.toContain(slack.botToken);
      } finally {
        await slack.close();
      }
    });

    it("fails on a revoked app-level token", async () => {
      const slack = await enableSlack();
      try {
        slack.revoke(slack.appToken);
        const { line, stdout } = await doctor();
        expect(line("slack")[0]).toMatchObject({
          status: "fail",
          detail: "Slack refused the app-level token (apps.connections.open: invalid_auth)",
          fix: expect.stringContaining("SLACK_APP_TOKEN"),
        });
        expect(stdout).not.toContain(slack.appToken);
      } finally {
        await slack.close();
      }
    });
  });

  it("fails the workspace line in a folder that is not a workspace, and creates nothing", async () => {
    const empty = mkdtempSync(path.join(tmpdir(), "picklebot-empty-"));
    try {
      const run = await runCli(["doctor", "--json"], { cwd: empty });
      const report = JSON.parse(run.stdout) as { checks: CheckLine[] };

      expect(run.code).toBe(1);
      expect(report.checks.find((l) => l.check === "workspace")).toMatchObject({
        status: "fail",
        detail: expect.stringContaining("no picklebot.yaml or agents/ here"),
      });
      expect(fs.readdirSync(empty)).toEqual([]);
    } finally {
      fs.rmSync(empty, { recursive: true, force: true });
    }
  });

  it("fails the config line on a bad key, naming the file and key", async () => {
    editConfig((yaml) => `${yaml}\nwokers: {}\n`);

    const { code, line } = await doctor();

    expect(code).toBe(1);
    expect(line("config")[0]).toMatchObject({
      status: "fail",
      detail: expect.stringMatching(/picklebot\.yaml.*wokers.*workers/),
    });
  });

  it("fails the agents line for a broken AGENT.md", async () => {
    fs.mkdirSync(path.join(dir, "agents", "broken"));
    fs.writeFileSync(path.join(dir, "agents", "broken", "AGENT.md"), "---\nname: [unclosed\n---\n");

    const { code, line } = await doctor();

    expect(code).toBe(1);
    expect(line("agents")[0]).toMatchObject({
      status: "fail",
      detail: expect.stringContaining(path.join("agents", "broken", "AGENT.md")),
    });
  });

  it("warns about a model without a price, fails it under a budget, and passes once priced", async () => {
    fs.mkdirSync(path.join(dir, "agents", "local"));
    fs.writeFileSync(
      path.join(dir, "agents", "local", "AGENT.md"),
      "---\nname: Local\ndescription: Local model\nmodel: mystery-model\n---\nYou help.\n",
    );
    const unpriced = await doctor(["--offline"]);
    expect(unpriced.line("prices")).toEqual([
      {
        check: "prices",
        status: "warn",
        detail: 'model "mystery-model" (agent local) has no price: its calls count as $0',
        fix: expect.stringContaining('add "mystery-model: {input: …'),
      },
    ]);
    expect(unpriced.line("prices")[0]?.fix).toContain("under llm.prices in picklebot.yaml");
    expect(unpriced.code).toBe(0);

    editConfig((yaml) => `${yaml}\nbudget:\n  daily_usd: 2\n`);
    const budgeted = await doctor(["--offline"]);
    expect(budgeted.line("prices")[0]).toMatchObject({
      status: "fail",
      detail: expect.stringContaining("a budget applies to local, so its model calls are refused"),
    });
    expect(budgeted.code).toBe(1);

    editConfig((yaml) =>
      yaml.replace(
        /^ {2}model: .*$/m,
        (line) =>
          `${line}\n  prices:\n    mystery-model: {input: 0, output: 0, cache_read: 0, cache_write: 0}`,
      ),
    );
    const priced = await doctor(["--offline"]);
    expect(priced.line("prices")).toEqual([
      { check: "prices", status: "ok", detail: "every model the agents call has a price" },
    ]);
    expect(priced.code).toBe(0);
  });

  it("fails the crons line for a cron naming an unknown agent, with the file", async () => {
    fs.writeFileSync(
      path.join(dir, "crons", "digest.yaml"),
      'schedule: "0 7 * * *"\nagent: picke\nprompt: "news"\n',
    );

    const { code, line } = await doctor();

    expect(code).toBe(1);
    expect(line("crons")).toEqual([
      expect.objectContaining({
        status: "fail",
        detail: expect.stringMatching(/digest\.yaml: "agent" "picke" .*did you mean "pickle"/),
      }),
    ]);
  });

  it("fails the database line for a damaged picklebot.db", async () => {
    fs.writeFileSync(
      path.join(dir, "history", "picklebot.db"),
      "not a database at all ".repeat(200),
    );

    const { code, line } = await doctor();

    expect(code).toBe(1);
    expect(line("database")[0]).toMatchObject({
      status: "fail",
      detail: expect.stringContaining(path.join(dir, "history", "picklebot.db")),
      fix: expect.stringContaining("restore a backup"),
    });
  });

  it("warns about a memory over its budget, with the command that shortens it", async () => {
    const editor = path.join(dir, "editor.sh");
    fs.writeFileSync(editor, `#!/bin/sh\nprintf '%s' '${"x".repeat(150)}' > "$1"\n`, {
      mode: 0o755,
    });
    const edit = await runCli(["memory", "edit", "owner", "--workspace", dir], {
      env: { EDITOR: editor, VISUAL: undefined },
    });
    expect(edit.code).toBe(0);
    expect((await doctor()).line("memory")).toEqual([
      { check: "memory", status: "ok", detail: "1 memories, each within its budget" },
    ]);

    const agentFile = path.join(dir, "agents", "pickle", "AGENT.md");
    const agent = fs.readFileSync(agentFile, "utf8");
    fs.writeFileSync(
      agentFile,
      agent.replace("name: Pickle", "name: Pickle\nmemory:\n  person_chars: 100"),
    );
    const { code, line } = await doctor();
    expect(code).toBe(0);
    expect(line("memory")).toEqual([
      {
        check: "memory",
        status: "warn",
        detail:
          "agent pickle's memory of owner is 150 characters, over its budget of 100; every conversation sends it whole and the agent can add nothing to it",
        fix: "shorten it: picklebot memory edit owner --agent pickle (or raise memory.person_chars in the agent's AGENT.md)",
      },
    ]);
  });

  it("fails the history line when history/ belongs to another user (root after a sudo)", async () => {
    const history = path.join(dir, "history");
    // As root, run doctor as `nobody` against a root-owned history/; otherwise take the
    // write permission away (root would ignore that).
    const asRoot = process.getuid?.() === 0;
    if (asRoot) chownTree(path.dirname(dir), { uid: 65534, gid: 65534 }, history);
    else fs.chmodSync(history, 0o555);

    const run = await runCli(["doctor", "--json", "--workspace", dir], {
      ...(asRoot ? { user: { uid: 65534, gid: 65534 } } : {}),
    });
    fs.chmodSync(history, 0o755);
    const report = JSON.parse(run.stdout) as { checks: CheckLine[] };

    expect(run.code).toBe(1);
    expect(report.checks.find((l) => l.check === "history")).toMatchObject({
      status: "fail",
      detail: expect.stringContaining(`${history} is not writable`),
      fix: expect.stringContaining("chown"),
    });
  });

  it.runIf(process.getuid?.() === 0)(
    "warns root that runs it on a workspace another user owns, without failing",
    async () => {
      fs.chownSync(path.join(dir, "history"), 65534, 65534);

      const { code, line } = await doctor();

      expect(line("history")[0]).toMatchObject({
        status: "warn",
        detail: expect.stringContaining("you run this as root"),
      });
      expect(code).toBe(0);
    },
  );

  it("warns, without failing, when bash runs with no sandbox", async () => {
    replaceSection("tools", "  bash:\n    sandbox: none\n");

    const { code, line } = await doctor();

    expect(line("bash sandbox")[0]).toMatchObject({
      status: "warn",
      fix: expect.stringContaining("install bubblewrap"),
    });
    expect(code).toBe(0);
  });

  it("searches the SearXNG of web_search once, and fails when its JSON format is off", async () => {
    const closed = await startFakeSearxng({ jsonEnabled: false });
    const open = await startFakeSearxng();
    try {
      const searxng = (url: string) =>
        replaceSection("tools", `  web_search:\n    backend: searxng\n    base_url: ${url}\n`);
      searxng(closed.url);
      const refused = await doctor();
      expect(refused.line("web search")[0]).toMatchObject({
        status: "fail",
        detail: expect.stringContaining("enable it in the instance's settings.yml"),
      });
      expect(refused.code).toBe(1);

      searxng(open.url);
      const accepted = await doctor();
      expect(accepted.line("web search")[0]).toMatchObject({ status: "ok" });
      expect(open.queries).toHaveLength(1);
      expect(accepted.code).toBe(0);
    } finally {
      await Promise.all([closed.close(), open.close()]);
    }
  });

  it("lists each MCP server's tools, and fails the line of one that does not start", async () => {
    const { command, args } = stdioFake();
    editConfig(
      (yaml) =>
        `${yaml}\nmcp_servers:\n` +
        `  tools:\n    command: ${JSON.stringify(command)}\n    args: ${JSON.stringify(args)}\n    sandbox: none\n` +
        `  broken:\n    command: ${JSON.stringify(command)}\n    args: ["-e", "process.exit(3)"]\n    sandbox: none\n`,
    );

    const { code, line } = await doctor();

    expect(line("mcp tools")[0]).toMatchObject({
      status: "ok",
      detail: expect.stringMatching(/\d+ tools?/),
    });
    expect(line("mcp broken")[0]).toMatchObject({
      status: "fail",
      fix: expect.stringContaining("mcp_servers.broken"),
    });
    expect(code).toBe(1);
    const offline = await doctor(["--offline"]);
    expect(offline.line("mcp servers")[0]).toMatchObject({ status: "skip" });
  });

  it("fails the postgres line when the database server is not reachable", async () => {
    replaceSection(
      "queue",
      "  backend: postgres\n  url: postgres://nobody:secret-pw@127.0.0.1:9/none\n",
    );
    replaceSection("history", "  backend: postgres\n");

    const { code, line, stdout } = await doctor();

    expect(code).toBe(1);
    expect(line("postgres")[0]).toMatchObject({
      status: "fail",
      detail: expect.stringContaining("cannot open the PostgreSQL database"),
    });
    expect(stdout).not.toContain("secret-pw");
  });

  describe("with PostgreSQL", async () => {
    const skip = await postgresSkipReason();
    let database: TestDatabase;

    beforeEach(async () => {
      if (skip) return;
      database = await createTestDatabase("doctor");
      replaceSection("queue", `  backend: postgres\n  url: ${database.url}\n`);
      replaceSection("history", "  backend: postgres\n");
    });

    afterEach(async () => {
      await database?.drop();
    });

    it.skipIf(skip)(
      "fails on a database that is not migrated, passes once a server migrated it",
      async () => {
        const fresh = await doctor();
        const { openPostgres } = await import("../../src/storage/postgres/database.js");
        await (await openPostgres({ url: database.url, poolSize: 1 })).end();
        const migrated = await doctor();

        expect(fresh.code).toBe(1);
        expect(fresh.line("postgres")[0]).toMatchObject({
          status: "fail",
          detail: expect.stringMatching(/reachable, but \d+ migration\(s\) not applied/),
        });
        expect(migrated.line("postgres")[0]).toMatchObject({ status: "ok" });
        expect(migrated.code).toBe(0);
      },
    );
  });
});

/** Gives `dir` and everything below it to `user`, except `keep` (left to its owner). */
function chownTree(dir: string, user: { uid: number; gid: number }, keep: string): void {
  if (dir === keep) return;
  fs.chownSync(dir, user.uid, user.gid);
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) chownTree(full, user, keep);
    else fs.chownSync(full, user.uid, user.gid);
  }
}
