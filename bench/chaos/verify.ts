/**
 * The checks at the end of a chaos run, on the workspace database and the model's call log:
 *
 * - every enqueued job ended as its kind may end (done; a stop job stopped by the user,
 *   shown as stopped; a fail job failed), and its turn is in history exactly once,
 *   complete or closed: a turn that ended unfinished never leaves a tool call without its
 *   result, and a stopped one ends with the stop;
 * - no model request asks a stopped job's request again (with a later message);
 * - no session holds a user message twice, nor two compaction or prune points with nothing
 *   between (a turn compacted twice);
 * - no model call was made for a step of a turn whose reply was already stored;
 * - the turns of a chat session are in the order their jobs were enqueued;
 * - no job was reported done twice;
 * - the child jobs of the delegate jobs' subagent calls check out (verify-subagents.ts);
 * - memory calls wrote each entry once, and searches answered (verify-memory.ts).
 * - every call of a fallback job was answered by the model it had to be (the flaky
 *   primary, or the default model for a call the primary fails), and the usage ledger
 *   records each stored one under the model that answered it.
 */
import { openWorkspaceDb } from "../../test/helpers/server.js";
import { failsOnFlakyPrimary, MEMORY_SAVE_TAG, SUMMARY_TAG } from "./model.js";
import {
  checkTurnOf,
  type JobRow,
  REPLY,
  readJobRows,
  readTurns,
  type StoredTurn,
  TOOL_TURN,
} from "./turns.js";
import { checkMemory } from "./verify-memory.js";
import { checkSubagents, countParking, type ParkingLogs } from "./verify-subagents.js";
import {
  type EnqueuedJob,
  FLAKY_AGENT_ID,
  type JobKind,
  type ModelCall,
  usesTool,
} from "./workload.js";

/** The error of a job the user stopped. */
const STOPPED = "stopped by the user";

/** What the checks found. */
export interface Verdict {
  violations: string[];
  jobsDone: number;
  /**
   * How many jobs of each kind ended in each state, e.g. `stop failed` → 4; also the
   * children (`researcher done`) and how many delegate jobs parked and were woken.
   */
  endings: Map<string, number>;
  /** Model calls whose reply never made it into history (the server died first). */
  lostCalls: number;
  /** Compaction points stored (summaries that replaced older turns). */
  compactions: number;
  /** Prune points stored (old tool outputs left out). */
  prunes: number;
  /** Child jobs the delegate jobs' subagent calls started. */
  children: number;
}

/** What the server logged about each job: "done" and "parked" outcome lines per job id. */
export interface JobLogs extends ParkingLogs {
  done: Map<string, number>;
}

/** Runs every check on the workspace, the producer's jobs and the model's call log. */
export function verifyRun(
  workspace: string,
  jobs: EnqueuedJob[],
  calls: ModelCall[],
  logs: JobLogs,
): Verdict {
  const db = openWorkspaceDb(workspace);
  try {
    const violations: string[] = [];
    const rows = readJobRows(db);
    const children = rows.filter((row) => row.parent_id !== null);
    // A heartbeat's tick jobs are checked by heartbeats.ts.
    const topLevel = rows.filter(
      (row) => row.parent_id === null && !row.session_key.startsWith("heartbeat:"),
    );
    const states = checkJobStates(jobs, topLevel, violations);
    const jobsDone = [...states.values()].filter((state) => state === "done").length;
    const endings = new Map<string, number>();
    for (const job of jobs) {
      const ending = `${job.kind} ${states.get(job.id) ?? "missing"}`;
      endings.set(ending, (endings.get(ending) ?? 0) + 1);
    }
    const { turns, compactions, prunes } = readTurns(db, violations);
    const storedCalls = new Set<number>();
    for (const job of jobs) {
      const done = states.get(job.id) === "done";
      const stopped = states.get(job.id) === "stopped";
      const shape = usesTool(job.kind) ? TOOL_TURN : REPLY;
      const owner = { tag: job.tag, id: job.id, done, stopped, shape };
      checkTurnOf(owner, turns.get(job.tag), calls, storedCalls, violations);
    }
    checkStoppedNotAskedAgain(jobs, states, calls, violations);
    for (const [ending, count] of checkFallbacks(db, calls, storedCalls, violations)) {
      endings.set(ending, count);
    }
    checkSessionOrder(jobs, turns, violations);
    const subagents = { jobs, children, turns, calls, storedCalls, violations };
    for (const [ending, count] of checkSubagents(subagents)) endings.set(ending, count);
    for (const [ending, count] of countParking(jobs, calls, logs)) endings.set(ending, count);
    for (const [ending, count] of checkMemory(db, jobs, states, violations)) {
      endings.set(ending, count);
    }
    for (const [id, count] of logs.done) {
      if (count > 1) violations.push(`job ${id} was reported done ${count} times`);
    }
    const lostCalls = calls.filter(
      (call) =>
        call.jobTag !== SUMMARY_TAG &&
        call.jobTag !== MEMORY_SAVE_TAG &&
        !storedCalls.has(call.number),
    ).length;
    return {
      violations,
      jobsDone,
      endings,
      lostCalls,
      compactions,
      prunes,
      children: children.length,
    };
  } finally {
    db.close();
  }
}

