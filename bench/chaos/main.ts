/**
 * The chaos run: a real `picklebot server` (the built CLI) on a temp workspace, against
 * the fake Anthropic server, under a steady stream of jobs enqueued from this process, is
 * SIGKILLed at random moments and restarted, `--cycles` times. Then one last server drains
 * the queue and stops with SIGTERM, and the run checks what a user trusts the server for
 * (see verify.ts). Exit code 0 only when nothing was violated.
 *
 * Each cycle starts a server and kills it in one of these ways:
 *   startup      at a random moment after the spawn (often before it is up, or recovering)
 *   random       at a random moment while it runs
 *   model-call   while a model call is streaming
 *   after-reply  a few hundred microseconds after a model reply arrived: storing the reply,
 *                delivering it, acknowledging the job
 *   compaction   while a summary call or the memory save call before it streams, or
 *                just after its reply
 *   subagent     while a delegate job's child (a researcher job) calls the model, its
 *                parent parked; or right after that reply was stored (the child ending,
 *                its parent being woken); or during or right after the parent's
 *                continuation call, which carries the children's replies
 * Between two cycles the database says which crash window each running job was in.
 *
 * Usage: npm run chaos -- [--cycles 20] [--seed N] [--rate 4] [--keep] (see USAGE)
 */
import { spawnSync } from "node:child_process";
import { cpus } from "node:os";
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";
import { FAKE_MCP_SERVER } from "../../test/fakes/mcp.js";
import { type FakeTelegram, startFakeTelegram } from "../../test/fakes/telegram.js";
import { telegramYaml } from "../../test/helpers/bus.js";
import { startCli } from "../../test/helpers/cli.js";
import { openWorkspaceDb, ServerProcess } from "../../test/helpers/server.js";
import { makeWorkspace, type TempWorkspace } from "../../test/helpers/workspace.js";
import { Answerer, checkApprovals } from "./approvals.js";
import { EventsWatch } from "./events-watch.js";
import { HEARTBEAT_CHAT_ID, HeartbeatProducer } from "./heartbeats.js";
import { type CrashWindow, Inspector } from "./inspect.js";
import {
  CHAOS_MCP_SERVER,
  ChaosModel,
  MEMORY_SAVE_TAG,
  RESEARCHER_ID,
  RESEARCHER_PROMPT,
  SUMMARY_TAG,
} from "./model.js";
import { Random } from "./random.js";
import { REMINDER_CHAT_ID, ScheduleProducer } from "./schedules.js";
import { type JobLogs, verifyRun } from "./verify.js";
import { verifyMedia } from "./verify-media.js";
import {
  CHAOS_MAX_ATTEMPTS,
  type EnqueuedJob,
  FLAKY_AGENT_ID,
  MEDIA_CHAT_ID,
  MEDIA_CONTENT,
  MEDIA_FILE,
  type ModelCall,
  Producer,
  STOP_CHAT_USER,
  subagentCallId,
} from "./workload.js";

type KillMode = "startup" | "random" | "model-call" | "after-reply" | "compaction" | "subagent";

const KILL_MODES: ReadonlyArray<readonly [KillMode, number]> = [
  ["startup", 1],
  ["random", 3],
  ["model-call", 3],
  ["after-reply", 3],
  ["compaction", 1],
  ["subagent", 2],
];

/**
 * The chaos agent: `read` for tool jobs, `bash` for the slow command of stop jobs,
 * `subagent` for delegate jobs, which call the researcher, the MCP server for mcp jobs,
 * `send_file` for media jobs.
 */
const CHAOS_AGENT = `---
name: Pickle
description: The chaos run's agent
tools: [read, write, bash, subagent, send_file, "mcp:${CHAOS_MCP_SERVER}"]
subagents: [${RESEARCHER_ID}]
approvals:
  write:
    "approved/**": ask
---
You answer chaos jobs.
`;

/** The agent delegate jobs call; the fake model tells its requests apart by its prompt. */
const RESEARCHER_AGENT = `---
name: Researcher
description: Looks things up for chaos jobs
tools: [read]
---
${RESEARCHER_PROMPT}
`;

