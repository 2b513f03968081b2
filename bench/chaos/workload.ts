/**
 * The jobs of the chaos run and how they are named, so that a message, a model request and
 * a stored reply each say which job (and which model call) they belong to.
 *
 * The producer enqueues from this process straight into the workspace's SQLite queue,
 * as the CLI (`picklebot cron run`) or any other process would, at a steady rate that goes
 * on while the server is down.
 */
import { join } from "node:path";
import type { NewJob } from "../../src/ports/index.js";
import { openDatabase } from "../../src/storage/sqlite/database.js";
import { SqliteJobQueue } from "../../src/storage/sqlite/queue.js";
import type { Random } from "./random.js";

/** One model request as the fake saw it. */
export interface ModelCall {
  /** 1 for the first call of the run, then 2, 3, … */
  number: number;
  /** The job whose turn the request continues ("?" when it names none). */
  jobTag: string;
  /** What that job asks for. */
  kind: JobKind;
  /** Messages after the job's user message: 0 for its first call, 2 after a tool round. */
  step: number;
  /** Whose request it is: the chaos agent's, or the researcher's (a delegate's child). */
  agent: ChaosAgent;
  /** A researcher call: the delegate job whose subagent call started it. */
  parentTag?: string;
  /** A delegate's continuation: the text of each tool result it was sent, in order. */
  results?: string[];
  /** Every job its newest user message names (more than one: messages sent as one). */
  askedTags?: string[];
  /** Which fake answered it: the flaky primary of fallback jobs, or the default model. */
  via?: "flaky" | "default";
}

/** The agents of the chaos workspace. */
export type ChaosAgent = "pickle" | "researcher";

/**
 * What a job asks the model for, and how its turn may end:
 *   text  one reply
 *   tool  a `read` of a small file, then a reply
 *   big   a `read` of a file far larger than a tool result may be, then a reply
 *   stop  a slow `bash` command, during which the run sends `/stop` to its Telegram chat:
 *         done, or stopped by the user: its tool call answered, its turn ended with the stop
 *   fail  a `read`, then the model refuses the follow-up (400) on the job's only attempt:
 *         failed, and the chat's next message is still a valid request
 *   delegate  one or two `subagent` calls to the researcher, which the server runs as child
 *         jobs while this one is parked; woken when they end, it replies from their answers
 *   mcp   a call to a tool of a stdio MCP server (the tests' fake, started on first use by
 *         each server), then a reply
 *   media a `send_file` of a workspace file into the media chat (Telegram), captioned with
 *         the job's tag, then a reply: the file must arrive exactly once
 *   remember  a `memory` call saving the fact "chaos fact <tag>." about its sender (a
 *         person of its own: see {@link rememberPerson}), then a reply
 *   recall  a `session_search` of the owner's earlier conversations (a chat job the owner
 *         sent), then a reply
 *   fallback  the flaky agent's: a `read`, then a reply, each call to its primary named
 *         model, which answers 503 for good to half of them: those are answered by its
 *         fallback (the default entry)
 */
export type JobKind =
  | "text"
  | "tool"
  | "big"
  | "stop"
  | "fail"
  | "delegate"
  | "approve"
  | "batch"
  | "mcp"
  | "media"
  | "remember"
  | "recall"
  | "fallback";

/** Whether a job of this kind makes a tool call. */
export function usesTool(kind: JobKind): boolean {
  return kind !== "text";
}

/** A job the producer enqueued. */
export interface EnqueuedJob {
  id: string;
  tag: string;
  sessionKey: string;
  mode: "chat" | "job";
  kind: JobKind;
}

/**
 * Attempts per job (`workers.max_attempts` of the chaos workspace). A job interrupted by
 * every kill must not run out of attempts: the run checks exactly-once, not the budget.
 */
export const CHAOS_MAX_ATTEMPTS = 100_000;

/** How the job mix is drawn: chat or cron-like job, then its kind (stop jobs apart). */
const CHAT_SESSIONS = 8;
const CHAT_SHARE = 0.75;
const STOP_SHARE = 0.05;
const KIND_SHARES: ReadonlyArray<readonly [JobKind, number]> = [
  ["text", 70],
  ["tool", 18],
  ["big", 6],
  ["fail", 6],
  ["delegate", 8],
  ["approve", 5],
  ["batch", 4],
  ["mcp", 5],
  ["media", 6],
  ["remember", 5],
  ["recall", 4],
  ["fallback", 6],
];

