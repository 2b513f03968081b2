/**
 * The turns of a chaos run as stored in history, and the check every turn gets: its shape,
 * the job it names, and no model call for a step whose reply was already stored.
 */
import { STOPPED_NOTE } from "../../src/agents/context-builder.js";
import { VISIBLE_STATE } from "../../src/storage/job-row.js";
import type { openWorkspaceDb } from "../../test/helpers/server.js";
import { callOfText, jobOfText, type ModelCall, researchOfText } from "./workload.js";

/** A job's row, as the checks read it. */
export interface JobRow {
  id: string;
  state: string;
  attempts: number;
  last_error: string | null;
  parent_id: string | null;
  session_key: string;
  session_id: string | null;
  agent_id: string;
}

/** Reads every job's row, with its state as shown (`waiting`, `stopped`: see job-row.ts). */
export function readJobRows(db: ReturnType<typeof openWorkspaceDb>): JobRow[] {
  return db
    .prepare(
      `SELECT id, ${VISIBLE_STATE} AS state, attempts, last_error, parent_id, session_key,
         session_id, agent_id
       FROM jobs`,
    )
    .all() as JobRow[];
}

/** Turn shapes, as `role:kind` of each message. */
export const REPLY = "user:text assistant:text";
export const TOOL_TURN = "user:text assistant:tool_use user:tool_result assistant:text";
/**
 * Ended unfinished: before the model answered, or with the tool call answered (or closed).
 * (Or with no turn at all: ended before its message was stored.)
 */
export const ENDED_UNFINISHED = ["user:text", "user:text assistant:tool_use user:tool_result"];
/**
 * Stopped by the person: closed with the stop (the reply seen so far and the note), during
 * the first model call or the tool call (its result then says it was stopped) or the reply.
 * (Or with no turn at all: stopped before its message was stored.)
 */
export const STOPPED_TURNS = ["user:text assistant:text", TOOL_TURN];

/** A stored message: its text blocks joined (others as `[type]`), and its blocks. */
export interface StoredMessage {
  role: "user" | "assistant";
  text: string;
  jobId: string | null;
  blocks: Record<string, unknown>[];
}

/** One job's turn as stored: its user message and what followed it. */
export interface StoredTurn {
  sessionId: string;
  /** Order of the turn in the database (sessions by creation, then messages by seq). */
  position: number;
  messages: StoredMessage[];
}

/**
 * Every turn in history by job tag (a child's by its research tag); a user message stored
 * twice is a violation.
 */
export function readTurns(db: ReturnType<typeof openWorkspaceDb>, violations: string[]) {
  const turns = new Map<string, StoredTurn>();
  let compactions = 0;
  let prunes = 0;
  // A heartbeat's ticks are checked by heartbeats.ts, not as the workload's turns.
  const sessions = db
    .prepare("SELECT id FROM sessions WHERE key NOT LIKE 'heartbeat:%' ORDER BY rowid")
    .pluck()
    .all() as string[];
  for (const sessionId of sessions) {
    let turn: StoredTurn | null = null;
    let previous: StoredMessage | null = null;
    for (const message of storedMessages(db, sessionId)) {
      // A compaction's memory save belongs to no turn (verify-memory.ts checks it).
      if (message.text === MEMORY_SAVE_MARKER) continue;
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
      const job = message.role === "user" ? turnOfText(message.text) : null;
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

/** The job (or research task) whose turn a user message begins, or null. */
function turnOfText(text: string): { tag: string } | null {
  return jobOfText(text) ?? researchOfText(text);
}

/** A session's messages in order, as text and as blocks. */
export function storedMessages(db: ReturnType<typeof openWorkspaceDb>, sessionId: string) {
  const rows = db
    .prepare("SELECT role, content, job_id FROM messages WHERE session_id = ? ORDER BY seq")
    .all(sessionId) as { role: "user" | "assistant"; content: string; job_id: string | null }[];
  return rows.map((row): StoredMessage => {
    const blocks = JSON.parse(row.content) as Record<string, unknown>[];
    const text = blocks
      .map((block) => (block.type === "text" ? String(block.text ?? "") : `[${block.type}]`))
      .join("");
    return { role: row.role, text, jobId: row.job_id, blocks };
  });
}

/** How stored compaction and prune points read. */
const COMPACTION_POINTS = ["[compaction]", "[prune]"];

/** How a stored memory save (before a summary) reads. */
export const MEMORY_SAVE_MARKER = "[memory_save]";

/** Whose turn {@link checkTurnOf} checks: a job's, or a child's (by its research tag). */
export interface TurnOwner {
  tag: string;
  id: string;
  /** Whether the job ended done (its turn must then be whole). */
  done: boolean;
  /** Whether the person stopped it (its turn must then end with the stop). (Default: false) */
  stopped?: boolean;
  /** The shapes its turn may have once done. */
  shape: string;
}

/**
 * The turn must have the owner's shape once done (or have ended unfinished), and no model
 * call may repeat or continue a step whose reply was already stored.
 */
export function checkTurnOf(
  owner: TurnOwner,
  turn: StoredTurn | undefined,
  calls: ModelCall[],
  storedCalls: Set<number>,
  violations: string[],
): void {
  const { tag, id, done } = owner;
  if (!turn) {
    // A job that ended for good before its message was stored: stopped before its
    // checkpoint, or killed there on its only attempt (checkJobStates checked why).
    if (done) violations.push(`job ${tag} has no user message in history`);
    return;
  }
  const shape = turn.messages.map((message) => `${message.role}:${kindOf(message)}`).join(" ");
  const expected = done ? [owner.shape] : owner.stopped ? STOPPED_TURNS : ENDED_UNFINISHED;
  if (!expected.includes(shape)) {
    violations.push(`job ${tag}: turn is [${shape}], not [${expected.join("] or [")}]`);
  }
  if (owner.stopped && !turn.messages.at(-1)?.text.endsWith(STOPPED_NOTE)) {
    violations.push(`job ${tag}: stopped, but its turn does not end with "${STOPPED_NOTE}"`);
  }
  if (turn.messages[0]?.jobId !== id) {
    violations.push(`job ${tag}: its user message carries job id ${turn.messages[0]?.jobId}`);
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
      (call) => call.jobTag === tag && call.number > stored && (final || call.step <= step + 1),
    );
    for (const call of again) {
      violations.push(
        `job ${tag}: model call #${call.number} (step ${call.step}) after its reply of call #${stored} was stored`,
      );
    }
  }
}

export function kindOf(message: StoredMessage): string {
  if (message.text.includes("[tool_use]")) return "tool_use";
  if (message.text.includes("[tool_result]")) return "tool_result";
  return "text";
}
