/**
 * The memory checks of a chaos run (issue 28): a `memory` call run again after a kill
 * never writes its entry twice, nor answers as if the entry were someone else's:
 *
 * - each remember job's fact is in its sender's memory at most once, and recorded as one
 *   change at most; exactly once each when the job is done;
 * - no `memory` result says the fact was "already saved" (what a call that ran again
 *   without its first change found would answer), and a done job's call answered "Saved";
 * - a done recall job's `session_search` answered without an error;
 * - the memory save before a summary: each save call's entry is in the agent's notes at
 *   most once and recorded as one change at most, and no session stores two saves
 *   without a compaction point between them (a save call asked again after its calls
 *   were stored).
 */
import type { openWorkspaceDb } from "../../test/helpers/server.js";
import { MEMORY_SAVE_MARKER, storedMessages } from "./turns.js";
import { type EnqueuedJob, jobOfText, rememberedFact, rememberPerson } from "./workload.js";

type Database = ReturnType<typeof openWorkspaceDb>;

/** One tool call as stored: the job whose turn made it, and its result. */
interface StoredCall {
  name: string;
  input: Record<string, unknown>;
  /** The job the assistant message that made the call answers (the fake names it). */
  jobTag: string | null;
  result: { content: string; isError: boolean } | null;
}

/** Runs the memory checks; returns the counts of how the calls ended, for the summary. */
export function checkMemory(
  db: Database,
  jobs: EnqueuedJob[],
  states: ReadonlyMap<string, string>,
  violations: string[],
): Map<string, number> {
  const calls = storedCalls(db);
  const endings = new Map<string, number>();
  const count = (ending: string) => endings.set(ending, (endings.get(ending) ?? 0) + 1);
  for (const job of jobs) {
    const done = states.get(job.id) === "done";
    if (job.kind === "remember") checkRemember(db, job, done, calls, violations, count);
    if (job.kind === "recall" && done) {
      const results = calls.filter((c) => c.name === "session_search" && c.jobTag === job.tag);
      if (!results.some((call) => call.result && !call.result.isError)) {
        violations.push(`recall job ${job.tag}: no session_search answered without an error`);
      } else count("recall searched");
    }
  }
  checkSavesBeforeSummaries(db, violations, count);
  return endings;
}

/** What a save call's entry holds: "call #N was saved before a summary." */
const SAVED_BEFORE_SUMMARY = /call #\d+ was saved before a summary\./g;

function checkSavesBeforeSummaries(
  db: Database,
  violations: string[],
  count: (ending: string) => void,
): void {
  const notes = (db
    .prepare("SELECT text FROM memories WHERE agent_id = 'pickle' AND scope = 'agent'")
    .pluck()
    .get() ?? "") as string;
  const entries = notes.match(SAVED_BEFORE_SUMMARY) ?? [];
  for (const entry of new Set(entries)) {
    const times = entries.filter((other) => other === entry).length;
    if (times > 1)
      violations.push(`the save before a summary "${entry}" is in memory ${times} times`);
  }
  const changes = db
    .prepare(
      `SELECT entry, count(*) AS n FROM memory_changes
       WHERE scope = 'agent' AND entry LIKE '%was saved before a summary.' GROUP BY entry`,
    )
    .all() as { entry: string; n: number }[];
  for (const change of changes) {
    if (change.n > 1) {
      violations.push(`the save before a summary "${change.entry}" was recorded ${change.n} times`);
    }
  }
  const sessions = db.prepare("SELECT id FROM sessions").pluck().all() as string[];
  for (const sessionId of sessions) {
    let saved = false;
    for (const message of storedMessages(db, sessionId)) {
      if (message.text === "[compaction]") saved = false;
      if (message.text !== MEMORY_SAVE_MARKER) continue;
      if (saved) violations.push(`session ${sessionId} saved to memory twice for one summary`);
      saved = true;
      count("memory saves before a summary");
    }
  }
}

function checkRemember(
  db: Database,
  job: EnqueuedJob,
  done: boolean,
  calls: StoredCall[],
  violations: string[],
  count: (ending: string) => void,
): void {
  const fact = rememberedFact(job.tag);
  const scope = rememberPerson(job.tag);
  const text = (
    db.prepare("SELECT text FROM memories WHERE agent_id = 'pickle' AND scope = ?").get(scope) as
      | { text: string }
      | undefined
  )?.text;
  const entries = text === undefined ? 0 : text.split(fact).length - 1;
  const changes = db
    .prepare("SELECT count(*) FROM memory_changes WHERE scope = ? AND entry = ?")
    .pluck()
    .get(scope, fact) as number;
  const expected = done ? "exactly once" : "at most once";
  if (entries > 1 || (done && entries !== 1)) {
    violations.push(
      `remember job ${job.tag}: its fact is in memory ${entries} times, not ${expected}`,
    );
  }
  if (changes > 1 || (done && changes !== 1)) {
    violations.push(`remember job ${job.tag}: ${changes} changes recorded, not ${expected}`);
  }
  const results = calls
    .filter((call) => call.name === "memory" && call.input.text === fact && call.result)
    .map((call) => call.result as NonNullable<StoredCall["result"]>);
  for (const result of results) {
    if (result.content.includes("already saved")) {
      violations.push(
        `remember job ${job.tag}: a memory call ran again and wrote or refused anew: ${result.content}`,
      );
    }
  }
  if (done && !results.some((result) => result.content.startsWith("Saved to"))) {
    violations.push(`remember job ${job.tag} is done, but no memory call of it answered "Saved"`);
  }
  if (done) count("remember saved once");
  if (results.some((result) => result.content.includes("had done it already"))) {
    count("remember call run again, answered from its change");
  }
}

/** Every `memory` and `session_search` call stored in history, with its result. */
function storedCalls(db: Database): StoredCall[] {
  const rows = db
    .prepare("SELECT session_id, content FROM messages ORDER BY session_id, seq")
    .all() as { session_id: string; content: string }[];
  // A tool call's id is unique in its session only (the fake model numbers its calls
  // again in each server), so calls are told apart by session and id.
  const byId = new Map<string, StoredCall>();
  for (const row of rows) {
    const blocks = JSON.parse(row.content) as Record<string, unknown>[];
    const text = blocks.map((block) => (block.type === "text" ? String(block.text) : "")).join("");
    for (const block of blocks) {
      if (
        block.type === "tool_use" &&
        (block.name === "memory" || block.name === "session_search")
      ) {
        byId.set(`${row.session_id} ${String(block.id)}`, {
          name: String(block.name),
          input: block.input as Record<string, unknown>,
          jobTag: answeredTag(text),
          result: null,
        });
      }
      const call =
        block.type === "tool_result"
          ? byId.get(`${row.session_id} ${String(block.tool_use_id)}`)
          : undefined;
      if (call) call.result = { content: String(block.content), isError: block.is_error === true };
    }
  }
  return [...byId.values()];
}

/** The job an assistant message of the fake answers ("call #N answers j12"), or null. */
function answeredTag(text: string): string | null {
  return /\banswers (j\d+)\b/.exec(text)?.[1] ?? jobOfText(text)?.tag ?? null;
}