/** The agent of the fallback jobs: its primary is the flaky named model. */
export const FLAKY_AGENT_ID = "flaky";

/** Makes chat sessions grow, so they are compacted again and again during a run. */
const PADDING = "Some context for the agent to keep in mind, as a person would give it. ".repeat(3);

/** The Telegram chats of the stop jobs (and of no other job), and their one user. */
export const STOP_CHAT_IDS = [9001, 9002] as const;
export const STOP_CHAT_USER = 4242;

/** The Telegram chat the media jobs send their file into (their cron's deliver_to). */
export const MEDIA_CHAT_ID = 9101;

/** The file every media job sends, and its content. */
export const MEDIA_FILE = "media/chart.pdf";
export const MEDIA_CONTENT = "%PDF-1.4\nA chart a media chaos job sends.\n";

const JOB_TEXT =
  /\bchaos job (j\d+)(?: \[(tool|big|stop|fail|delegate|approve|batch|mcp|media|remember|recall|fallback)\])?/g;
const RESEARCH_TEXT = /\bchaos research (r\d+\.\d+) for (j\d+)\b/g;
const CALL_TEXT = /\bcall #(\d+)\b/;

/** The user message of job number `index`. */
export function jobText(tag: string, kind: JobKind): string {
  return `chaos job ${tag}${kind === "text" ? "" : ` [${kind}]`}: say something short. ${PADDING}`;
}

/**
 * The job a user message belongs to, or null. A request may merge the messages of a turn
 * that ended unanswered with the next one: the newest job is the last named.
 */
export function jobOfText(text: string): { tag: string; kind: JobKind } | null {
  const match = [...text.matchAll(JOB_TEXT)].at(-1);
  return match?.[1] ? { tag: match[1], kind: (match[2] as JobKind | undefined) ?? "text" } : null;
}

/** Every job a user message names, in order (messages of several turns sent as one). */
export function jobTagsOfText(text: string): string[] {
  return [...text.matchAll(JOB_TEXT)].flatMap((match) => (match[1] ? [match[1]] : []));
}

/**
 * The task of a delegate's subagent call: research `tag` (`r<call>.<n>`: the n-th call of
 * the model call that asked for it) for job `parentTag`. It never reads as a job's text.
 */
export function researchText(tag: string, parentTag: string): string {
  return `chaos research ${tag} for ${parentTag}: look something up.`;
}

/** The research task a child's user message is, or null. */
export function researchOfText(text: string): { tag: string; parentTag: string } | null {
  const match = [...text.matchAll(RESEARCH_TEXT)].at(-1);
  return match?.[1] && match[2] ? { tag: match[1], parentTag: match[2] } : null;
}

/**
 * The id the fake gives the subagent call of research `tag`; the child's session key
 * (`subagent:1:<parent job>:<call id>`) ends with it.
 */
export function subagentCallId(tag: string): string {
  return `toolu_chaos_${tag.replace(".", "_")}`;
}

/** The tool call id a subagent's session key ends with. */
export function callIdOfSessionKey(sessionKey: string): string {
  return sessionKey.split(":").at(-1) ?? "";
}

/** The research tag of a subagent call id (see {@link subagentCallId}), or null. */
export function researchOfCallId(callId: string): string | null {
  const match = /^toolu_chaos_(r\d+)_(\d+)$/.exec(callId);
  return match ? `${match[1]}.${match[2]}` : null;
}

/**
 * The person a remember job's message comes from, one per job (in a group: so their
 * memory is written, never shown), so each memory holds at most its one fact.
 */
export function rememberPerson(tag: string): string {
  return `telegram:${1_000_000 + Number(tag.slice(1))}`;
}

/** The fact a remember job saves. */
export function rememberedFact(tag: string): string {
  return `chaos fact ${tag}.`;
}

/** How the fake names a model call inside the reply it produced. */
export function callTag(number: number): string {
  return `call #${number}`;
}

/** The call number inside a stored reply, or null. */
export function callOfText(text: string): number | null {
  const match = CALL_TEXT.exec(text);
  return match?.[1] ? Number(match[1]) : null;
}

