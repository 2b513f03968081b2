/**
 * Photos into the model (issue 29): `picklebot server` (the built CLI) with Telegram on
 * the fake Bot API and the fake model, measuring
 *
 *   photo → model request  a 5 MB photo queued at the fake Telegram → the fake model
 *                          receives the request holding it (poll, download, sharp, store,
 *                          request), one chat at a time
 *   RSS                    the server's peak resident set (VmHWM) while 20 chats send a
 *                          5 MB photo each at once, then right after and after 30 s
 *                          idle; two such bursts (--bursts), so growth shows. The chat
 *                          of the latency part is one of the 20: its request in a burst
 *                          carries its earlier images too (11 with the default --photos).
 *                          Set the server's environment (MALLOC_ARENA_MAX=2
 *                          MALLOC_TRIM_THRESHOLD_=131072, as the Docker image and the
 *                          systemd unit do) on this command: the server inherits it.
 *   image tokens           what picklebot counts for the image it sent, against the API's
 *                          documented formula (width × height / 750)
 *
 * Usage: node bench/media.js [--photos N] [--bursts N]   (prints markdown for bench/RESULTS.md)
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import sharp from "sharp";
import { imageTokens } from "../dist/agents/context-budget.js";
import { telegramDriver } from "./lib/platforms.js";
import { loadFakes, peakRssMiB, resetPeakRss, rssMiB, sleep, startServer } from "./lib/server.js";
import { formatMs, markdownTable, percentile } from "./lib/stats.js";

const CHATS = 20;

/** A JPEG of noise, about `megabytes` MB (noise does not compress). */
async function noisePhoto(megabytes) {
  const width = 2400;
  // JPEG at quality 92 keeps noise at about 0.83 bytes a pixel.
  const height = Math.round((megabytes * 1024 * 1024) / (width * 0.83));
  const raw = Buffer.alloc(width * height * 3);
  for (let i = 0; i < raw.length; i++) raw[i] = Math.floor(Math.random() * 256);
  return sharp(raw, { raw: { width, height, channels: 3 } })
    .jpeg({ quality: 92 })
    .toBuffer();
}

/**
 * One burst: every chat sends a new photo at once. The peak is VmHWM, reset just before
 * (so it is this burst's, and exact: no sample can miss it); then the RSS right after
 * the last reply and after `idleMs` idle.
 */
async function burst(pid, telegram, driver, arrivals, bytes, round, options) {
  resetPeakRss(pid);
  const before = arrivals.length;
  for (const chatId of driver.chats) {
    const photo = Buffer.concat([bytes, Buffer.from(`burst ${round} ${chatId}`)]);
    telegram.sendUserFile({
      chatId,
      userId: chatId,
      kind: "photo",
      bytes: photo,
      caption: "burst",
    });
  }
  await telegram.waitFor(() => arrivals.length >= before + CHATS, 120_000);
  await telegram.waitFor(
    () =>
      driver.chats.every(
        (chatId) =>
          driver.replies(chatId) > round + (chatId === driver.chats[0] ? options.latencyCount : 0),
      ),
    120_000,
  );
  const peak = peakRssMiB(pid);
  const after = rssMiB(pid);
  await sleep(options.idleMs ?? 30_000);
  return { peak, after, settled: rssMiB(pid) };
}

