#!/usr/bin/env node
/**
 * Footprint benchmark (issue 26): what picklebot costs before it does anything, measured
 * against bare node in the same run, so the machine's load hits both alike.
 *
 *   start-up   wall time of `node -e 0` and of `node bin/picklebot.js --version` (and,
 *              for reference, `--help` and `status` on a temp workspace), the runs
 *              interleaved, median of --runs each; target: `--version` within 2× of bare
 *              node
 *   idle RSS   `picklebot server` on a temp SQLite workspace with the fake model, started
 *              as a child process; once `/healthz` says healthy (every enabled platform
 *              connected) and it has idled --settle-ms, VmRSS from /proc/<pid>/status
 *              (median of three readings a second apart), and again after --long-idle-ms
 *              (V8's memory reducer has run by then), median over --rounds servers;
 *              targets: at most 85 MiB with no chat platform, at most 100 MiB with
 *              Telegram and Discord connected (to the fakes of test/fakes/, the real
 *              telegraf, @discordjs/ws and @discordjs/rest inside the server)
 *
 * Usage: npm run build && node bench/footprint.js [--runs 20] [--rounds 3] [--settle-ms 3000]
 *        [--long-idle-ms 30000]
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { discordDriver, telegramDriver } from "./lib/platforms.js";
import { loadFakes, rssMiB, sleep } from "./lib/server.js";
import { markdownTable } from "./lib/stats.js";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const CLI = join(ROOT, "bin/picklebot.js");

/** The targets of issue 26, item 8. */
export const TARGETS = { versionRatio: 2, idleNoPlatformMiB: 85, idleBothPlatformsMiB: 100 };

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

const ENV = {
  ...process.env,
  ANTHROPIC_API_KEY: "",
  TELEGRAM_BOT_TOKEN: "",
  DISCORD_BOT_TOKEN: "",
};
delete ENV.PICKLEBOT_WORKSPACE;

/** Wall time of one run of `node <args>`, in ms; throws when it fails. */
function timeRun(args) {
  const begin = performance.now();
  const result = spawnSync(process.execPath, args, { env: ENV, stdio: ["ignore", "pipe", "pipe"] });
  const ms = performance.now() - begin;
  if (result.status !== 0) {
    throw new Error(`node ${args.join(" ")} exited ${result.status}: ${result.stderr}`);
  }
  return ms;
}

/** A workspace folder with `yaml` as its picklebot.yaml, in a new temp folder. */
function workspaceWith(yaml) {
  const dir = mkdtempSync(join(tmpdir(), "picklebot-bench-footprint-"));
  const workspace = join(dir, "ws");
  mkdirSync(workspace);
  writeFileSync(join(workspace, "picklebot.yaml"), yaml);
  return { dir, workspace };
}

/** Start-up times, the commands interleaved run by run; medians in ms. */
export function measureStartup(runs, workspace) {
  const commands = {
    "node -e 0 (bare node)": ["-e", "0"],
    "picklebot --version": [CLI, "--version"],
    "picklebot --help": [CLI, "--help"],
    "picklebot status": [CLI, "status", "--workspace", workspace],
  };
  const times = Object.fromEntries(Object.keys(commands).map((name) => [name, []]));
  for (const args of Object.values(commands)) timeRun(args); // warm the file cache
  for (let run = 0; run < runs; run += 1) {
    for (const [name, args] of Object.entries(commands)) times[name].push(timeRun(args));
  }
  return Object.fromEntries(Object.entries(times).map(([name, ms]) => [name, median(ms)]));
}

/**
 * Starts `picklebot server` on `workspace`; resolves with the child and its HTTP address
 * once it logged "started" and each of `platforms` logged "chat platform connected".
 */
function startServer(workspace, platforms) {
  const child = spawn(process.execPath, [CLI, "server", "--workspace", workspace], {
    env: ENV,
    stdio: ["ignore", "pipe", "inherit"],
  });
  return new Promise((resolve, reject) => {
    let partial = "";
    let http = null;
    const connected = new Set();
    child.stdout.setEncoding("utf8").on("data", (chunk) => {
      const lines = (partial + chunk).split("\n");
      partial = lines.pop() ?? "";
      for (const text of lines) {
        let line;
        try {
          line = JSON.parse(text);
        } catch {
          continue;
        }
        if (line.msg === "picklebot server started") http = String(line.http).split(" ")[0];
        if (line.msg === "chat platform connected") connected.add(line.platform);
      }
      if (http && platforms.every((platform) => connected.has(platform))) resolve({ child, http });
    });
    child.on("exit", (code) => reject(new Error(`server exited with ${code} before it was up`)));
  });
}

/** Polls `/healthz` until it answers healthy (every platform connected, workers running). */
async function untilHealthy(http, timeoutMs = 15_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const report = await (await fetch(`${http}/healthz`)).json();
      if (report.healthy) return report;
    } catch {}
    if (Date.now() > deadline) throw new Error(`${http}/healthz did not say healthy in time`);
    await sleep(100);
  }
}

/** Median of three VmRSS readings a second apart, in MiB. */
async function idleRss(pid) {
  const readings = [];
  for (let i = 0; i < 3; i += 1) {
    if (i > 0) await sleep(1000);
    readings.push(rssMiB(pid));
  }
  return median(readings);
}

