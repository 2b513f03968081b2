/**
 * The approvals of the chaos run. An approve job's `write` under `approved/` asks the owner
 * (the chaos agent's policy); the {@link Answerer} answers the pending questions from this
 * process at random moments, whether a server runs or not, as `picklebot approvals
 * allow|deny` does: the answer is stored, then the parked job is woken.
 *
 * The checks: every approve job's turn holds its call and one result, which matches the
 * stored decision (allowed: the write's output; denied: the refusal), and its question
 * was answered once.
 */
import { join } from "node:path";
import { approvalIdFor } from "../../src/agents/approval-policy.js";
import type { ApprovalDecision } from "../../src/ports/index.js";
import { SqliteApprovalStore } from "../../src/storage/sqlite/approvals.js";
import { openDatabase } from "../../src/storage/sqlite/database.js";
import { SqliteJobQueue } from "../../src/storage/sqlite/queue.js";
import type { openWorkspaceDb } from "../../test/helpers/server.js";
import { approvalCallId } from "./model.js";
import type { Random } from "./random.js";
import type { EnqueuedJob, ModelCall } from "./workload.js";

/** How often the answerer looks at the pending questions. */
const LOOK_EVERY_MS = 150;
/** The chance that a look answers a given pending question. */
const ANSWER_CHANCE = 0.35;
/** The share of answers that deny. */
const DENY_SHARE = 0.3;

/** Answers pending approval questions at random moments until stopped. */
export class Answerer {
  /** The decisions given, by approval id. */
  readonly decisions = new Map<string, ApprovalDecision>();
  /** Why answers failed (the database stayed locked past its busy timeout). */
  readonly failures: string[] = [];
  readonly #db;
  readonly #store: SqliteApprovalStore;
  readonly #queue: SqliteJobQueue;
  readonly #random: Random;
  #timer: NodeJS.Timeout | null = null;
  #answering: Promise<void> = Promise.resolve();

  constructor(workspace: string, random: Random) {
    this.#db = openDatabase(join(workspace, "history", "picklebot.db"));
    this.#store = new SqliteApprovalStore({ db: this.#db });
    this.#queue = new SqliteJobQueue({ db: this.#db });
    this.#random = random;
  }

  start(): void {
    this.#timer = setInterval(() => {
      this.#answering = this.#answering
        .then(() => this.#answerSome())
        .catch((error: unknown) => {
          this.failures.push(error instanceof Error ? error.message : String(error));
        });
    }, LOOK_EVERY_MS);
  }

  /** Answers every question still pending (before the last server drains the queue). */
  async answerAll(): Promise<void> {
    await this.stop();
    await this.#answerSome(1);
  }

  async stop(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    await this.#answering;
  }

  async close(): Promise<void> {
    await this.stop();
    await this.#queue.close();
    this.#db.close();
  }

  async #answerSome(chance = ANSWER_CHANCE): Promise<void> {
    for (const request of await this.#store.pending()) {
      if (!this.#random.chance(chance)) continue;
      const decision: ApprovalDecision = this.#random.chance(DENY_SHARE) ? "deny" : "once";
      const answered = await this.#store.answer(request.id, decision, "chaos", Date.now());
      if (!answered) continue;
      this.decisions.set(request.id, decision);
      await this.#queue.wake(answered.jobId);
    }
  }
}

/** A stored approval request, as the checks read it. */
interface RequestRow {
  id: string;
  job_id: string;
  state: string;
  decision: string | null;
}

/** The checks of the approve jobs; returns their endings (`approve allowed` → n, …). */
export function checkApprovals(
  db: ReturnType<typeof openWorkspaceDb>,
  jobs: EnqueuedJob[],
  calls: ModelCall[],
  answerer: Answerer,
  violations: string[],
): Map<string, number> {
  const endings = new Map<string, number>();
  const requests = db
    .prepare("SELECT id, job_id, state, decision FROM approval_requests")
    .all() as RequestRow[];
  const byId = new Map(requests.map((row) => [row.id, row]));
  for (const job of jobs.filter((candidate) => candidate.kind === "approve")) {
    const asked = calls
      .filter((call) => call.jobTag === job.tag && call.step === 0)
      .map((call) => byId.get(approvalIdFor(job.id, approvalCallId(call.number))))
      .filter((row): row is RequestRow => row !== undefined);
    if (asked.length !== 1) {
      violations.push(`approve job ${job.tag} has ${asked.length} approval requests, not 1`);
      continue;
    }
    const [request] = asked as [RequestRow];
    const given = answerer.decisions.get(request.id);
    if (request.decision !== given) {
      violations.push(
        `approval ${request.id} of ${job.tag} is stored as ${request.decision}, but the run answered ${given}`,
      );
    }
    const result = resultOf(db, job.id, request.id);
    const expected =
      request.decision === "once" ? /^wrote \d+ bytes/ : /the owner denied this call/;
    if (result === null || !expected.test(result)) {
      violations.push(
        `approve job ${job.tag} (${request.decision}) got the tool result ${JSON.stringify(result)}`,
      );
    }
    const ending = `approve ${request.state}`;
    endings.set(ending, (endings.get(ending) ?? 0) + 1);
  }
  return endings;
}

/** The content of the tool result answering the call whose approval is `approvalId`. */
function resultOf(
  db: ReturnType<typeof openWorkspaceDb>,
  jobId: string,
  approvalId: string,
): string | null {
  const sessionId = db.prepare("SELECT session_id FROM jobs WHERE id = ?").pluck().get(jobId);
  const rows = db
    .prepare("SELECT content FROM messages WHERE session_id = ? ORDER BY seq")
    .pluck()
    .all(sessionId) as string[];
  for (const content of rows) {
    for (const block of JSON.parse(content) as Array<Record<string, unknown>>) {
      const id = block.tool_use_id;
      if (block.type !== "tool_result" || typeof id !== "string") continue;
      if (approvalIdFor(jobId, id) === approvalId) return String(block.content);
    }
  }
  return null;
}
