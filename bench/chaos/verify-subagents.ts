/**
 * The checks on the delegate jobs and their children (subagent calls through the queue).
 * The producer does not enqueue the children: the server does, one per subagent call, and
 * they are found by `parent_id`.
 *
 * - each child is done, with exactly one reply turn in its own session, is the only child
 *   of its call, and works for a delegate job of the run on the task that job gave it;
 * - each delegate job's tool results are its children's final replies, one child per
 *   subagent call, and no child for a call its stored turn does not hold;
 * - the parent's continuation is called only after its children's replies, and is sent
 *   exactly those replies; no model call repeats a child's stored reply (checkTurnOf);
 * - every researcher call is for a child that exists.
 */
import { blockText, RESEARCHER_ID } from "./model.js";
import { checkTurnOf, type JobRow, REPLY, type StoredTurn } from "./turns.js";
import {
  callIdOfSessionKey,
  callOfText,
  type EnqueuedJob,
  type ModelCall,
  researchOfCallId,
  researchOfText,
} from "./workload.js";

/** What the server logged: "parked" outcome lines per job id. */
export interface ParkingLogs {
  parked: Map<string, number>;
}

/** What {@link checkSubagents} looks at. */
export interface SubagentRun {
  jobs: EnqueuedJob[];
  /** Rows of the jobs that have a parent. */
  children: JobRow[];
  turns: Map<string, StoredTurn>;
  calls: ModelCall[];
  /** Filled with the model calls whose reply is stored. */
  storedCalls: Set<number>;
  violations: string[];
}

/** A done child's final reply, and the model call that produced it. */
interface ChildReply {
  text: string;
  call: number | null;
}

/** Runs the checks; resolves the children's endings, e.g. `researcher done` → 40. */
export function checkSubagents(run: SubagentRun): Map<string, number> {
  const endings = new Map<string, number>();
  const replies = checkChildren(run, endings);
  checkResearchCalls(run);
  const byParent = new Map<string, JobRow[]>();
  for (const child of run.children) {
    const parentId = child.parent_id ?? "";
    byParent.set(parentId, [...(byParent.get(parentId) ?? []), child]);
  }
  for (const job of run.jobs) {
    if (job.kind === "delegate") checkDelegate(job, byParent.get(job.id) ?? [], replies, run);
  }
  return endings;
}

/** How many delegate jobs parked at least once, and how many of those were woken. */
export function countParking(
  jobs: EnqueuedJob[],
  calls: ModelCall[],
  logs: ParkingLogs,
): Map<string, number> {
  const continued = new Set(
    calls.filter((call) => call.kind === "delegate" && call.step >= 2).map((call) => call.jobTag),
  );
  const parked = jobs.filter(
    (job) => job.kind === "delegate" && (logs.parked.get(job.id) ?? 0) > 0,
  );
  const parks = parked.reduce((sum, job) => sum + (logs.parked.get(job.id) ?? 0), 0);
  return new Map([
    ["delegate parked", parked.length],
    ["delegate parks", parks],
    ["delegate woken", parked.filter((job) => continued.has(job.tag)).length],
  ]);
}

/** Checks every child; resolves the final reply of each done one, by job id. */
function checkChildren(run: SubagentRun, endings: Map<string, number>): Map<string, ChildReply> {
  const { violations } = run;
  const jobsById = new Map(run.jobs.map((job) => [job.id, job]));
  const perCall = new Map<string, number>();
  const replies = new Map<string, ChildReply>();
  for (const child of run.children) {
    const ending = `${child.agent_id} ${child.state}`;
    endings.set(ending, (endings.get(ending) ?? 0) + 1);
    perCall.set(child.session_key, (perCall.get(child.session_key) ?? 0) + 1);
    const parent = jobsById.get(child.parent_id ?? "");
    const tag = researchOfCallId(callIdOfSessionKey(child.session_key));
    const what = `child ${tag ?? "?"} (${child.id}, ${child.session_key})`;
    if (parent?.kind !== "delegate") {
      violations.push(`${what} works for ${child.parent_id}, not for a delegate job of the run`);
    }
    if (
      child.session_key !== `subagent:1:${child.parent_id}:${callIdOfSessionKey(child.session_key)}`
    ) {
      violations.push(`${what}: its session key does not name its parent's call at depth 1`);
    }
    if (child.agent_id !== RESEARCHER_ID) violations.push(`${what} runs agent ${child.agent_id}`);
    if (child.state !== "done") {
      const why = child.last_error ? `: ${child.last_error}` : "";
      violations.push(`${what} is ${child.state} after ${child.attempts} attempts${why}`);
    }
    if (tag === null) continue;
    const turn = run.turns.get(tag);
    const owner = { tag, id: child.id, done: child.state === "done", shape: REPLY };
    checkTurnOf(owner, turn, run.calls, run.storedCalls, violations);
    if (!turn) continue;
    if (turn.sessionId !== child.session_id) {
      violations.push(`${what}: its turn is in session ${turn.sessionId}, not its own`);
    }
    const task = researchOfText(turn.messages[0]?.text ?? "");
    if (parent && task?.parentTag !== parent.tag) {
      violations.push(`${what}: its task is for ${task?.parentTag}, its parent is ${parent.tag}`);
    }
    const last = turn.messages.at(-1);
    if (child.state === "done" && last?.role === "assistant") {
      replies.set(child.id, { text: last.text, call: callOfText(last.text) });
    }
  }
  for (const [key, count] of perCall) {
    if (count > 1) violations.push(`subagent call ${key} has ${count} child jobs`);
  }
  return replies;
}