/**
 * The fallback jobs' agent: its primary is the flaky named model, which fails half its
 * calls for good; the default model answers those.
 */
const FLAKY_AGENT = `---
name: Flaky
description: The chaos run's agent whose primary model fails half the time
model: flaky
fallbacks: [default]
tools: [read]
---
You answer chaos jobs, through whichever model answers.
`;

/** The flaky named model; a cool-down of 0 sends every call to it first. */
function flakyModelYaml(url: string): string {
  return `models:\n  flaky:\n    model: flaky-model\n    base_url: ${url}\n    context_window: 8000\n`;
}

/** A file far larger than one tool result may be (the big jobs read it). */
const BIG_FILE = "A line of a big file that a big chaos job reads in full.\n".repeat(6000);

/**
 * A small window, so that chat sessions pass it again and again: their turns are
 * summarised (compaction) and big tool outputs are cut, all under the kills.
 */
const LLM_CONFIG = `  timeout_s: 20
  fallback_cooldown_s: 0
  context_window: 8000
  max_tokens: 2048
  batch_poll_s: 0.2
`;

const WORKSPACE_CONFIG = `workers:
  agent_concurrency: 4
  max_attempts: ${CHAOS_MAX_ATTEMPTS}
  job_timeout_s: 60
history:
  max_messages: 200
`;

/**
 * The mcp jobs' server: the tests' fake over stdio, named after this run so that the run
 * can tell whether any of its processes outlived the servers that started them.
 */
function mcpServersYaml(marker: string): string {
  const args = JSON.stringify([FAKE_MCP_SERVER, "--name", marker]);
  return `mcp_servers:\n  ${CHAOS_MCP_SERVER}:\n    command: ${JSON.stringify(process.execPath)}\n    args: ${args}\n    sandbox: none\n`;
}

/** Pids of the MCP server processes of this run still alive (none once the servers are gone). */
function mcpProcessesOf(marker: string): number[] {
  const found = spawnSync("pgrep", ["-f", `${FAKE_MCP_SERVER} --name ${marker}`], {
    encoding: "utf8",
  });
  return found.stdout.split("\n").filter(Boolean).map(Number);
}

const STARTED = "picklebot server started";
/** A one-shot reminder is set up this often during the run. */
const REMINDER_EVERY_MS = 1500;
const RECOVERED = "requeued jobs left running by the previous server";

interface Settings {
  cycles: number;
  seed: number;
  rate: number;
  keep: boolean;
  help: boolean;
}

const USAGE = `usage: npm run chaos -- [--cycles N] [--seed N] [--rate JOBS_PER_S] [--keep]
  --cycles  SIGKILL and restart the server this many times (default: 20)
  --seed    draw the same kill modes, delays and job mix as an earlier run (default: from
            the clock; timing still differs)
  --rate    jobs enqueued per second, also while the server is down (default: 4)
  --keep    keep the temp workspace (it is always kept when a check fails)`;

/** What the run saw, for the summary. */
interface Tally {
  kills: Map<KillMode, number>;
  windows: Map<CrashWindow, number>;
  /** Kills that left at least one stored reply unacknowledged. */
  unacknowledgedKills: number;
  recovered: number;
  /** Kills that came while at least one job was parked, and the parked jobs they found. */
  parkedKills: number;
  parkedAtKills: number;
  logs: JobLogs;
  /** Epoch ms of each SIGKILL, as the fake Telegram's call times count. */
  killedAt: number[];
  violations: string[];
}

