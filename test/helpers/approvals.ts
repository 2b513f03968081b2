/** A careful agent for approval tests, and the fake model's answers for it. */
import type { ClaimedJob, NewApprovalRequest, Storage } from "../../src/ports/index.js";
import { newRequest } from "../approvals/contract.js";
import type { FakeReply, RecordedRequest } from "../fakes/anthropic.js";
import { lastResults } from "./subagents.js";

/**
 * `agents/pickle/AGENT.md`: `bash` asks the owner; `write` is free under `notes/` and
 * refused elsewhere.
 */
export const CAREFUL_AGENT = `---
name: Pickle
description: Runs commands, asking first
tools: [bash, write]
approvals:
  bash: ask
  write:
    "notes/**": allow
    "**": deny
---
You are Pickle.`;

/** The fake model: runs `echo hi`, then answers "result: " and the call's result. */
export function echoHiModel(request: RecordedRequest): FakeReply {
  const [result] = lastResults(request);
  if (result) return { text: `result: ${String(result.content)}` };
  return { toolUses: [{ id: "toolu_bash", name: "bash", input: { command: "echo hi" } }] };
}

/**
 * A job of the request's agent parked on approval request `id`, as the agent loop leaves
 * it: enqueued, claimed, parked for an hour from `now`, and the request opened at `now`
 * (the fields of `newRequest`, then `request`). Returns the parked job.
 */
export async function parkOnApproval(
  storage: Storage,
  id: string,
  now: number,
  request: Partial<NewApprovalRequest> = {},
): Promise<ClaimedJob> {
  const hour = 60 * 60 * 1000;
  const queued = await storage.queue.enqueue({
    agentId: request.agentId ?? "coder",
    sessionKey: "cron:nightly:1",
    message: "clean up",
    mode: "job",
    replyTo: { kind: "silent" },
  });
  const [job] = await storage.queue.claim("test", 1);
  if (job?.id !== queued.id) throw new Error("parkOnApproval needs an otherwise empty queue");
  await storage.queue.park(job, {
    wait: { kind: "approval", approvalId: id },
    until: now + hour,
    toolResults: [],
  });
  await storage.approvals.open(
    newRequest(id, { jobId: job.id, createdAt: now, expiresAt: now + hour, ...request }),
  );
  return job;
}