/** Every researcher call must be for a child that exists. */
function checkResearchCalls(run: SubagentRun): void {
  const tags = new Set(
    run.children.map((child) => researchOfCallId(callIdOfSessionKey(child.session_key))),
  );
  for (const call of run.calls) {
    if (call.agent === "researcher" && !tags.has(call.jobTag)) {
      run.violations.push(
        `researcher call #${call.number} is for ${call.jobTag}: no such child job`,
      );
    }
  }
}

/**
 * A done delegate's stored turn: one child per subagent call, each result that child's
 * final reply; its continuation calls came after those replies and were sent them.
 */
function checkDelegate(
  job: EnqueuedJob,
  children: JobRow[],
  replies: Map<string, ChildReply>,
  run: SubagentRun,
): void {
  const { violations } = run;
  const turn = run.turns.get(job.tag);
  const uses = turn?.messages[1]?.blocks.filter((block) => block.type === "tool_use") ?? [];
  const results = turn?.messages[2]?.blocks.filter((block) => block.type === "tool_result") ?? [];
  const byCall = new Map(children.map((child) => [callIdOfSessionKey(child.session_key), child]));
  const callIds = uses.map((use) => String(use.id));
  for (const [callId, child] of byCall) {
    if (!callIds.includes(callId)) {
      violations.push(
        `delegate job ${job.tag}: child ${child.id} is for call ${callId}, which its turn does not hold`,
      );
    }
  }
  const expected: string[] = [];
  for (const callId of callIds) {
    const child = byCall.get(callId);
    const reply = child ? replies.get(child.id) : undefined;
    expected.push(reply?.text ?? "?");
    if (!child) {
      violations.push(`delegate job ${job.tag}: its subagent call ${callId} has no child job`);
      continue;
    }
    const result = results.find((block) => block.tool_use_id === callId);
    if (!result) continue; // The turn's shape is checked with the job's.
    const text = blockText(result.content);
    if (result.is_error === true || text !== reply?.text) {
      violations.push(
        `delegate job ${job.tag}: the result of call ${callId} is ${JSON.stringify(text)}${result.is_error === true ? " (an error)" : ""}, not its child's reply ${JSON.stringify(reply?.text)}`,
      );
    }
  }
  checkContinuations(job, children, replies, expected, run);
}

/** A delegate's continuation calls come after its children's replies and carry them. */
function checkContinuations(
  job: EnqueuedJob,
  children: JobRow[],
  replies: Map<string, ChildReply>,
  expected: string[],
  run: SubagentRun,
): void {
  const childCalls = children.map((child) => replies.get(child.id)?.call ?? 0);
  const lastChildCall = Math.max(0, ...childCalls);
  for (const call of run.calls) {
    if (call.jobTag !== job.tag || call.agent !== "pickle" || call.step < 2) continue;
    if (call.number < lastChildCall) {
      run.violations.push(
        `delegate job ${job.tag}: continuation call #${call.number} came before its child's reply (call #${lastChildCall})`,
      );
    }
    if (JSON.stringify(call.results) !== JSON.stringify(expected)) {
      run.violations.push(
        `delegate job ${job.tag}: continuation call #${call.number} was sent ${JSON.stringify(call.results)}, not ${JSON.stringify(expected)}`,
      );
    }
  }
}