/** One run; resolves the process exit code. */
export async function main(argv: string[]): Promise<number> {
  let settings: Settings;
  try {
    settings = parseSettings(argv);
  } catch (error) {
    console.error(`chaos: ${error instanceof Error ? error.message : String(error)}\n${USAGE}`);
    return 2;
  }
  if (settings.help) {
    console.log(USAGE);
    return 0;
  }
  const random = new Random(settings.seed);
  // Kill modes come from a stream of their own: the workload's draws, which depend on
  // timing, do not shift them, so a seed replays the same modes.
  const killModes = new Random(settings.seed ^ 0x5bd1e995);
  const telegram = await startFakeTelegram();
  let producer: Producer | null = null;
  const model = await ChaosModel.start({
    random,
    onStopJobTool: (call) => {
      const job = producer?.byTag.get(call.jobTag);
      if (job) sendStop(telegram, job, random);
    },
  });
  const telegramConfig = telegramYaml(telegram, { allowedUserIds: [STOP_CHAT_USER] });
  const mcpMarker = `chaos-${process.pid}-${settings.seed}`;
  const ws = makeWorkspace({
    "picklebot.yaml": `llm:\n  api_key: test-key\n  base_url: ${model.url}\n${LLM_CONFIG}http:\n  port: 0\n${flakyModelYaml(model.flakyUrl)}${WORKSPACE_CONFIG}${mcpServersYaml(mcpMarker)}${telegramConfig}`,
    "agents/pickle/AGENT.md": CHAOS_AGENT,
    [`agents/${RESEARCHER_ID}/AGENT.md`]: RESEARCHER_AGENT,
    [`agents/${FLAKY_AGENT_ID}/AGENT.md`]: FLAKY_AGENT,
    "notes.txt": "The chaos run reads this file as its tool call.\n",
    "big.txt": BIG_FILE,
    [MEDIA_FILE]: MEDIA_CONTENT,
  });
  telegram.openChat(MEDIA_CHAT_ID);
  producer = new Producer(ws.dir, random);
  const reminders = new ScheduleProducer(ws.dir, random);
  telegram.openChat(REMINDER_CHAT_ID);
  const heartbeat = new HeartbeatProducer(ws.dir);
  telegram.openChat(HEARTBEAT_CHAT_ID);
  const answerer = new Answerer(ws.dir, random);
  let batchEnder: NodeJS.Timeout | null = null;
  const inspector = new Inspector(ws.dir);
  const watch = new EventsWatch();
  const tally: Tally = {
    kills: new Map(),
    windows: new Map(),
    unacknowledgedKills: 0,
    recovered: 0,
    parkedKills: 0,
    parkedAtKills: 0,
    logs: { done: new Map(), parked: new Map() },
    killedAt: [],
    violations: [],
  };
  const begin = performance.now();
  console.log(
    `chaos: ${settings.cycles} cycles, seed ${settings.seed}, ${settings.rate} jobs/s, workspace ${ws.dir}`,
  );
  try {
    producer.start(settings.rate);
    await reminders.start(REMINDER_EVERY_MS);
    await heartbeat.start();
    answerer.start();
    // The Message Batches API answers the batch jobs' steps at random moments.
    batchEnder = setInterval(() => {
      if (random.chance(0.5)) model.endBatches();
    }, 250);
    for (let cycle = 1; cycle <= settings.cycles; cycle += 1) {
      const line = await runCycle({
        ws,
        producer,
        model,
        random,
        killModes,
        inspector,
        watch,
        tally,
      });
      const counts = inspector.counts();
      console.log(
        `cycle ${cycle}/${settings.cycles} ${line}; jobs ${producer.jobs.length} enqueued, ${counts.done ?? 0} done`,
      );
    }
    await producer.stop();
    await reminders.stop();
    await heartbeat.stop();
    console.log(`draining ${inspector.unfinished()} unfinished jobs with a last server`);
    await drain(ws, inspector, tally, () => reminders.undelivered());
    await checkMcpProcessesGone(mcpMarker, tally);
    await checkFanoutsGone(watch, tally);
    await answerer.stop();
    const items = model.batchItemIds();
    const twice = items.filter((id, index) => items.indexOf(id) !== index);
    for (const id of new Set(twice)) tally.violations.push(`batch item ${id} was submitted twice`);
    console.log(`batches: ${items.length} items submitted through the Message Batches API`);
    const verdict = verifyRun(ws.dir, producer.jobs, model.calls, tally.logs);
    const media = verifyMedia(ws.dir, producer.jobs, telegram, tally.killedAt);
    for (const violation of media.violations) tally.violations.push(violation);
    console.log(
      `media: ${media.sent} files sent once, ${media.windowCopies} sent again in the window after a kill, ${media.waiting} still waiting in the outbox`,
    );
    const db = openWorkspaceDb(ws.dir);
    try {
      const approvals = checkApprovals(db, producer.jobs, model.calls, answerer, tally.violations);
      for (const [ending, count] of approvals) verdict.endings.set(ending, count);
    } finally {
      db.close();
    }
    for (const failure of answerer.failures) tally.violations.push(`an answer failed: ${failure}`);
    // A loop, not push(...): a broken run may find more violations than a call takes arguments.
    for (const violation of verdict.violations) tally.violations.push(violation);
    for (const failure of producer.failures) tally.violations.push(`an enqueue failed: ${failure}`);
    const fired = await reminders.verify(telegram);
    for (const violation of fired.violations) tally.violations.push(violation);
    console.log(
      `reminders: ${fired.oneShots} one-shot and ${fired.recurring} recurring occurrences fired once each; ${fired.resent} deliveries shown again after a kill between send and record`,
    );
    const ticked = heartbeat.verify(telegram);
    for (const violation of ticked.violations) tally.violations.push(violation);
    console.log(`heartbeat: ${ticked.ticks} ticks ran once each and sent nothing to their chat`);
    for (const { refusal } of model.refused.slice(0, 5)) {
      tally.violations.push(`the model API would have refused a request: ${refusal}`);
    }
    if (model.refused.length > 5) {
      tally.violations.push(`${model.refused.length - 5} more requests refused`);
    }
    const seconds = (performance.now() - begin) / 1000;
    printSummary(settings, tally, {
      ...verdict,
      jobs: producer.jobs.length,
      seconds,
      model,
      watch,
    });
    return tally.violations.length === 0 ? 0 : 1;
  } finally {
    if (batchEnder) clearInterval(batchEnder);
    await producer.close();
    reminders.close();
    heartbeat.close();
    await answerer.close();
    inspector.close();
    await model.close();
    await telegram.close();
    if (!settings.keep && tally.violations.length === 0) ws.remove();
    else console.log(`workspace kept for inspection: ${ws.dir}`);
  }
}