export async function runMediaBench(options = {}) {
  const latencyCount = options.photos ?? 10;
  options = { ...options, latencyCount };
  const dir = mkdtempSync(join(tmpdir(), "picklebot-bench-media-"));
  const fakes = await loadFakes(["telegram", "anthropic"]);
  const arrivals = [];
  const model = await fakes.anthropic.startFakeAnthropic({
    defaultReply: (request) => {
      arrivals.push({ at: performance.now(), request });
      return { text: "ok", chunks: 1 };
    },
  });
  const telegram = await fakes.telegram.startFakeTelegram();
  const driver = telegramDriver(telegram, CHATS);
  const workspace = join(dir, "ws");
  mkdirSync(workspace);
  writeFileSync(
    join(workspace, "picklebot.yaml"),
    `llm:\n  api_key: bench\n  base_url: ${model.url}\nhttp:\n  port: 0\n${driver.yaml}`,
  );
  const bytes = await noisePhoto(5);
  const server = await startServer(workspace, 1);
  try {
    await sleep(3000);
    const idle = rssMiB(server.pid);
    const latencies = [];
    for (let n = 0; n < latencyCount; n += 1) {
      const chatId = driver.chats[0];
      const before = arrivals.length;
      // A new file each time: the same bytes again would be found stored.
      const photo = Buffer.concat([bytes, Buffer.from(String(n))]);
      const queued = performance.now();
      telegram.sendUserFile({
        chatId,
        userId: chatId,
        kind: "photo",
        bytes: photo,
        caption: `photo ${n}`,
      });
      await telegram.waitFor(() => arrivals.length > before, 60_000);
      latencies.push(arrivals[before].at - queued);
      await telegram.waitFor(() => driver.replies(chatId) > n, 60_000);
    }
    const sent = arrivals
      .at(-1)
      .request.body.messages.at(-1)
      .content.find((b) => b.type === "image");
    const meta = await sharp(Buffer.from(sent.source.data, "base64")).metadata();

    const latencyPeak = peakRssMiB(server.pid);

    const bursts = [];
    for (let round = 0; round < (options.bursts ?? 2); round += 1) {
      bursts.push(await burst(server.pid, telegram, driver, arrivals, bytes, round, options));
    }
    return report({
      latencies,
      photoBytes: bytes.byteLength,
      memory: { idle, latencyPeak, bursts },
      image: { width: meta.width, height: meta.height, bytes: meta.size },
      idleSeconds: (options.idleMs ?? 30_000) / 1000,
    });
  } finally {
    server.kill("SIGKILL");
    await telegram.close();
    await model.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const mib = (value) => `${value.toFixed(1)} MiB`;

function report({ latencies, photoBytes, memory, image, idleSeconds }) {
  const mb = (photoBytes / 1024 / 1024).toFixed(1);
  const latency = markdownTable(
    ["photos", "p50", "p99", "max"],
    [
      [
        String(latencies.length),
        formatMs(percentile(latencies, 50)),
        formatMs(percentile(latencies, 99)),
        formatMs(Math.max(...latencies)),
      ],
    ],
  );
  const rss = markdownTable(
    ["moment", "RSS"],
    [
      ["idle, Telegram connected", mib(memory.idle)],
      [`peak (VmHWM) over the ${latencies.length} photos in one chat`, mib(memory.latencyPeak)],
      ...memory.bursts.flatMap((burst, n) => [
        [
          `burst ${n + 1}: peak (VmHWM) while ${CHATS} chats send a ${mb} MB photo each at once`,
          mib(burst.peak),
        ],
        [`burst ${n + 1}: right after the last reply`, mib(burst.after)],
        [`burst ${n + 1}: after ${idleSeconds} s idle`, mib(burst.settled)],
      ]),
    ],
  );
  const formula = Math.round((image.width * image.height) / 750);
  const tokens = markdownTable(
    ["image sent", "picklebot counts", "API formula (w × h / 750)"],
    [
      [
        `${image.width} × ${image.height} px, JPEG`,
        String(imageTokens(image.width, image.height)),
        String(formula),
      ],
    ],
  );
  return [
    `### Photo (${mb} MB JPEG of noise) → model request, Telegram fake, one chat`,
    "",
    latency,
    "",
    "### Server RSS, 20 chats sending a photo at once",
    "",
    rss,
    "",
    "### Input tokens of the image sent",
    "",
    tokens,
  ].join("\n");
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const { values } = parseArgs({
    options: { photos: { type: "string" }, bursts: { type: "string" } },
  });
  const number = (text) => (text === undefined ? undefined : Number(text));
  console.log(
    await runMediaBench({ photos: number(values.photos), bursts: number(values.bursts) }),
  );
}
