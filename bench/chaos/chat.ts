/**
 * The chat chaos run: a real `picklebot server` (the built CLI) with its Telegram bus on
 * the fake Telegram (or, with `--platform slack`, its Slack bus on the fake Slack),
 * answering user messages in several chats with long streamed replies from the fake
 * Anthropic (edited while they stream, up to four Telegram messages each),
 * is SIGKILLed `--kills` times at chosen moments and restarted after each. A last server
 * drains everything and stops on SIGTERM; then chat-verify.ts checks, from what the fake
 * platform shows, that every message got its whole reply and no part went out twice
 * beyond the window docs/guides/chat-platforms.md states ("Delivery you can trust"). Exit
 * code 0 only when nothing was violated.
 *
 * Each cycle starts a server and kills it in one of these ways:
 *   startup   at a random moment after the spawn (often before it is up, or recovering)
 *   random    at a random moment while it runs
 *   streamed  0–2 ms after Telegram answered a send or an edit (a stream or a delivery)
 *   accepted  the moment Telegram accepted a new message, before its answer leaves: the
 *             unavoidable window, hit on purpose
 *   stored    0–0.3 ms after a final reply was committed to the outbox
 *   sent      0–1 ms after Telegram answered the call that showed a reply's last part
 *             in full (before the outbox marks it delivered)
 *
 * (Telegram or Slack below: the platform of the run.)
 *
 * Usage: npm run chaos -- --chat [--platform telegram|slack] [--messages 200] [--kills 40]
 *        [--chats 6] [--seed N] [--keep]
 */

import { cpus } from "node:os";
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";
import {
  type FakeAnthropic,
  lastUserText,
  startFakeAnthropic,
} from "../../test/fakes/anthropic.js";
import { startCli } from "../../test/helpers/cli.js";
import { photo } from "../../test/helpers/media.js";
import { openWorkspaceDb, ServerProcess } from "../../test/helpers/server.js";
import { makeWorkspace, type TempWorkspace } from "../../test/helpers/workspace.js";
import { epochNow, KILL_MODES, type KillMode, killNow, killWhen, STARTED } from "./chat-kills.js";
import {
  CHAOS_PLATFORMS,
  type ChaosPlatform,
  type ChaosPlatformName,
  startChaosPlatform,
} from "./chat-platforms.js";
import {
  type Generation,
  numberOf,
  type OutboxRowSeen,
  replyText,
  type SentUserMessage,
  userText,
  verifyChat,
} from "./chat-verify.js";
import { Random } from "./random.js";

const AGENT = `---
name: Pickle
description: The chat chaos run's agent
tools: []
---
You answer at length.
`;

interface Settings {
  platform: ChaosPlatformName;
  messages: number;
  kills: number;
  chats: number;
  seed: number;
  keep: boolean;
  help: boolean;
}

const USAGE = `usage: npm run chaos -- --chat [--platform telegram|slack] [--messages N] [--kills N] [--chats N] [--seed N] [--keep]
  --platform  the chat platform, on its fake (default: telegram)
  --messages  user messages sent over the fake platform (default: 200)
  --kills     SIGKILL and restart the server this many times (default: 40)
  --chats     private chats the messages are spread over (default: 6)
  --seed      draw the same replies, kill modes and delays again (default: from the clock)
  --keep      keep the temp workspace (it is always kept when a check fails)`;

/** Everything the run shares between its cycles. */
export interface Run {
  settings: Settings;
  random: Random;
  ws: TempWorkspace;
  platform: ChaosPlatform;
  model: FakeAnthropic;
  db: ReturnType<typeof openWorkspaceDb> | null;
  sent: SentUserMessage[];
  generations: Generation[];
  kills: Map<KillMode, number>;
  violations: string[];
}