interface CycleContext {
  ws: TempWorkspace;
  producer: Producer;
  model: ChaosModel;
  random: Random;
  /** Draws each cycle's kill mode. */
  killModes: Random;
  inspector: Inspector;
  /** Follows each server's `/events`, as an open dashboard would. */
  watch: EventsWatch;
  tally: Tally;
}

/** Starts a server, kills it as the drawn mode says, records what the kill hit. */
async function runCycle(context: CycleContext): Promise<string> {
  const { model, inspector, tally } = context;
  const mode = context.killModes.pick(KILL_MODES);
  const started = performance.now();
  const server = spawnServer(context.ws);
  const stopFollowing = context.watch.follow(server);
  const note = await killWhen(mode, server, context).catch((error: unknown) => {
    tally.violations.push(`the server did not start: ${String(error).slice(0, 2000)}`);
    return "did not start";
  });
  await server.kill();
  tally.killedAt.push(performance.timeOrigin + performance.now());
  await stopFollowing();
  const upMs = Math.round(performance.now() - started);
  model.dropPending();
  countLogs(server, tally);
  tally.kills.set(mode, (tally.kills.get(mode) ?? 0) + 1);
  const windows = inspector.crashWindows();
  for (const window of windows) tally.windows.set(window, (tally.windows.get(window) ?? 0) + 1);
  if (windows.includes("reply stored, job not acknowledged")) tally.unacknowledgedKills += 1;
  const parked = inspector.parked();
  if (parked > 0) tally.parkedKills += 1;
  tally.parkedAtKills += parked;
  const hit = windows.length === 0 ? "no job was running" : `${windows.length} job(s) were running`;
  return `${mode.padEnd(11)} killed after ${upMs} ms (${note}); ${hit}`;
}

/**
 * Sends `/stop` to a stop job's chat while its command runs (it runs for
 * STOP_JOB_COMMAND_S); a stop that arrives late (the server was killed) stops whatever the
 * chat runs next, which only stop jobs may be.
 */