/** Enqueues jobs into a workspace's queue at a steady rate until stopped. */
export class Producer {
  /** Every job enqueued, in enqueue order. */
  readonly jobs: EnqueuedJob[] = [];
  /** The same jobs by tag. */
  readonly byTag = new Map<string, EnqueuedJob>();
  /** Why enqueues failed (the database stayed locked past its busy timeout). */
  readonly failures: string[] = [];
  readonly #db;
  readonly #queue: SqliteJobQueue;
  readonly #random: Random;
  #timer: NodeJS.Timeout | null = null;
  #enqueueing: Promise<void> = Promise.resolve();

  constructor(workspace: string, random: Random) {
    this.#db = openDatabase(join(workspace, "history", "picklebot.db"));
    this.#queue = new SqliteJobQueue({ db: this.#db, defaultMaxAttempts: CHAOS_MAX_ATTEMPTS });
    this.#random = random;
  }

  /** Enqueues `perSecond` jobs a second, starting now. */
  start(perSecond: number): void {
    this.#timer = setInterval(() => {
      this.#enqueueing = this.#enqueueing
        .then(() => this.enqueueOne())
        .catch((error: unknown) => {
          this.failures.push(error instanceof Error ? error.message : String(error));
        });
    }, 1000 / perSecond);
  }

  /** Stops enqueueing; resolves once the last enqueue is committed. */
  async stop(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    await this.#enqueueing;
  }

  /** Enqueues one job of the mix and records it once it is committed. */
  async enqueueOne(): Promise<void> {
    const tag = `j${this.jobs.length + 1}`;
    const newJob = this.#random.chance(STOP_SHARE) ? this.#stopJob(tag) : this.#otherJob(tag);
    const job = await this.#queue.enqueue(newJob);
    const kind = jobOfText(newJob.message)?.kind ?? "text";
    const enqueued: EnqueuedJob = {
      id: job.id,
      tag,
      sessionKey: job.sessionKey,
      mode: job.mode,
      kind,
    };
    this.jobs.push(enqueued);
    this.byTag.set(tag, enqueued);
  }

  /** A stop job, in one of the Telegram chats (as the bus would enqueue it). */
  #stopJob(tag: string): NewJob {
    const chatId = String(STOP_CHAT_IDS[this.#random.integer(STOP_CHAT_IDS.length)]);
    return {
      agentId: "pickle",
      sessionKey: `telegram:${chatId}`,
      message: jobText(tag, "stop"),
      mode: "chat",
      replyTo: { kind: "telegram", chatId },
    };
  }

  /**
   * Any other job: a chat message (printed to the console) or a cron-like job. A recall
   * job is a chat message of the owner's (whose earlier conversations it searches); a
   * remember job's sender is a person of its own.
   */
  #otherJob(tag: string): NewJob {
    const kind = this.#random.pick(KIND_SHARES);
    if (kind === "media") return this.#mediaJob(tag);
    // Fallback jobs are the flaky agent's, each in a session of its own.
    const chat = kind === "recall" || (kind !== "fallback" && this.#random.chance(CHAT_SHARE));
    const sender =
      kind === "remember"
        ? { person: rememberPerson(tag), direct: false }
        : kind === "recall"
          ? { person: "owner", direct: true }
          : null;
    return {
      ...(sender ? { sender } : {}),
      agentId: kind === "fallback" ? FLAKY_AGENT_ID : "pickle",
      sessionKey: chat ? `chaos:chat:${this.#random.integer(CHAT_SESSIONS)}` : `chaos:job:${tag}`,
      message: jobText(tag, kind),
      mode: chat ? "chat" : "job",
      replyTo: chat ? { kind: "console" } : { kind: "silent" },
      // A batch job sends its model calls through the Message Batches API.
      ...(kind === "batch" ? { batch: true } : {}),
      // The model refuses a fail job's follow-up, so its only attempt is its last.
      maxAttempts: kind === "fail" ? 1 : undefined,
    };
  }

  /** A media job: a cron-like job delivering to the media chat, as a cron's deliver_to. */
  #mediaJob(tag: string): NewJob {
    return {
      agentId: "pickle",
      sessionKey: `chaos:job:${tag}`,
      message: jobText(tag, "media"),
      mode: "job",
      replyTo: { kind: "telegram", chatId: String(MEDIA_CHAT_ID) },
    };
  }

  async close(): Promise<void> {
    await this.stop();
    await this.#queue.close();
    this.#db.close();
  }
}