/**
 * Each job's final state, by id; a state its kind may not end in is a violation, and so
 * is a job with no parent that the run did not enqueue.
 */
function checkJobStates(
  jobs: EnqueuedJob[],
  rows: JobRow[],
  violations: string[],
): Map<string, string> {
  const byId = new Map(rows.map((row) => [row.id, row]));
  const states = new Map<string, string>();
  for (const job of jobs) {
    const row = byId.get(job.id);
    byId.delete(job.id);
    if (!row) {
      violations.push(`job ${job.tag} (${job.id}) is missing from the queue`);
      continue;
    }
    states.set(job.id, row.state);
    if (!mayEndAs(job.kind, row)) {
      const why = row.last_error ? `: ${row.last_error}` : "";
      violations.push(
        `${job.kind} job ${job.tag} (${job.id}) is ${row.state} after ${row.attempts} attempts${why}`,
      );
    }
  }
  for (const stray of byId.keys()) violations.push(`job ${stray} was never enqueued by the run`);
  return states;
}

/** A fail job always fails; a stop job is done, or stopped by the user. */
function mayEndAs(kind: JobKind, row: JobRow): boolean {
  if (kind === "fail") return row.state === "failed";
  if (kind === "stop" && row.state === "stopped") return row.last_error === STOPPED;
  return row.state === "done";
}

/**
 * A stopped job's request is never sent again as one still to answer: no request's newest
 * user message names a stopped job besides the job it is for.
 */
function checkStoppedNotAskedAgain(
  jobs: EnqueuedJob[],
  states: Map<string, string>,
  calls: ModelCall[],
  violations: string[],
): void {
  const stopped = new Set(
    jobs.filter((job) => states.get(job.id) === "stopped").map((job) => job.tag),
  );
  for (const call of calls) {
    for (const tag of call.askedTags ?? []) {
      if (tag !== call.jobTag && stopped.has(tag)) {
        violations.push(
          `model call #${call.number} for job ${call.jobTag} asked the stopped job ${tag} again`,
        );
      }
    }
  }
}

/** The model id the flaky agent's fallback (the default entry) calls. */
const DEFAULT_MODEL = "claude-sonnet-4-6";

/**
 * Each fallback job's call went to the model it had to, and the ledger records the
 * stored ones under that model; returns how many stored calls each model answered.
 */
function checkFallbacks(
  db: ReturnType<typeof openWorkspaceDb>,
  calls: ModelCall[],
  storedCalls: Set<number>,
  violations: string[],
): Map<string, number> {
  const stored = new Map<string, number>([
    ["fallback calls by flaky-model", 0],
    [`fallback calls by ${DEFAULT_MODEL}`, 0],
  ]);
  for (const call of calls) {
    if (call.kind !== "fallback") continue;
    const expected = failsOnFlakyPrimary(call) ? "default" : "flaky";
    if (call.via !== expected) {
      violations.push(
        `model call #${call.number} of fallback job ${call.jobTag} went to ${call.via}, not ${expected}`,
      );
    }
    if (!storedCalls.has(call.number)) continue;
    const model = call.via === "flaky" ? "flaky-model" : DEFAULT_MODEL;
    const key = `fallback calls by ${model}`;
    stored.set(key, (stored.get(key) ?? 0) + 1);
  }
  const ledger = db
    .prepare("SELECT model, count(*) AS calls FROM usage WHERE agent_id = ? GROUP BY model")
    .all(FLAKY_AGENT_ID) as Array<{ model: string; calls: number }>;
  for (const [key, count] of stored) {
    const model = key.slice("fallback calls by ".length);
    const recorded = ledger.find((row) => row.model === model)?.calls ?? 0;
    if (recorded !== count) {
      violations.push(
        `the ledger records ${recorded} calls of ${model} by fallback jobs, not ${count}`,
      );
    }
  }
  return stored;
}

/** Chat jobs of one session key must be stored in one session, in enqueue order. */
function checkSessionOrder(
  jobs: EnqueuedJob[],
  turns: Map<string, StoredTurn>,
  violations: string[],
): void {
  const previous = new Map<string, { job: EnqueuedJob; turn: StoredTurn }>();
  for (const job of jobs) {
    const turn = turns.get(job.tag);
    if (job.mode !== "chat" || !turn) continue;
    const before = previous.get(job.sessionKey);
    previous.set(job.sessionKey, { job, turn });
    if (!before) continue;
    if (before.turn.sessionId !== turn.sessionId) {
      violations.push(
        `${job.sessionKey}: jobs ${before.job.tag} and ${job.tag} are in two sessions`,
      );
    } else if (before.turn.position > turn.position) {
      violations.push(`${job.sessionKey}: job ${job.tag} ran before ${before.job.tag}`);
    }
  }
}
