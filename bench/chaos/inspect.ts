/**
 * Looks into the workspace database between two server processes: how far each job that
 * was running had got when its process was killed (the crash window the kill hit).
 */
import { openWorkspaceDb } from "../../test/helpers/server.js";
import { callTag } from "./workload.js";

/** Where in its life a running job was when the process died. */
export type CrashWindow =
  | "claimed, before the checkpoint"
  | "checkpointed, waiting for the model"
  | "tool calls stored, results not"
  | "tool results stored, waiting for the model"
  | "reply stored, job not acknowledged";

type Statement = ReturnType<ReturnType<typeof openWorkspaceDb>["prepare"]>;

/** A stored message's role and content blocks (JSON). */
interface StoredRow {
  role: string;
  content: string;
}

/** Read access to the queue and history between kills. */
export class Inspector {
  readonly #db: ReturnType<typeof openWorkspaceDb>;
  readonly #lastOfJob: Statement;
  readonly #lastOfSession: Statement;

  constructor(workspace: string) {
    this.#db = openWorkspaceDb(workspace);
    this.#lastOfJob = this.#db.prepare(
      `SELECT m.role, m.content FROM jobs j JOIN messages m ON m.session_id = j.session_id
       WHERE j.id = ? ORDER BY m.seq DESC LIMIT 1`,
    );
    this.#lastOfSession = this.#db.prepare(
      "SELECT role, content FROM messages WHERE session_id = ? ORDER BY seq DESC LIMIT 1",
    );
  }

  /** Jobs in each state. */
  counts(): Record<string, number> {
    const rows = this.#db.prepare("SELECT state, count(*) AS n FROM jobs GROUP BY state").all() as {
      state: string;
      n: number;
    }[];
    return Object.fromEntries(rows.map((row) => [row.state, row.n]));
  }

  /** Jobs not finished yet (queued or running). */
  unfinished(): number {
    const counts = this.counts();
    return (counts.queued ?? 0) + (counts.running ?? 0);
  }

  /** Files (`send_file` entries) waiting in the outbox for a delivery. */
  pendingFiles(): number {
    const row = this.#db
      .prepare(
        "SELECT COUNT(*) AS n FROM outbox WHERE dedupe_key LIKE 'file:%' AND state = 'pending'",
      )
      .get() as { n: number };
    return row.n;
  }

  /** The crash window of every job left running (call after the server died). */
  crashWindows(): CrashWindow[] {
    const running = this.#db
      .prepare("SELECT message, session_id FROM jobs WHERE state = 'running'")
      .all() as { message: string; session_id: string | null }[];
    return running.map((job) => this.#windowOf(job.message, job.session_id));
  }

  /** Parked jobs: queued, waiting for their subagents (or another wait). */
  parked(): number {
    return this.#db
      .prepare("SELECT count(*) FROM jobs WHERE state = 'queued' AND waiting_for IS NOT NULL")
      .pluck()
      .get() as number;
  }

  /** The id of the job of a session key (a subagent's child job), or null. */
  jobOfSessionKey(sessionKey: string): string | null {
    const id = this.#db
      .prepare("SELECT id FROM jobs WHERE session_key = ?")
      .pluck()
      .get(sessionKey);
    return typeof id === "string" ? id : null;
  }

  /** Whether the last message of the job's session is the reply of model call `number`. */
  replyStored(jobId: string, number: number): boolean {
    const last = this.#lastOfJob.get(jobId) as StoredRow | undefined;
    return last?.role === "assistant" && last.content.includes(`${callTag(number)} `);
  }

  close(): void {
    this.#db.close();
  }

  #windowOf(message: string, sessionId: string | null): CrashWindow {
    if (message !== "." || sessionId === null) return "claimed, before the checkpoint";
    const last = this.#lastOfSession.get(sessionId) as StoredRow | undefined;
    const types = last ? (JSON.parse(last.content) as { type: string }[]).map((b) => b.type) : [];
    if (last?.role === "assistant") {
      return types.includes("tool_use")
        ? "tool calls stored, results not"
        : "reply stored, job not acknowledged";
    }
    return types.includes("tool_result")
      ? "tool results stored, waiting for the model"
      : "checkpointed, waiting for the model";
  }
}