function sendStop(telegram: FakeTelegram, job: EnqueuedJob, random: Random): void {
  const chatId = Number(job.sessionKey.split(":")[1]);
  setTimeout(
    () =>
      telegram.sendUserMessage({
        chatId,
        userId: STOP_CHAT_USER,
        text: "/stop",
        chatType: "private",
      }),
    random.between(50, 400),
  );
}

function spawnServer(ws: TempWorkspace): ServerProcess {
  const child = startCli(["server", "--workspace", ws.dir]);
  child.stdin?.end();
  return new ServerProcess(child, ws.dir);
}

/** Waits for the moment `mode` kills at; resolves a note on what was waited for. */
async function killWhen(mode: KillMode, server: ServerProcess, context: CycleContext) {
  const { model, random } = context;
  if (mode === "startup") {
    await sleep(random.between(0, 800));
    return server.linesMatching(STARTED).length > 0 ? "was up" : "was starting";
  }
  await server.waitForLog(STARTED, 20_000);
  if (mode === "random") {
    await sleep(random.between(0, 600));
    return "at random";
  }
  if (mode === "compaction") return killInCompaction(context);
  if (mode === "subagent") return killInSubagents(context);
  const held = await model.holdCall(800);
  if (!held) return "no model call came";
  if (mode === "model-call") {
    await sleep(random.between(0, 5));
    return `during call #${held.call.number}`;
  }
  held.release();
  // Let the fake write the rest of the reply before this thread busy-waits.
  await new Promise((resolve) => setImmediate(resolve));
  const began = performance.now();
  const stored = untilReplyStored(context, held.call);
  const waited = (performance.now() - began).toFixed(1);
  return `${stored ? "right after storing" : "after"} the reply of call #${held.call.number}, ${waited} ms`;
}

/**
 * Waits for a summary call or the memory save call before it (a session being compacted),
 * then kills while it streams, or 0–20 ms after its reply arrived: the save's calls
 * being stored or run, or the compaction point being stored, or stored and the job's
 * message not yet checkpointed.
 */
async function killInCompaction(context: CycleContext): Promise<string> {
  const held = await context.model.holdCall(1500, (call) =>
    [SUMMARY_TAG, MEMORY_SAVE_TAG].includes(call.jobTag),
  );
  if (!held) return "no summary or memory save call came";
  const what = held.call.jobTag === SUMMARY_TAG ? "summary" : "memory save";
  if (context.random.chance(0.5)) return `during ${what} call #${held.call.number}`;
  held.release();
  await sleep(context.random.between(0, 20));
  return `after the reply of ${what} call #${held.call.number}`;
}

/** A researcher's call: a child job runs while its parent is parked. */
const isChildCall = (call: ModelCall) => call.agent === "researcher";
/** A delegate's continuation: its children ended and it was woken. */
const isContinuation = (call: ModelCall) =>
  call.agent === "pickle" && call.kind === "delegate" && call.step >= 2;

/**
 * Waits (up to 4 s: delegate jobs are few) for a child's model call or a parent's
 * continuation call, then kills while it streams, or right after its reply was stored:
 * the child acknowledged and its parent woken, or the parent finishing.
 */
async function killInSubagents(context: CycleContext): Promise<string> {
  const child = context.random.chance(0.5);
  const what = child ? "researcher" : "continuation";
  const held = await context.model.holdCall(4000, child ? isChildCall : isContinuation);
  if (!held) return `no ${what} call came`;
  if (context.random.chance(0.5)) return `during ${what} call #${held.call.number}`;
  held.release();
  await new Promise((resolve) => setImmediate(resolve));
  const stored = untilReplyStored(context, held.call);
  return `${stored ? "right after storing" : "after"} the reply of ${what} call #${held.call.number}`;
}

/** The id of the job a model call is for: a producer's job, or a delegate's child. */
function jobOfCall(context: CycleContext, call: ModelCall): string | null {
  if (call.agent === "pickle") return context.producer.byTag.get(call.jobTag)?.id ?? null;
  const parent = context.producer.byTag.get(call.parentTag ?? "");
  if (!parent) return null;
  const sessionKey = `subagent:1:${parent.id}:${subagentCallId(call.jobTag)}`;
  return context.inspector.jobOfSessionKey(sessionKey);
}