/** One run; resolves the process exit code. */
export async function main(argv: string[]): Promise<number> {
  let settings: Settings;
  try {
    settings = parseSettings(argv);
  } catch (error) {
    console.error(
      `chaos --chat: ${error instanceof Error ? error.message : String(error)}\n${USAGE}`,
    );
    return 2;
  }
  if (settings.help) {
    console.log(USAGE);
    return 0;
  }
  // Separate streams: the kills replay by seed whatever order the model's calls come in.
  const random = new Random(settings.seed);
  const modelRandom = new Random(settings.seed + 1);
  const producerRandom = new Random(settings.seed + 2);
  const platform = await startChaosPlatform(settings.platform);
  const model = await startFakeAnthropic({ defaultReply: (request) => answer(request) });
  const chats = platform.chats(settings.chats);
  const ws = makeWorkspace({
    "picklebot.yaml": `llm:\n  api_key: test-key\n  base_url: ${model.url}\n  timeout_s: 20\nhttp:\n  port: 0\nworkers:\n  agent_concurrency: 4\n  max_attempts: 100000\n  job_timeout_s: 60\n${platform.yaml(chats)}`,
    "agents/pickle/AGENT.md": AGENT,
  });
  const run: Run = {
    settings,
    random,
    ws,
    platform,
    model,
    db: null,
    sent: [],
    generations: [],
    kills: new Map(),
    violations: [],
  };
  function answer(request: Parameters<typeof lastUserText>[0]) {
    // Request bodies hold whole conversations: keep none.
    model.requests.length = 0;
    const n = numberOf(lastUserText(request));
    if (n === null) return { text: "A summary of the chat so far." };
    return {
      text: replyText(n, settings.seed),
      chunks: 8,
      chunkDelayMs: modelRandom.between(80, 350),
    };
  }
  const begin = performance.now();
  console.log(
    `chaos --chat: ${platform.name}, ${settings.messages} messages in ${settings.chats} chats, ${settings.kills} kills, seed ${settings.seed}, workspace ${ws.dir}`,
  );
  const producing = produce(run, chats, producerRandom);
  try {
    for (let cycle = 1; cycle <= settings.kills; cycle += 1) {
      const line = await runCycle(run);
      console.log(`kill ${cycle}/${settings.kills} ${line}; ${run.sent.length} messages sent`);
    }
    await producing;
    await drain(run);
    const verdict = verifyChat(platform, run.sent, outboxRows(run), run.generations, settings.seed);
    run.violations.push(...verdict.violations);
    printSummary(run, verdict, (performance.now() - begin) / 1000);
    return run.violations.length === 0 ? 0 : 1;
  } finally {
    run.db?.close();
    await model.close();
    await platform.close();
    if (!settings.keep && run.violations.length === 0) ws.remove();
    else {
      const record = { generations: run.generations, sent: run.sent, calls: platform.record() };
      ws.write("chat-chaos-record.json", JSON.stringify(record));
      console.log(`workspace kept for inspection (with chat-chaos-record.json): ${ws.dir}`);
    }
  }
}

/**
 * Sends the user messages, 0.2–0.9 s apart, over the chats at random (also while down);
 * where the platform takes photos, every fourth is a photo with the message as its
 * caption, downloaded by its job.
 */
async function produce(run: Run, chats: string[], random: Random): Promise<void> {
  const bytes = await photo(320, 240);
  for (let n = 1; n <= run.settings.messages; n += 1) {
    const chatId = chats[random.integer(chats.length)] ?? "";
    if (n % 4 === 0 && run.platform.writePhoto) {
      // A new file each time (the last byte after JPEG's end marker), as photos are.
      const file = Buffer.concat([bytes, Buffer.from([n % 256])]);
      run.platform.writePhoto(chatId, file, userText(n));
    } else {
      run.platform.write(chatId, userText(n));
    }
    run.sent.push({ number: n, chatId });
    await sleep(random.between(200, 900));
  }
}

/** Starts a server, kills it as the drawn mode says; resolves a line for the log. */
async function runCycle(run: Run): Promise<string> {
  const mode = run.random.pick(KILL_MODES);
  const server = spawnServer(run);
  const generation = run.generations.at(-1) as Generation;
  const note = await killWhen(mode, server, run).catch((error: unknown) => {
    run.violations.push(`the server did not start: ${String(error).slice(0, 2000)}`);
    return "did not start";
  });
  killNow(server, generation);
  await server.exited;
  run.kills.set(mode, (run.kills.get(mode) ?? 0) + 1);
  const upMs = Math.round((generation.killedAt ?? 0) - generation.startedAt);
  return `${mode.padEnd(8)} after ${upMs} ms (${note})`;
}

function spawnServer(run: Run): ServerProcess {
  const child = startCli(["server", "--workspace", run.ws.dir]);
  child.stdin?.end();
  run.generations.push({ startedAt: epochNow(), killedAt: null });
  return new ServerProcess(child, run.ws.dir);
}

/** A last server delivers everything, then stops on SIGTERM, which must exit 0. */
async function drain(run: Run): Promise<void> {
  const server = spawnServer(run);
  try {
    await server.waitForLog(STARTED, 20_000);
    run.db ??= openWorkspaceDb(run.ws.dir);
    const deadline = Date.now() + 240_000;
    while (!settled(run) && Date.now() < deadline) await sleep(200);
    if (!settled(run)) run.violations.push("replies still undelivered after 4 minutes");
    server.signal("SIGTERM");
    const exit = await server.exited;
    if (exit.code !== 0) {
      run.violations.push(`the last server exited ${JSON.stringify(exit)} on SIGTERM, not 0`);
    }
  } finally {
    await server.kill();
  }
}

