/**
 * Chat bus benchmark: `picklebot server` as a child process with the Telegram bus on the
 * fake Bot API (test/fakes/telegram.ts, real telegraf inside the server) and an instant
 * fake model (test/fakes/anthropic.ts answering "ok" in one chunk).
 *
 *   first response  the fake hands an update to the bot's held getUpdates → the first
 *                   sendChatAction or sendMessage for that chat (p50/p99 over --latency
 *                   messages, one at a time, round-robin over the chats)
 *   memory          the server's resident set (VmRSS) idle with the bus connected, then
 *                   after every --batch-size of --messages messages across --chats chats
 *                   (each batch: one message per chat, all answered before the next batch),
 *                   each taken after --settle-ms of quiet, and once more after
 *                   --final-idle-ms without work (V8 gives freed pages back when idle)
 *
 * Usage: npm run build && node bench/bus.js [--latency 200] [--messages 5000] [--chats 100]
 *        [--settle-ms 3000] [--final-idle-ms 30000]
 */
import { execFileSync, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { formatMs, markdownTable, percentile } from "./lib/stats.js";

const ROOT = fileURLToPath(new URL("..", import.meta.url));

/** Compiles the two fakes (TypeScript, under test/) into a temp folder and imports them. */
async function loadFakes(dir) {
  const out = join(dir, "fakes");
  mkdirSync(out, { recursive: true });
  writeFileSync(join(out, "package.json"), '{ "type": "module" }\n');
  execFileSync(
    process.execPath,
    [
      join(ROOT, "node_modules/typescript/bin/tsc"),
      ...["--ignoreConfig", "--outDir", out, "--rootDir", join(ROOT, "test/fakes")],
      ...["--module", "nodenext", "--moduleResolution", "nodenext", "--target", "es2023"],
      ...["--skipLibCheck", "--types", "node"],
      join(ROOT, "test/fakes/telegram.ts"),
      join(ROOT, "test/fakes/anthropic.ts"),
    ],
    { cwd: ROOT, stdio: "inherit" },
  );
  const telegram = await import(pathToFileURL(join(out, "telegram.js")).href);
  const anthropic = await import(pathToFileURL(join(out, "anthropic.js")).href);
  return {
    startFakeTelegram: telegram.startFakeTelegram,
    startFakeAnthropic: anthropic.startFakeAnthropic,
  };
}

/** Starts the server and resolves once the Telegram bus is connected. */
function startServer(workspace) {
  const child = spawn(
    process.execPath,
    [join(ROOT, "bin/picklebot.js"), "server", "--workspace", workspace],
    {
      env: { ...process.env, TELEGRAM_BOT_TOKEN: "", ANTHROPIC_API_KEY: "" },
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  return new Promise((resolve, reject) => {
    let partial = "";
    child.stdout.setEncoding("utf8").on("data", (chunk) => {
      const lines = (partial + chunk).split("\n");
      partial = lines.pop() ?? "";
      if (lines.some((line) => line.includes('"msg":"chat platform connected"'))) resolve(child);
    });
    child.on("exit", (code) => reject(new Error(`server exited with ${code} before connecting`)));
  });
}

function rssMiB(pid) {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kib = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? Number.NaN);
  return kib / 1024;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** The first bot call (typing or a message) to `chatId` at or after `since`. */
function firstResponse(telegram, chatId, since) {
  return telegram.waitFor(
    () =>
      telegram.sent.find(
        (call) =>
          (call.method === "sendChatAction" || call.method === "sendMessage") &&
          Number(call.params.chat_id) === chatId &&
          call.time >= since,
      ),
    15_000,
  );
}

/** Sends one message and waits for its reply; returns update delivery → first response, ms. */
async function timedMessage(telegram, chatId, n) {
  const before = telegram.messages(chatId).length;
  const update = telegram.sendUserMessage({ chatId, userId: chatId, text: `latency ${n}` });
  const queued = telegram.updateLog.find((entry) => entry.update === update);
  await telegram.waitFor(() => queued.deliveredAt.length > 0, 15_000);
  const delivered = queued.deliveredAt[0];
  const first = await firstResponse(telegram, chatId, delivered);
  await telegram.waitFor(() => telegram.messages(chatId).length > before, 15_000);
  return first.time - delivered;
}

/** One message in every chat, all answered. */
async function batch(telegram, chats, n) {
  const expected = chats.map((chatId) => telegram.messages(chatId).length + 1);
  for (const chatId of chats)
    telegram.sendUserMessage({ chatId, userId: chatId, text: `load ${n}` });
  await telegram.waitFor(
    () => chats.every((chatId, i) => telegram.messages(chatId).length >= expected[i]),
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
  const { startFakeTelegram, startFakeAnthropic } = await loadFakes(dir);
  const model = await startFakeAnthropic({ defaultReply: { text: "ok", chunks: 1 } });
  const telegram = await startFakeTelegram();
  const chats = Array.from({ length: chatCount }, (_, i) => 1000 + i);
  const workspace = join(dir, "ws");
  mkdirSync(workspace);
  writeFileSync(
    join(workspace, "picklebot.yaml"),
    `llm:\n  api_key: bench\n  base_url: ${model.url}\nhttp:\n  port: 0\n` +
      `telegram:\n  enabled: true\n  bot_token: "${telegram.token}"\n  api_root: ${telegram.apiRoot}\n` +
      `  allowed_user_ids: [${chats.join(", ")}]\n`,
  );
  const server = await startServer(workspace);
  try {
    await sleep(settleMs);
    const idle = rssMiB(server.pid);
    const latencies = [];
    for (let n = 0; n < latencyCount; n += 1) {
      latencies.push(await timedMessage(telegram, chats[n % chats.length], n));
    }
    const memory = [{ messages: 0, rss: idle }];
    const batches = Math.ceil(messageCount / chatCount);
    const every = Math.max(1, Math.floor(batches / 5));
    const started = performance.now();
    for (let b = 1; b <= batches; b += 1) {
      await batch(telegram, chats, b);
      if (b % every === 0 || b === batches) {
        await sleep(settleMs);
        memory.push({ messages: b * chatCount, rss: rssMiB(server.pid) });
      }
    }
    const loadSeconds = (performance.now() - started) / 1000;
    // V8 returns freed heap pages to the system only after a while without work.
    await sleep(options.finalIdleMs ?? 30_000);
    memory.push({ messages: batches * chatCount, rss: rssMiB(server.pid), idle: true });
    return report({ latencies, memory, loadSeconds, messageCount: batches * chatCount, chatCount });
  } finally {
    server.kill("SIGKILL");
    await telegram.close();
    await model.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

function report({ latencies, memory, loadSeconds, messageCount, chatCount }) {
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
        ? "0 (idle, bus connected)"
        : `${messages.toLocaleString("en-US")}${idle ? " (then idle)" : ""}`,
      `${rss.toFixed(1)} MiB`,
    ]),
  );
  const rate = (messageCount / loadSeconds).toFixed(0);
  const markdown = [
    "### Update → first Telegram call (typing or message), instant fake model",
    "",
    latencyTable,
    "",
    `### Resident memory, ${messageCount.toLocaleString("en-US")} messages across ${chatCount} chats (${rate} messages/s end to end)`,
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
    },
  });
  const result = await runBusBench({
    latency: values.latency ? Number(values.latency) : undefined,
    messages: values.messages ? Number(values.messages) : undefined,
    chats: values.chats ? Number(values.chats) : undefined,
    settleMs: values["settle-ms"] ? Number(values["settle-ms"]) : undefined,
    finalIdleMs: values["final-idle-ms"] ? Number(values["final-idle-ms"]) : undefined,
  });
  console.log(result.markdown);
}