/**
 * Busy-polls the database (up to 300 ms) until the reply of `call` is committed, then
 * lingers 0–0.2 ms: the kill lands while the reply is delivered or the job acknowledged.
 * A timer could not aim this finely, and a server on a loaded host takes a variable time.
 */
function untilReplyStored(context: CycleContext, call: ModelCall): boolean {
  const jobId = jobOfCall(context, call);
  if (!jobId) return false;
  const deadline = performance.now() + 300;
  let stored = false;
  while (!stored && performance.now() < deadline) {
    stored = context.inspector.replyStored(jobId, call.number);
  }
  spin(context.random.between(0, 0.2));
  return stored;
}

/** Busy-waits `ms`: a timer cannot wait for less than a millisecond. */
function spin(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // The point is to burn the time, precisely.
  }
}

function countLogs(server: ServerProcess, tally: Tally): void {
  for (const line of server.logs) {
    if (line.msg === RECOVERED) tally.recovered += Number(line.recovered ?? 0);
    if (typeof line.job !== "string") continue;
    const counts =
      line.outcome === "done"
        ? tally.logs.done
        : line.outcome === "parked"
          ? tally.logs.parked
          : null;
    counts?.set(line.job, (counts.get(line.job) ?? 0) + 1);
  }
}

/** How long the last server's drain may go without a job finishing before it counts as stuck. */
const DRAIN_STALL_MS = 120_000;

/** A last server finishes every job, then stops on SIGTERM, which must exit 0. */
async function drain(
  ws: TempWorkspace,
  inspector: Inspector,
  tally: Tally,
  undeliveredReminders: () => number,
): Promise<void> {
  const server = spawnServer(ws);
  try {
    await server.waitForLog(STARTED, 20_000);
    const left = await untilNoneLeft(() => inspector.unfinished());
    if (left > 0) {
      tally.violations.push(
        `${left} jobs still unfinished, none finished in the last ${DRAIN_STALL_MS / 1000} s`,
      );
    }
    // Files a killed server left in the outbox go out from this one's retry loop, and so do
    // reminders that fell due.
    await untilNoneLeft(() => inspector.pendingFiles());
    const reminders = await untilNoneLeft(undeliveredReminders);
    if (reminders > 0) {
      tally.violations.push(
        `${reminders} due reminders still undelivered, none delivered in the last ${DRAIN_STALL_MS / 1000} s`,
      );
    }
    server.signal("SIGTERM");
    const exit = await server.exited;
    if (exit.code !== 0) {
      tally.violations.push(`the last server exited ${JSON.stringify(exit)} on SIGTERM, not 0`);
    }
  } catch (error) {
    tally.violations.push(`the last server failed: ${String(error).slice(0, 2000)}`);
  } finally {
    await server.kill();
    countLogs(server, tally);
  }
}

/**
 * Waits until `left()` is 0; returns what is left once it has not gone down for
 * {@link DRAIN_STALL_MS}. A busy host leaves a longer backlog, drained more slowly: what
 * fails is a drain that stops moving, not one that takes long.
 */
async function untilNoneLeft(left: () => number): Promise<number> {
  let last = left();
  let movedAt = Date.now();
  while (last > 0 && Date.now() - movedAt < DRAIN_STALL_MS) {
    await sleep(100);
    const now = left();
    if (now < last) movedAt = Date.now();
    last = now;
  }
  return last;
}

/**
 * Every MCP server a killed or stopped server started has gone: a SIGKILLed server's
 * stdio children see their input close and exit; a stopped one kills their groups.
 */
async function checkMcpProcessesGone(marker: string, tally: Tally): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (mcpProcessesOf(marker).length > 0 && Date.now() < deadline) await sleep(200);
  const left = mcpProcessesOf(marker);
  if (left.length > 0) {
    tally.violations.push(
      `${left.length} MCP server processes outlived the servers: ${left.join(", ")}`,
    );
    for (const pid of left) process.kill(pid, "SIGKILL");
  }
}

