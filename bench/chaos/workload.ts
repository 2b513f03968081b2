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
  /** Whether that job asks for a tool call. */
  wantsTool: boolean;
  /** Messages after the job's user message: 0 for its first call, 2 after a tool round. */
  step: number;
}

/** A job the producer enqueued. */
export interface EnqueuedJob {
  id: string;
  tag: string;
  sessionKey: string;
  mode: "chat" | "job";
  tool: boolean;
}

/**
 * Attempts per job (`workers.max_attempts` of the chaos workspace). A job interrupted by
 * every kill must not run out of attempts: the run checks exactly-once, not the budget.
 */
export const CHAOS_MAX_ATTEMPTS = 100_000;

/** How the job mix is drawn. */
const CHAT_SESSIONS = 8;
const CHAT_SHARE = 0.75;
const TOOL_SHARE = 0.2;

const JOB_TEXT = /\bchaos job (j\d+)( \[tool\])?/;
const CALL_TEXT = /\bcall #(\d+)\b/;

/** The user message of job number `index`. */
export function jobText(tag: string, tool: boolean): string {
  return `chaos job ${tag}${tool ? " [tool]" : ""}: say something short.`;
}

/** The job a user message belongs to, or null. */
export function jobOfText(text: string): { tag: string; tool: boolean } | null {
  const match = JOB_TEXT.exec(text);
  return match?.[1] ? { tag: match[1], tool: match[2] !== undefined } : null;
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
    const tool = this.#random.chance(TOOL_SHARE);
    const chat = this.#random.chance(CHAT_SHARE);
    const sessionKey = chat
      ? `chaos:chat:${this.#random.integer(CHAT_SESSIONS)}`
      : `chaos:job:${tag}`;
    const newJob: NewJob = {
      agentId: "pickle",
      sessionKey,
      message: jobText(tag, tool),
      mode: chat ? "chat" : "job",
      replyTo: chat ? { kind: "console" } : { kind: "silent" },
    };
    const job = await this.#queue.enqueue(newJob);
    const enqueued: EnqueuedJob = { id: job.id, tag, sessionKey, mode: newJob.mode, tool };
    this.jobs.push(enqueued);
    this.byTag.set(tag, enqueued);
  }

  async close(): Promise<void> {
    await this.stop();
    await this.#queue.close();
    this.#db.close();
  }
}
