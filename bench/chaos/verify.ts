/**
 * The checks at the end of a chaos run, on the workspace database and the model's call log:
 *
 * - every enqueued job ended as its kind may end (done; a stop job stopped by the user; a
 *   fail job failed), and its turn is in history exactly once, complete or closed: a turn
 *   that ended unfinished never leaves a tool call without its result;
 * - no session holds a user message twice, nor two compaction or prune points with nothing
 *   between (a turn compacted twice);
 * - no model call was made for a step of a turn whose reply was already stored;
 * - the turns of a chat session are in the order their jobs were enqueued;
 * - no job was reported done twice.
 */
import { openWorkspaceDb, type StoredMessage, sessionMessages } from "../../test/helpers/server.js";
import { SUMMARY_TAG } from "./model.js";
import {
  callOfText,
  type EnqueuedJob,
  type JobKind,
  jobOfText,
  type ModelCall,
  usesTool,
} from "./workload.js";

/** The error of a job the user stopped. */
const STOPPED = "stopped by the user";

/** Turn shapes, as `role:kind` of each message. */
const REPLY = "user:text assistant:text";
const TOOL_TURN = "user:text assistant:tool_use user:tool_result assistant:text";
/**
 * Ended unfinished: before the model answered, or with the tool call answered (or closed).
 * (Or with no turn at all: ended before its message was stored.)
 */
const ENDED_UNFINISHED = ["user:text", "user:text assistant:tool_use user:tool_result"];

/** What the checks found. */
export interface Verdict {
  violations: string[];
  jobsDone: number;
  /** How many jobs of each kind ended in each state, e.g. `stop failed` → 4. */
  endings: Map<string, number>;
  /** Model calls whose reply never made it into history (the server died first). */
  lostCalls: number;
  /** Compaction points stored (summaries that replaced older turns). */
  compactions: number;
  /** Prune points stored (old tool outputs left out). */
  prunes: number;
}

/** One job's turn as stored: its user message and what followed it. */
interface StoredTurn {
  sessionId: string;
  /** Order of the turn in the database (sessions by creation, then messages by seq). */
  position: number;
  messages: StoredMessage[];
}

interface JobRow {
  id: string;
  state: string;
  attempts: number;
  last_error: string | null;
}

/** Runs every check; `doneLogs` counts the "done" outcome lines logged per job id. */
export function verifyRun(
  workspace: string,
  jobs: EnqueuedJob[],
  calls: ModelCall[],
  doneLogs: Map<string, number>,
): Verdict {
  const db = openWorkspaceDb(workspace);
  try {
    const violations: string[] = [];
    const rows = db.prepare("SELECT id, state, attempts, last_error FROM jobs").all() as JobRow[];
    const states = checkJobStates(jobs, rows, violations);
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
      checkTurn(job, done, turns.get(job.tag), calls, storedCalls, violations);
    }
    checkSessionOrder(jobs, turns, violations);
    for (const [id, count] of doneLogs) {
      if (count > 1) violations.push(`job ${id} was reported done ${count} times`);
    }
    const lostCalls = calls.filter(
      (call) => call.jobTag !== SUMMARY_TAG && !storedCalls.has(call.number),
    ).length;
    return { violations, jobsDone, endings, lostCalls, compactions, prunes };
  } finally {
    db.close();
  }
}

/** Each job's final state, by id; a state its kind may not end in is a violation. */
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

/** A fail job always fails; a stop job is done, or failed because the user stopped it. */
function mayEndAs(kind: JobKind, row: JobRow): boolean {
  if (kind === "fail") return row.state === "failed";
  if (kind === "stop" && row.state === "failed") return row.last_error === STOPPED;
  return row.state === "done";
}

/** Every turn in history by job tag; a user message stored twice is a violation. */
function readTurns(db: ReturnType<typeof openWorkspaceDb>, violations: string[]) {
  const turns = new Map<string, StoredTurn>();
  let compactions = 0;
  let prunes = 0;
  const sessions = db.prepare("SELECT id FROM sessions ORDER BY rowid").pluck().all() as string[];
  for (const sessionId of sessions) {
    let turn: StoredTurn | null = null;
    let previous: StoredMessage | null = null;
    for (const message of sessionMessages(db, sessionId)) {
      const point = COMPACTION_POINTS.includes(message.text);
      if (point && previous && COMPACTION_POINTS.includes(previous.text)) {
        violations.push(
          `session ${sessionId} was compacted twice in a row (${previous.text} then ${message.text})`,
        );
      }
      previous = message;
      if (point) {
        if (message.text === "[compaction]") compactions += 1;
        else prunes += 1;
        continue;
      }
      const job = message.role === "user" ? jobOfText(message.text) : null;
      if (job) {
        if (turns.has(job.tag)) {
          violations.push(`the message of job ${job.tag} is stored twice (session ${sessionId})`);
        }
        turn = { sessionId, position: turns.size, messages: [message] };
        turns.set(job.tag, turn);
      } else if (turn) turn.messages.push(message);
      else violations.push(`session ${sessionId} starts with a message of no job`);
    }
  }
  return { turns, compactions, prunes };
}

/** How stored compaction and prune points read (see `sessionMessages`). */
const COMPACTION_POINTS = ["[compaction]", "[prune]"];

/**
 * The turn must be the user message then one reply (or tool call, results, reply), and no
 * model call may repeat or continue a step whose reply was already stored.
 */
function checkTurn(
  job: EnqueuedJob,
  done: boolean,
  turn: StoredTurn | undefined,
  calls: ModelCall[],
  storedCalls: Set<number>,
  violations: string[],
): void {
  if (!turn) {
    // A job that ended for good before its message was stored: stopped before its
    // checkpoint, or killed there on its only attempt (checkJobStates checked why).
    if (done) violations.push(`job ${job.tag} has no user message in history`);
    return;
  }
  const shape = turn.messages.map((message) => `${message.role}:${kindOf(message)}`).join(" ");
  const expected = done ? [usesTool(job.kind) ? TOOL_TURN : REPLY] : ENDED_UNFINISHED;
  if (!expected.includes(shape)) {
    violations.push(`job ${job.tag}: turn is [${shape}], not [${expected.join("] or [")}]`);
  }
  if (turn.messages[0]?.jobId !== job.id) {
    violations.push(`job ${job.tag}: its user message carries job id ${turn.messages[0]?.jobId}`);
  }
  for (const [index, message] of turn.messages.entries()) {
    const stored = message.role === "assistant" ? callOfText(message.text) : null;
    if (stored === null) continue;
    storedCalls.add(stored);
    // After a stored reply the model may be called again only past the tool results that
    // follow it (step + 2); after the final reply, never.
    const final = index === turn.messages.length - 1;
    const step = index - 1;
    const again = calls.filter(
      (call) => call.jobTag === job.tag && call.number > stored && (final || call.step <= step + 1),
    );
    for (const call of again) {
      violations.push(
        `job ${job.tag}: model call #${call.number} (step ${call.step}) after its reply of call #${stored} was stored`,
      );
    }
  }
}

function kindOf(message: StoredMessage): string {
  if (message.text.includes("[tool_use]")) return "tool_use";
  if (message.text.includes("[tool_result]")) return "tool_result";
  return "text";
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