/** Every `/events` fan-out process has gone with the server that forked it. */
async function checkFanoutsGone(watch: EventsWatch, tally: Tally): Promise<void> {
  const left = await watch.outlived();
  if (left.length === 0) return;
  tally.violations.push(
    `${left.length} /events fan-out processes outlived their servers: ${left.join(", ")}`,
  );
  for (const pid of left) process.kill(pid, "SIGKILL");
}

interface Outcome {
  jobs: number;
  jobsDone: number;
  children: number;
  endings: Map<string, number>;
  lostCalls: number;
  compactions: number;
  prunes: number;
  seconds: number;
  model: ChaosModel;
  watch: EventsWatch;
}

function printSummary(settings: Settings, tally: Tally, outcome: Outcome): void {
  const list = <K>(map: Map<K, number>) =>
    [...map].map(([name, count]) => `${name} ${count}`).join(", ") || "none";
  const killCount = [...tally.kills.values()].reduce((sum, count) => sum + count, 0);
  const machine = `${cpus().length} × ${cpus()[0]?.model ?? "cpu"}, Node ${process.version}`;
  console.log("");
  console.log(`chaos summary (seed ${settings.seed}; ${machine})`);
  console.log(
    `  cycles      ${settings.cycles} in ${outcome.seconds.toFixed(1)} s (${(outcome.seconds / Math.max(1, settings.cycles)).toFixed(2)} s per cycle)`,
  );
  console.log(`  kills       ${killCount} SIGKILLs: ${list(tally.kills)}`);
  console.log(`  jobs        ${outcome.jobs} enqueued, ${outcome.jobsDone} done`);
  console.log(`  endings     ${list(new Map([...outcome.endings].sort()))}`);
  const delegates = outcome.endings.get("delegate done") ?? 0;
  console.log(
    `  subagents   ${outcome.children} child jobs of ${delegates} delegate jobs done; ${tally.parkedKills} kills found ${tally.parkedAtKills} parked jobs`,
  );
  console.log(`  refused     ${outcome.model.refused.length} requests the real API would refuse`);
  console.log(
    `  model calls ${outcome.model.calls.length}, of which ${outcome.lostCalls} were cut off by a kill`,
  );
  console.log(`  recovered   ${tally.recovered} running jobs requeued at start-up`);
  console.log(
    `  /events     ${outcome.watch.events} events read by the followers (${outcome.watch.hungReads} reads fetch never ended); ${outcome.watch.fanouts.length} fan-out processes forked, each gone with its server`,
  );
  console.log(
    `  compaction  ${outcome.prunes} prunes, ${outcome.compactions} summaries stored, ${outcome.model.calls.filter((call) => call.jobTag === SUMMARY_TAG).length} summary calls, ${outcome.model.calls.filter((call) => call.jobTag === MEMORY_SAVE_TAG).length} memory save calls`,
  );
  console.log(`  windows hit ${list(tally.windows)}`);
  console.log(`  unacknowledged replies after ${tally.unacknowledgedKills} kills`);
  if (tally.violations.length === 0) {
    console.log("chaos: no violations");
    return;
  }
  for (const violation of tally.violations.slice(0, 50)) console.log(`  VIOLATION ${violation}`);
  console.log(`chaos: ${tally.violations.length} violations`);
}

function parseSettings(argv: string[]): Settings {
  const { values } = parseArgs({
    args: argv,
    options: {
      cycles: { type: "string", default: "20" },
      seed: { type: "string" },
      rate: { type: "string", default: "4" },
      keep: { type: "boolean", default: false },
      help: { type: "boolean", default: false },
    },
  });
  const cycles = Number(values.cycles);
  const rate = Number(values.rate);
  const seed = values.seed === undefined ? Date.now() % 2 ** 31 : Number(values.seed);
  for (const [name, value] of Object.entries({ cycles, rate, seed })) {
    if (!Number.isInteger(value) || value < 0) {
      throw new Error(`--${name} must be a whole number, got ${String(values[name as "cycles"])}`);
    }
  }
  if (rate < 1) throw new Error("--rate must be at least 1 job per second");
  return { cycles, seed, rate, keep: values.keep ?? false, help: values.help ?? false };
}
