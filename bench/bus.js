/**
 * Chat bus benchmark: `picklebot server` as a child process with both buses connected,
 * Telegram on the fake Bot API (test/fakes/telegram.ts, real telegraf inside the server)
 * and Discord on the fake REST + gateway (test/fakes/discord.ts, the real @discordjs/ws and @discordjs/rest), and an
 * instant fake model (test/fakes/anthropic.ts answering "ok" in one chunk). The messages
 * go to one platform, `--platform telegram` (default) or `discord`.
 *
 *   first response  the bot receives a message (Telegram: the fake hands the update to the
 *                   held getUpdates; Discord: the fake sends MESSAGE_CREATE) → the first
 *                   typing or message call for that chat (p50/p99 over --latency
 *                   messages, one at a time, round-robin over the chats, --gap-ms apart)
 *   memory          the server's resident set (VmRSS) idle with both buses connected, then
 *                   after every --batch-size of --messages messages across --chats chats
 *                   (each batch: one message per chat, all answered before the next batch),
 *                   each taken after --settle-ms of quiet, and once more after
 *                   --final-idle-ms without work (V8 gives freed pages back when idle)
 *
 * Usage: npm run build && node bench/bus.js [--platform telegram|discord] [--latency 200]
 *        [--messages 5000] [--chats 100] [--settle-ms 3000] [--final-idle-ms 30000]
 *        [--gap-ms 0]
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { discordDriver, telegramDriver } from "./lib/platforms.js";
import { loadFakes, rssMiB, sleep, startServer } from "./lib/server.js";
import { formatMs, markdownTable, percentile } from "./lib/stats.js";

/** Sends one message and waits for its reply; returns delivery → first bot call, ms. */
async function timedMessage(platform, chat, n) {
  const before = platform.replies(chat);
  const delivered = await platform.send(chat, `latency ${n}`);
  const first = await platform.firstCallAt(chat, delivered);
  await platform.waitFor(() => platform.replies(chat) > before, 15_000);
  return first - delivered;
}

/** One message in every chat, all answered. */
async function batch(platform, chats, n) {
  const expected = chats.map((chat) => platform.replies(chat) + 1);
  await Promise.all(chats.map((chat) => platform.send(chat, `load ${n}`)));
  await platform.waitFor(
    () => chats.every((chat, i) => platform.replies(chat) >= expected[i]),
    120_000,
  );
}

/** Runs the benchmark; returns the numbers and a markdown report. */
export async function runBusBench(options = {}) {
  const latencyCount = options.latency ?? 200;
  const messageCount = options.messages ?? 5000;
  const chatCount = options.chats ?? 100;
  const settleMs = options.settleMs ?? 3000;
  const dir = mkdtempSync(join(tmpdir(), "picklebot-bench-bus-"));
  const fakes = await loadFakes(["telegram", "discord", "anthropic"]);
  const model = await fakes.anthropic.startFakeAnthropic({
    defaultReply: { text: "ok", chunks: 1 },
  });
  const telegram = await fakes.telegram.startFakeTelegram();
  const discord = await fakes.discord.startFakeDiscord();
  // Both buses are connected throughout; the messages go to the one measured.
  const platforms = {
    telegram: telegramDriver(telegram, chatCount),
    discord: discordDriver(discord, chatCount),
  };
  const platform = platforms[options.platform ?? "telegram"];
  const { chats } = platform;
  const workspace = join(dir, "ws");
  mkdirSync(workspace);
  writeFileSync(
    join(workspace, "picklebot.yaml"),
    `llm:\n  api_key: bench\n  base_url: ${model.url}\nhttp:\n  port: 0\n` +
      platforms.telegram.yaml +
      platforms.discord.yaml,
  );
  const server = await startServer(workspace, 2);
  try {
    await sleep(settleMs);
    const idle = rssMiB(server.pid);
    const latencies = [];
    for (let n = 0; n < latencyCount; n += 1) {
      if (n > 0) await sleep(options.gapMs ?? 0);
      latencies.push(await timedMessage(platform, chats[n % chats.length], n));
    }
    const memory = [{ messages: 0, rss: idle }];
    const batches = Math.ceil(messageCount / chatCount);
    const every = Math.max(1, Math.floor(batches / 5));
    const started = performance.now();
    for (let b = 1; b <= batches; b += 1) {
      await batch(platform, chats, b);
      if (b % every === 0 || b === batches) {
        await sleep(settleMs);
        memory.push({ messages: b * chatCount, rss: rssMiB(server.pid) });
      }
    }
    const loadSeconds = (performance.now() - started) / 1000;
    // V8 returns freed heap pages to the system only after a while without work.
    await sleep(options.finalIdleMs ?? 30_000);
    memory.push({ messages: batches * chatCount, rss: rssMiB(server.pid), idle: true });
    const messageTotal = batches * chatCount;
    return report({ platform, latencies, memory, loadSeconds, messageCount: messageTotal });
  } finally {
    server.kill("SIGKILL");
    await telegram.close();
    await discord.close();
    await model.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

function report({ platform, latencies, memory, loadSeconds, messageCount }) {
  const latencyTable = markdownTable(
    ["messages", "p50", "p99", "max"],
    [
      [
        String(latencies.length),
        formatMs(percentile(latencies, 50)),
        formatMs(percentile(latencies, 99)),
        formatMs(Math.max(...latencies)),
      ],
    ],
  );
  const memoryTable = markdownTable(
    ["after messages", "RSS"],
    memory.map(({ messages, rss, idle }) => [
      messages === 0
        ? "0 (idle, both buses connected)"
        : `${messages.toLocaleString("en-US")}${idle ? " (then idle)" : ""}`,
      `${rss.toFixed(1)} MiB`,
    ]),
  );
  const rate = (messageCount / loadSeconds).toFixed(0);
  const markdown = [
    `### Update → first ${platform.name} call (typing or message), instant fake model`,
    "",
    latencyTable,
    "",
    `### Resident memory, ${messageCount.toLocaleString("en-US")} ${platform.name} messages across ${platform.chats.length} chats (${rate} messages/s end to end)`,
    "",
    memoryTable,
  ].join("\n");
  return { latencies, memory, markdown };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const { values } = parseArgs({
    options: {
      latency: { type: "string" },
      messages: { type: "string" },
      chats: { type: "string" },
      "settle-ms": { type: "string" },
      "final-idle-ms": { type: "string" },
      "gap-ms": { type: "string" },
      platform: { type: "string" },
    },
  });
  const result = await runBusBench({
    latency: values.latency ? Number(values.latency) : undefined,
    messages: values.messages ? Number(values.messages) : undefined,
    chats: values.chats ? Number(values.chats) : undefined,
    settleMs: values["settle-ms"] ? Number(values["settle-ms"]) : undefined,
    finalIdleMs: values["final-idle-ms"] ? Number(values["final-idle-ms"]) : undefined,
    gapMs: values["gap-ms"] ? Number(values["gap-ms"]) : undefined,
    platform: values.platform,
  });
  console.log(result.markdown);
}