/** Every message has a job, every job is over, and no reply waits in the outbox. */
function settled(run: Run): boolean {
  const db = run.db as NonNullable<Run["db"]>;
  const count = (sql: string) => (db.prepare(sql).get() as { n: number }).n;
  return (
    count("SELECT COUNT(*) AS n FROM jobs") >= run.sent.length &&
    count("SELECT COUNT(*) AS n FROM jobs WHERE state NOT IN ('done', 'failed')") === 0 &&
    count("SELECT COUNT(*) AS n FROM outbox WHERE state IN ('draft', 'pending')") === 0
  );
}

function outboxRows(run: Run): OutboxRowSeen[] {
  const db = run.db as NonNullable<Run["db"]>;
  const rows = db.prepare("SELECT text, state, message_ids FROM outbox").all() as {
    text: string | null;
    state: string;
    message_ids: string;
  }[];
  return rows.map((row) => ({
    text: row.text,
    state: row.state,
    messageIds: JSON.parse(row.message_ids) as string[],
  }));
}

function printSummary(run: Run, verdict: ReturnType<typeof verifyChat>, seconds: number): void {
  const list = (map: Map<string, number>) =>
    [...map].map(([name, count]) => `${name} ${count}`).join(", ") || "none";
  const killCount = [...run.kills.values()].reduce((sum, count) => sum + count, 0);
  const machine = `${cpus().length} × ${cpus()[0]?.model ?? "cpu"}, Node ${process.version}`;
  console.log("");
  console.log(`chat chaos summary (seed ${run.settings.seed}; ${machine})`);
  console.log(`  time        ${seconds.toFixed(1)} s`);
  console.log(`  kills       ${killCount} SIGKILLs: ${list(run.kills)}`);
  console.log(
    `  messages    ${verdict.replies} in ${run.settings.chats} chats; replies of ${verdict.parts} ${run.platform.name} messages, ${verdict.multiPartReplies} replies split`,
  );
  console.log(`  ${run.platform.name.padEnd(11)} ${run.platform.summary()}`);
  const stray = verdict.strayPartials;
  const lost = stray.lostIdGapsMs.length;
  console.log(
    `  stray       ${lost + stray.otherwise.length} partial messages left by cut streams, ${lost} of them sent just before a kill (id lost; send→kill ms: ${range(stray.lostIdGapsMs)})`,
  );
  for (const line of stray.otherwise.slice(0, 10)) console.log(`    stray ${line}`);
  const copies = verdict.windowCopies.map((copy) => copy.gapMs);
  console.log(
    `  window      ${copies.length} parts shown twice in full, each sent just before a kill (id lost; send→kill ms: ${range(copies)})`,
  );
  if (run.violations.length === 0) {
    console.log("chaos --chat: no violations");
    return;
  }
  for (const violation of run.violations.slice(0, 50)) console.log(`  VIOLATION ${violation}`);
  console.log(`chaos --chat: ${run.violations.length} violations`);
}

/** "min to max" of send→kill gaps (negative: the send was on its way when the kill came). */
function range(gapsMs: number[]): string {
  if (gapsMs.length === 0) return "none";
  return `${Math.min(...gapsMs).toFixed(1)} to ${Math.max(...gapsMs).toFixed(1)}`;
}

function parseSettings(argv: string[]): Settings {
  const { values } = parseArgs({
    args: argv,
    options: {
      chat: { type: "boolean", default: true },
      platform: { type: "string", default: "telegram" },
      messages: { type: "string", default: "200" },
      kills: { type: "string", default: "40" },
      chats: { type: "string", default: "6" },
      seed: { type: "string" },
      keep: { type: "boolean", default: false },
      help: { type: "boolean", default: false },
    },
  });
  const messages = Number(values.messages);
  const kills = Number(values.kills);
  const chats = Number(values.chats);
  const seed = values.seed === undefined ? Date.now() % 2 ** 31 : Number(values.seed);
  for (const [name, value] of Object.entries({ messages, kills, chats, seed })) {
    if (!Number.isInteger(value) || value < 0) {
      throw new Error(`--${name} must be a whole number, got ${String(values[name as "kills"])}`);
    }
  }
  if (chats < 1) throw new Error("--chats must be at least 1");
  const platform = CHAOS_PLATFORMS.find((name) => name === values.platform);
  if (platform === undefined) {
    throw new Error(`--platform must be ${CHAOS_PLATFORMS.join(" or ")}, got ${values.platform}`);
  }
  return {
    platform,
    messages,
    kills,
    chats,
    seed,
    keep: values.keep ?? false,
    help: values.help ?? false,
  };
}
