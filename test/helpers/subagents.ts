/**
 * A two-agent workspace for subagent tests: Pickle, which may call the researcher, and
 * the fake model's answers for both, told apart by their system prompts.
 */
import { type FakeReply, lastUserText, type RecordedRequest } from "../fakes/anthropic.js";

/** `agents/researcher/AGENT.md`. */
export const RESEARCHER_AGENT = `---
name: Researcher
description: Looks things up and reports back
tools: [read]
---
You research. Answer with what you found.`;

/** `agents/pickle/AGENT.md`: may call the researcher only. */
export const DELEGATING_PICKLE = `---
name: Pickle
description: The chat agent
tools: [read, subagent]
subagents: [researcher]
---
You are Pickle. Delegate research.`;

/** The text of a request's system prompt. */
export function systemOf(request: RecordedRequest): string {
  const { system } = request.body;
  if (typeof system === "string") return system;
  return (system ?? []).map((block) => String(block.text ?? "")).join("\n");
}

/** True for a request of the researcher. */
export function isResearcher(request: RecordedRequest): boolean {
  return systemOf(request).includes("You research");
}

/** The tool results of the newest message of a request. */
export function lastResults(request: RecordedRequest): Record<string, unknown>[] {
  const last = request.body.messages.at(-1);
  if (!last || typeof last.content === "string") return [];
  return last.content.filter((block) => block.type === "tool_result");
}

/**
 * The fake model of a delegating chat: the researcher answers "found: <task>"; Pickle
 * calls `agent` once per task (ids `toolu_sub_<n>`) and, given the results, answers
 * "answer: " and the results joined with " | ".
 */
export function delegatingModel(tasks: string[], agent = "researcher") {
  return (request: RecordedRequest): FakeReply => {
    if (isResearcher(request)) return { text: `found: ${lastUserText(request)}` };
    const results = lastResults(request);
    if (results.length > 0) {
      return { text: `answer: ${results.map((result) => String(result.content)).join(" | ")}` };
    }
    return {
      toolUses: tasks.map((task, index) => ({
        id: `toolu_sub_${index}`,
        name: "subagent",
        input: { agent, task },
      })),
    };
  };
}
