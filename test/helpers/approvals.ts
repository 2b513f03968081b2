/** A careful agent for approval tests, and the fake model's answers for it. */
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
