import { z } from "zod";
import { ToolError } from "../../base/errors.js";
import { memoryChars } from "../../base/memory-text.js";
import {
  AGENT_SCOPE,
  type Clock,
  type MemoryChange,
  type MemoryStore,
  type Tool,
  type ToolContext,
} from "../../ports/index.js";
import type { RunMemory } from "../memory/conversation.js";
import { addEntry, type EditTarget, removeEntry, replaceEntry } from "../memory/editing.js";
import { defineTool } from "./define-tool.js";

/** What the `memory` tool of one turn writes with. */
export interface MemoryToolOptions {
  store: MemoryStore;
  /** The run's memory: its budgets, and whose memory "person" is. */
  run: RunMemory;
  /** The session the turn belongs to: with the call id, the key of a change's idempotency. */
  sessionId: string;
  clock: Clock;
  /** Values never saved (the configuration's secrets). */
  secrets: readonly string[];
}

const memoryInput = z.object({
  action: z
    .enum(["add", "replace", "remove"])
    .describe("add a new entry; replace or remove the entry old_text picks."),
  about: z
    .enum(["agent", "person"])
    .describe(
      "agent: your own notes (your work, tools, conventions), shared by all your conversations; " +
        "person: what you know about the person whose message you are answering.",
    ),
  text: z
    .string()
    .optional()
    .describe(
      "The entry to save (add), or to write in place of the old one (replace): one short, " +
        "self-contained fact. Not needed to remove.",
    ),
  old_text: z
    .string()
    .optional()
    .describe("replace and remove: a piece of the entry's text that only that entry holds."),
});

type MemoryInput = z.output<typeof memoryInput>;

/**
 * `memory {action, about, text, old_text?}`: adds, replaces or removes one entry of the
 * agent's notes or of the memory about the person being answered. Each call writes at
 * most once, even when it runs again after a crash (keyed by session and call).
 */
export function createMemoryTool(options: MemoryToolOptions): Tool {
  const { agentChars, personChars } = options.run.settings;
  return defineTool({
    name: "memory",
    description:
      "Save, correct or remove a fact in your long-term memory, which is shown at the start of " +
      "your later conversations (not this one). Save what will matter later: the person's " +
      "preferences, names, dates and plans, or what you learned about your work. One short, " +
      "self-contained fact per entry; never passwords, keys or tokens. Your notes hold " +
      `${agentChars} characters, a person's memory ${personChars}: when one is full, merge or ` +
      "remove entries first.",
    input: memoryInput,
    run: (input, context) => remember(input, context, options),
  });
}

async function remember(
  input: MemoryInput,
  context: ToolContext,
  options: MemoryToolOptions,
): Promise<string> {
  const { run, store, clock } = options;
  const target = editTarget(input.about, options);
  const origin = {
    by: "agent",
    at: clock.now(),
    sessionId: options.sessionId,
    ...(context.jobId === undefined ? {} : { jobId: context.jobId }),
    ...(context.callId === undefined ? {} : { callId: context.callId }),
  };
  const result = await store.update(
    { agentId: run.agentId, scope: target.scope },
    origin,
    editorFor(input, target),
  );
  if (result.status === "refused") throw new ToolError(`memory: ${result.reason}`);
  const done = describeChange(result.change, target);
  if (result.status === "repeated") return `${done} (this call had done it already).`;
  const used = `${memoryChars(result.text)} of ${target.budget} characters used`;
  return `${done} (${used}). Conversations started from now on see it.`;
}

/** The memory `about` names, with how it is shown in the tool's answers. */
function editTarget(
  about: MemoryInput["about"],
  options: MemoryToolOptions,
): EditTarget & { scope: string } {
  const { run, secrets } = options;
  if (about === "agent") {
    return {
      scope: AGENT_SCOPE,
      label: "your notes",
      budget: run.settings.agentChars,
      quote: true,
      secrets,
    };
  }
  if (run.writer === null) {
    throw new ToolError(
      'memory: this conversation is with no one person (a scheduled job or a task from another agent), so there is no person to remember things about; use about: "agent" for your notes',
    );
  }
  return {
    scope: run.writer,
    label: `the memory about the person you are answering (${run.writer})`,
    budget: run.settings.personChars,
    // In a group the other members would read the entries quoted back.
    quote: run.person === run.writer,
    secrets,
  };
}

function editorFor(input: MemoryInput, target: EditTarget) {
  const text = input.text ?? "";
  switch (input.action) {
    case "add":
      return addEntry(text, target);
    case "replace":
      if (input.old_text === undefined) {
        throw new ToolError('memory: replace needs "old_text", a piece of the entry to replace');
      }
      return replaceEntry(input.old_text, text, target);
    case "remove": {
      const picker = input.old_text ?? input.text;
      if (picker === undefined) {
        throw new ToolError('memory: remove needs "old_text", a piece of the entry to remove');
      }
      return removeEntry(picker, target);
    }
    default:
      return input.action satisfies never;
  }
}

/** What a change did, in words; the entry it replaced or removed only where quoting is fine. */
function describeChange(change: MemoryChange, target: EditTarget): string {
  const previous = target.quote ? ` "${change.previous}"` : " the entry";
  switch (change.action) {
    case "remove":
      return `Removed${previous} from ${target.label}`;
    case "replace":
      return `Replaced${previous} with "${change.entry}" in ${target.label}`;
    default:
      return `Saved to ${target.label}: "${change.entry}"`;
  }
}