/** One server on a fresh workspace: its RSS in MiB after `settleMs` and `longIdleMs` idle. */
async function serverIdleRss({ model, yaml, platforms, settleMs, longIdleMs }) {
  const { dir, workspace } = workspaceWith(
    `llm:\n  api_key: bench\n  base_url: ${model.url}\nhttp:\n  port: 0\n${yaml}`,
  );
  let server = null;
  try {
    server = await startServer(workspace, platforms);
    await untilHealthy(server.http);
    await sleep(settleMs);
    const settled = await idleRss(server.child.pid);
    // V8's memory reducer gives back the start-up's garbage after about 8 s without work.
    await sleep(Math.max(0, longIdleMs - settleMs - 2000));
    return { settled, longIdle: await idleRss(server.child.pid) };
  } finally {
    if (server) {
      const exited = new Promise((done) => server.child.once("exit", done));
      server.child.kill("SIGTERM");
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Runs the benchmark; returns the numbers and a markdown report. */
export async function runFootprintBench(options = {}) {
  const runs = options.runs ?? 20;
  const rounds = options.rounds ?? 3;
  const settleMs = options.settleMs ?? 3000;
  const longIdleMs = options.longIdleMs ?? 30_000;
  const fakes = await loadFakes(["telegram", "discord", "anthropic"]);
  const model = await fakes.anthropic.startFakeAnthropic({ defaultReply: { text: "ok" } });
  const telegram = await fakes.telegram.startFakeTelegram();
  const discord = await fakes.discord.startFakeDiscord();
  const status = workspaceWith(`llm:\n  api_key: bench\n  base_url: ${model.url}\n`);
  try {
    const startup = measureStartup(runs, status.workspace);
    const cases = {
      "no chat platform": { yaml: "", platforms: [] },
      "Telegram and Discord connected (fakes)": {
        yaml: telegramDriver(telegram, 1).yaml + discordDriver(discord, 1).yaml,
        platforms: ["telegram", "discord"],
      },
    };
    const readings = Object.fromEntries(Object.keys(cases).map((name) => [name, []]));
    for (let round = 0; round < rounds; round += 1) {
      for (const [name, spec] of Object.entries(cases)) {
        readings[name].push(await serverIdleRss({ model, settleMs, longIdleMs, ...spec }));
      }
    }
    const idle = Object.fromEntries(
      Object.entries(readings).map(([name, values]) => [
        name,
        {
          settled: median(values.map((value) => value.settled)),
          longIdle: median(values.map((value) => value.longIdle)),
          values,
        },
      ]),
    );
    return report({ startup, idle, runs, rounds, settleMs, longIdleMs });
  } finally {
    await telegram.close();
    await discord.close();
    await model.close();
    rmSync(status.dir, { recursive: true, force: true });
  }
}

function report({ startup, idle, runs, rounds, settleMs, longIdleMs }) {
  const bare = startup["node -e 0 (bare node)"];
  const version = startup["picklebot --version"];
  const startupTable = markdownTable(
    ["command", `median of ${runs} (ms)`, "× bare node"],
    Object.entries(startup).map(([name, ms]) => [
      name,
      ms.toFixed(0),
      `${(ms / bare).toFixed(2)}×`,
    ]),
  );
  const targets = [TARGETS.idleNoPlatformMiB, TARGETS.idleBothPlatformsMiB];
  const mib = (value) => value.toFixed(1);
  const verdict = (value, target) => (value <= target ? "met" : "missed");
  const idleTable = markdownTable(
    [
      "server",
      `RSS ${settleMs / 1000} s idle, median of ${rounds} (MiB)`,
      `RSS ${longIdleMs / 1000} s idle (MiB)`,
      "readings (3 s / 30 s)",
      "target",
    ],
    Object.entries(idle).map(([name, { settled, longIdle, values }], i) => [
      name,
      mib(settled),
      mib(longIdle),
      values.map((value) => `${mib(value.settled)} / ${mib(value.longIdle)}`).join(", "),
      `≤ ${targets[i]}: ${verdict(settled, targets[i])} at ${settleMs / 1000} s, ${verdict(longIdle, targets[i])} at ${longIdleMs / 1000} s`,
    ]),
  );
  const ratio = version / bare;
  const markdown =
    `### Start-up (\`--version\` target: within ${TARGETS.versionRatio}× of bare node: ${verdict(ratio, TARGETS.versionRatio)}, ${ratio.toFixed(2)}×)\n\n` +
    `${startupTable}\n\n### Server idle memory (after \`/healthz\` said healthy)\n\n${idleTable}`;
  return { startup, idle, ratio, markdown };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({
    options: {
      runs: { type: "string" },
      rounds: { type: "string" },
      "settle-ms": { type: "string" },
      "long-idle-ms": { type: "string" },
    },
  });
  const number = (value) => (value === undefined ? undefined : Number(value));
  const result = await runFootprintBench({
    runs: number(values.runs),
    rounds: number(values.rounds),
    settleMs: number(values["settle-ms"]),
    longIdleMs: number(values["long-idle-ms"]),
  });
  console.log(result.markdown);
}
