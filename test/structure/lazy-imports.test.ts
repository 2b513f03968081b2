/**
 * Each command loads only the libraries it uses (issue 26): the built CLI runs with
 * test/fixtures/record-imports.mjs, which writes down every module the process resolves
 * (ES imports through a resolve hook, CommonJS require() calls too), and the packages
 * among them are checked. `--version` loads nothing but commander; `--help`, `status` and
 * `jobs` load no chat library, model SDK, pg, MCP SDK nor the HTTP server; a server loads
 * a chat library only for a platform that is enabled, and no model SDK until a model is
 * called.
 */
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type FakeAnthropic, startFakeAnthropic } from "../fakes/anthropic.js";
import { startFakeDiscord } from "../fakes/discord.js";
import { startFakeSlack } from "../fakes/slack.js";
import { type FakeTelegram, startFakeTelegram } from "../fakes/telegram.js";
import { discordYaml, slackYaml, startBusServer, telegramYaml } from "../helpers/bus.js";
import { runCli } from "../helpers/cli.js";
import { killAllServers, startServer } from "../helpers/server.js";
import { fakeModelConfig, makeWorkspace, type TempWorkspace } from "../helpers/workspace.js";

const RECORDER = fileURLToPath(new URL("../fixtures/record-imports.mjs", import.meta.url));

/** Libraries a command that does not use them must not load. */
const DISCORD_LIBRARIES = ["@discordjs/ws", "@discordjs/rest"];
const CHAT_LIBRARIES = [
  "telegraf",
  ...DISCORD_LIBRARIES,
  "discord.js",
  "@slack/socket-mode",
  "@slack/web-api",
];
const HEAVY = [
  ...CHAT_LIBRARIES,
  "@anthropic-ai/sdk",
  "pg",
  "@modelcontextprotocol/sdk",
  "hono",
  "@hono/node-server",
];

let fake: FakeAnthropic;
let ws: TempWorkspace;
let log: string;

beforeEach(async () => {
  fake = await startFakeAnthropic();
  ws = makeWorkspace({ "picklebot.yaml": fakeModelConfig(fake.url) });
  log = join(ws.dir, "imports.log");
});

afterEach(async () => {
  await killAllServers();
  await fake.close();
  ws.remove();
});

/** The environment that makes a child process record what it loads into `log`. */
function recording(): Record<string, string> {
  return { NODE_OPTIONS: `--import=${RECORDER}`, PICKLEBOT_IMPORT_LOG: log };
}

/** The packages (names under node_modules/) the recorded process loaded. */
function loadedPackages(): Set<string> {
  const lines = readFileSync(log, "utf8").split("\n");
  const names = lines.flatMap((line) => {
    const path = line.split("/node_modules/").at(-1);
    if (path === undefined || path === line) return [];
    const parts = path.split("/");
    return [parts[0]?.startsWith("@") ? `${parts[0]}/${parts[1]}` : (parts[0] ?? "")];
  });
  return new Set(names);
}

/** Runs `picklebot <args>` recording its imports; resolves the packages it loaded. */
async function packagesOf(...args: string[]): Promise<Set<string>> {
  rmSync(log, { force: true });
  const result = await runCli(args, { env: recording() });
  expect(result.code, result.stderr).toBe(0);
  return loadedPackages();
}

describe("the CLI loads what a command uses", () => {
  it("--version loads no package but commander, and no command", async () => {
    expect([...(await packagesOf("--version"))]).toEqual(["commander"]);
    expect(readFileSync(log, "utf8")).not.toMatch(/dist\/cli\/(?!main\.js)/);
  });

  it("--help, status and jobs load no chat library, model SDK, pg, MCP SDK nor HTTP server", async () => {
    for (const args of [["--help"], ["status"], ["jobs"], ["jobs", "--help"]]) {
      const packages = await packagesOf(...args, "--workspace", ws.dir);
      // The recorder sees what is loaded: status and jobs read the SQLite database.
      if (args[0] !== "--help" && args[1] !== "--help") {
        expect(packages, args.join(" ")).toContain("better-sqlite3");
      }
      for (const name of HEAVY)
        expect(packages, `${args.join(" ")} loads ${name}`).not.toContain(name);
    }
  });
});

describe("the server loads what its config enables", () => {
  let telegram: FakeTelegram | null = null;
  afterEach(async () => {
    await telegram?.close();
    telegram = null;
  });

  it("with no chat platform, an idle server loads no chat library, model SDK, pg nor MCP SDK", async () => {
    const server = await startServer(ws.dir, { env: recording() });
    await fetch(`${server.httpUrl}/healthz`);
    await server.kill();
    const packages = loadedPackages();
    expect(packages).toContain("@hono/node-server");
    for (const name of [
      ...CHAT_LIBRARIES,
      "@anthropic-ai/sdk",
      "pg",
      "@modelcontextprotocol/sdk",
    ]) {
      expect(packages, `the server loads ${name}`).not.toContain(name);
    }
  });

  it("with Telegram enabled, it loads telegraf and no Discord library", async () => {
    telegram = await startFakeTelegram();
    ws.write("picklebot.yaml", fakeModelConfig(fake.url, telegramYaml(telegram)));
    const server = await startBusServer(ws.dir, ["telegram"], { env: recording() });
    await server.kill();
    const packages = loadedPackages();
    expect(packages).toContain("telegraf");
    for (const name of [...DISCORD_LIBRARIES, "discord.js"]) expect(packages).not.toContain(name);
    expect(packages).not.toContain("@slack/web-api");
  });

  it("with Discord enabled, it loads the gateway and REST clients, not discord.js's Client", async () => {
    const discord = await startFakeDiscord();
    try {
      ws.write("picklebot.yaml", fakeModelConfig(fake.url, discordYaml(discord)));
      const server = await startBusServer(ws.dir, ["discord"], { env: recording() });
      await server.kill();
      const packages = loadedPackages();
      for (const name of DISCORD_LIBRARIES) expect(packages).toContain(name);
      // Its Client, caches and validators cost about 10 MiB of an idle server (bench/RESULTS.md).
      expect(packages).not.toContain("discord.js");
      expect(packages).not.toContain("telegraf");
    } finally {
      await discord.close();
    }
  });

  it("with Slack enabled, it loads the Slack clients and no other chat library", async () => {
    const slack = await startFakeSlack();
    try {
      ws.write("picklebot.yaml", fakeModelConfig(fake.url, slackYaml(slack)));
      const server = await startBusServer(ws.dir, ["slack"], { env: recording() });
      await server.kill();
      const packages = loadedPackages();
      expect(packages).toContain("@slack/socket-mode");
      expect(packages).toContain("@slack/web-api");
      expect(packages).not.toContain("telegraf");
      for (const name of [...DISCORD_LIBRARIES, "discord.js"]) expect(packages).not.toContain(name);
    } finally {
      await slack.close();
    }
  });
});
