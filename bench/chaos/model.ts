/**
 * The model of the chaos run: the test suite's fake Anthropic server, answering every
 * request from what the request contains, and numbering every call so that the stored
 * history says which call produced each reply.
 *
 * Each answer streams one text delta, then pauses until its simulated latency is over (or
 * the run releases it on purpose, to kill the server right after the reply arrived).
 */
import type {
  FakeAnthropic,
  FakeReply,
  FakeToolUse,
  RecordedRequest,
} from "../../test/fakes/anthropic.js";
import { messageText, startFakeAnthropic } from "../../test/fakes/anthropic.js";
import { HEARTBEAT_ANSWER, isHeartbeatRequest } from "./heartbeats.js";
import type { Random } from "./random.js";
import {
  callTag,
  type JobKind,
  jobOfText,
  jobTagsOfText,
  MEDIA_FILE,
  type ModelCall,
  rememberedFact,
  researchOfText,
  researchText,
  subagentCallId,
} from "./workload.js";

/** A model call whose stream is paused. */
interface PendingCall {
  call: ModelCall;
  release: () => void;
  timer: NodeJS.Timeout | null;
}

/** Options of {@link ChaosModel.start}. */
export interface ChaosModelOptions {
  random: Random;
  /** Simulated model latency, drawn per call. (Default: 5–40 ms) */
  latencyMs?: [number, number];
  /** Called when a stop job's tool call is answered: its command is about to run. */
  onStopJobTool?: (call: ModelCall) => void;
}

/** How long a stop job's command runs, unless stopped. */
export const STOP_JOB_COMMAND_S = 1;

/** The fake model, with a log of every call and control over the paused ones. */
export class ChaosModel {
  /** Every call received, in arrival order; `number` is the index + 1. */
  readonly calls: ModelCall[] = [];
  readonly #fake: FakeAnthropic;
  /** The flaky agent's primary: 503 for good to half its calls, else as the default. */
  readonly #flaky: FakeAnthropic;
  /** Requests the flaky primary answered with a 503 (the SDK's retries included). */
  flakyRefusals = 0;
  readonly #random: Random;
  readonly #latencyMs: [number, number];
  readonly #onStopJobTool: ((call: ModelCall) => void) | undefined;
  readonly #pending = new Set<PendingCall>();
  /** Takes a call about to stream out of the latency schedule; false when it is not wanted. */
  #holdNext: ((pending: PendingCall) => boolean) | null = null;

  private constructor(fake: FakeAnthropic, flaky: FakeAnthropic, options: ChaosModelOptions) {
    this.#fake = fake;
    this.#flaky = flaky;
    this.#random = options.random;
    this.#latencyMs = options.latencyMs ?? [5, 40];
    this.#onStopJobTool = options.onStopJobTool;
  }

  /** Starts the fake on 127.0.0.1. */
  static async start(options: ChaosModelOptions): Promise<ChaosModel> {
    let model: ChaosModel | null = null;
    const fake = await startFakeAnthropic({
      defaultReply: (request) => {
        if (!model) throw new Error("the chaos model is not ready");
        return model.#answer(request, "default");
      },
    });
    const flaky = await startFakeAnthropic({
      defaultReply: (request) => {
        if (!model) throw new Error("the chaos model is not ready");
        return model.#answerFlaky(request);
      },
    });
    model = new ChaosModel(fake, flaky, options);
    return model;
  }

  /** Base URL for `llm.base_url`. */
  get url(): string {
    return this.#fake.url;
  }

  /** Base URL of the flaky agent's primary named model. */
  get flakyUrl(): string {
    return this.#flaky.url;
  }

  /** Requests the fake refused as the real API would (an invalid history was sent). */
  get refused(): ReadonlyArray<{ refusal: string }> {
    return this.#fake.refused;
  }

  /** Ends every batch in progress: its items are answered (the Message Batches API). */
  endBatches(): void {
    this.#fake.batches.endBatches();
  }

  /** The `custom_id` of every batch item created, in order. */
  batchItemIds(): string[] {
    return this.#fake.batches.created.flatMap((batch) => batch.items.map((item) => item.custom_id));
  }

  /** Calls whose reply is still streaming. */
  get inFlight(): number {
    return this.#pending.size;
  }

  /**
   * Resolves once a call is in flight, taking it out of the latency schedule; `release`
   * sends the rest of its reply. Null when none arrives within `timeoutMs`.
   */
  async holdCall(
    timeoutMs: number,
    which: (call: ModelCall) => boolean = () => true,
  ): Promise<{ call: ModelCall; release: () => void } | null> {
    const held = [...this.#pending].filter((pending) => which(pending.call)).at(-1);
    if (held) return this.#hold(held);
    const next = new Promise<PendingCall | null>((resolve) => {
      const timer = setTimeout(() => resolve(null), timeoutMs);
      this.#holdNext = (pending) => {
        if (!which(pending.call)) return false;
        this.#holdNext = null;
        clearTimeout(timer);
        resolve(pending);
        return true;
      };
    });
    const pending = await next;
    this.#holdNext = null;

    return pending ? this.#hold(pending) : null;
  }

  /** Forgets the paused calls of a server that was killed (their sockets are gone). */
  dropPending(): void {
    for (const pending of this.#pending) if (pending.timer) clearTimeout(pending.timer);
    this.#pending.clear();
  }

  async close(): Promise<void> {
    this.dropPending();
    await this.#fake.close();
    await this.#flaky.close();
  }

  #hold(pending: PendingCall): { call: ModelCall; release: () => void } {
    if (pending.timer) clearTimeout(pending.timer);
    pending.timer = null;
    return { call: pending.call, release: pending.release };
  }

  /** The flaky primary: a 503 to every request of a call that fails on it, else an answer. */
  #answerFlaky(request: RecordedRequest): FakeReply {
    this.#flaky.requests.length = 0;
    if (failsOnFlakyPrimary(describeCall(request, 0))) {
      this.flakyRefusals += 1;
      return { error: { status: 503, message: "chaos: the flaky primary is down" } };
    }
    return this.#answer(request, "flaky");
  }

  #answer(request: RecordedRequest, via: "flaky" | "default"): FakeReply {
    // Request bodies hold whole conversations: keep none, the call log has what we need.
    this.#fake.requests.length = 0;
    // A heartbeat's tick is no job of the workload: heartbeats.ts checks its ticks.
    if (isHeartbeatRequest(request)) return HEARTBEAT_ANSWER;
    const call: ModelCall = { ...describeCall(request, this.calls.length + 1), via };
    this.calls.push(call);
    if (call.jobTag === SUMMARY_TAG) {
      const summary = `${callTag(call.number)} summarises the conversation so far.`;
      return { text: summary, chunks: 2, pauseAfterChunks: 1, resume: this.#latency(call) };
    }
    if (call.jobTag === MEMORY_SAVE_TAG) {
      const toolUses = [memorySave(call)];
      return { text: "Saving.", toolUses, pauseAfterChunks: 1, resume: this.#latency(call) };
    }
    const text = `${callTag(call.number)} answers ${call.jobTag}`;
    if (call.step === 0 && call.kind !== "text") {
      const resume = this.#latency(call);
      if (call.kind === "stop") void resume.then(() => this.#onStopJobTool?.(call));
      return { text, toolUses: this.#toolCalls(call), pauseAfterChunks: 1, resume };
    }
    // A refusal is answered at once: there is no stream to pause or to cut.
    if (call.kind === "fail") return { error: { status: 400, message: FAIL_JOB_REFUSAL } };
    if (call.kind === "delegate") call.results = resultTexts(request);
    return { text, chunks: 2, pauseAfterChunks: 1, resume: this.#latency(call) };
  }

  /** The tool calls of a job's first call: a delegate's are one or two research tasks. */
  #toolCalls(call: ModelCall): FakeToolUse[] {
    if (call.kind === "text") return [];
    if (call.kind === "approve") return [approvedWrite(call)];
    if (call.kind === "media") return [mediaSend(call)];
    if (call.kind === "remember") return [rememberCall(call)];
    if (call.kind !== "delegate") return [TOOL_CALLS[call.kind]];
    const count = this.#random.chance(0.5) ? 1 : 2;
    return Array.from({ length: count }, (_, index) => {
      const tag = `r${call.number}.${index + 1}`;
      return {
        id: subagentCallId(tag),
        name: "subagent",
        input: { agent: RESEARCHER_ID, task: researchText(tag, call.jobTag) },
      };
    });
  }

  /** Settles when the call's simulated latency is over, or when the run releases it. */
  #latency(call: ModelCall): Promise<void> {
    return new Promise<void>((resolve) => {
      const pending: PendingCall = { call, timer: null, release: () => {} };
      pending.release = () => {
        if (pending.timer) clearTimeout(pending.timer);
        this.#pending.delete(pending);
        resolve();
      };
      this.#pending.add(pending);
      if (!this.#holdNext?.(pending)) {
        pending.timer = setTimeout(pending.release, this.#random.between(...this.#latencyMs));
      }
    });
  }
}

/** The name of the chaos workspace's MCP server (`mcp_servers`), whose `echo` mcp jobs call. */
export const CHAOS_MCP_SERVER = "notes";

/** The error a fail job's follow-up call gets (a permanent 400). */
export const FAIL_JOB_REFUSAL = "chaos: this job's follow-up is refused";

/** The agent the delegate jobs call, and the line of its system prompt that tells it apart. */
export const RESEARCHER_ID = "researcher";
export const RESEARCHER_PROMPT = "You research chaos tasks.";

/** The tool call of each kind of job that makes one (a delegate's are drawn per call). */
const TOOL_CALLS: Record<
  Exclude<JobKind, "text" | "delegate" | "approve" | "media" | "remember">,
  FakeToolUse
> = {
  tool: { name: "read", input: { path: "notes.txt" } },
  batch: { name: "read", input: { path: "notes.txt" } },
  big: { name: "read", input: { path: "big.txt" } },
  fail: { name: "read", input: { path: "notes.txt" } },
  stop: { name: "bash", input: { command: `sleep ${STOP_JOB_COMMAND_S}` } },
  mcp: { name: `${CHAOS_MCP_SERVER}__echo`, input: { text: "chaos" } },
  recall: { name: "session_search", input: { query: "chaos job say something short" } },
  fallback: { name: "read", input: { path: "notes.txt" } },
};

/** A remember job's call: saves its fact about the person who sent it. */
function rememberCall(call: ModelCall): FakeToolUse {
  return {
    name: "memory",
    input: { action: "add", about: "person", text: rememberedFact(call.jobTag) },
  };
}

/**
 * Whether a fallback job's call fails for good on the flaky primary (then its fallback,
 * the default model, answers it): half of them, by job number and step.
 */
export function failsOnFlakyPrimary(call: Pick<ModelCall, "kind" | "jobTag" | "step">): boolean {
  if (call.kind !== "fallback") return false;
  return (Number(call.jobTag.slice(1)) + call.step) % 2 === 0;
}

/**
 * An approve job's call: a `write` under `approved/`, which the chaos agent's policy
 * marks `ask`; its id names the model call, so the run can find its approval request.
 */
function approvedWrite(call: ModelCall): FakeToolUse {
  return {
    id: approvalCallId(call.number),
    name: "write",
    input: { path: `approved/${call.jobTag}.txt`, content: call.jobTag },
  };
}

/** A media job's call: `send_file` of the media file, captioned with the job's tag. */
function mediaSend(call: ModelCall): FakeToolUse {
  return { name: "send_file", input: { path: MEDIA_FILE, caption: call.jobTag } };
}

/** The tool_use id of the approve call made by model call `number`. */
export function approvalCallId(number: number): string {
  return `toolu_chaos_approve_${number}`;
}

/** The job tag of a summary call (compaction), which belongs to no job. */
export const SUMMARY_TAG = "summary";

/** The job tag of a compaction's memory save call, made just before its summary call. */
export const MEMORY_SAVE_TAG = "memory-save";

/** The agent-notes entry memory save call `number` saves. */
export function savedBeforeSummary(number: number): string {
  return `${callTag(number)} was saved before a summary.`;
}

/** A memory save call's one call: an entry naming it, so a second write would show. */
function memorySave(call: ModelCall): FakeToolUse {
  return {
    id: `toolu_chaos_save_${call.number}`,
    name: "memory",
    input: { action: "add", about: "agent", text: savedBeforeSummary(call.number) },
  };
}

/** Whether a request is a compaction's memory save call: offered the `memory` tool alone. */
function isMemorySave(request: RecordedRequest, system: string): boolean {
  const tools = request.body.tools ?? [];
  return (
    tools.length === 1 &&
    tools[0]?.name === "memory" &&
    system.includes("is about to be summarised")
  );
}

/**
 * Which job (or research task) and which step of its turn a request is for, or that it is
 * a summary call or a memory save call. The researcher's requests are told from the chaos agent's by their
 * system prompt.
 */
function describeCall(request: RecordedRequest, number: number): ModelCall {
  const system = JSON.stringify(request.body.system);
  if (system.includes("You compress a conversation")) {
    return { number, jobTag: SUMMARY_TAG, kind: "text", step: 0, agent: "pickle" };
  }
  if (isMemorySave(request, system)) {
    return { number, jobTag: MEMORY_SAVE_TAG, kind: "text", step: 0, agent: "pickle" };
  }
  const researcher = system.includes(RESEARCHER_PROMPT);
  const messages = request.body.messages;
  for (let index = messages.length - 1; index >= 0; index -= 1) {
    const message = messages[index];
    if (message?.role !== "user") continue;
    const text = textOf(message);
    if (text === null) continue;
    const step = messages.length - 1 - index;
    if (researcher) {
      const task = researchOfText(text);
      const tags = task ? { jobTag: task.tag, parentTag: task.parentTag } : { jobTag: "?" };
      return { number, ...tags, kind: "text", step, agent: "researcher" };
    }
    const job = jobOfText(text);
    const askedTags = jobTagsOfText(text);
    return {
      number,
      jobTag: job?.tag ?? "?",
      kind: job?.kind ?? "text",
      step,
      agent: "pickle",
      askedTags,
    };
  }
  return {
    number,
    jobTag: "?",
    kind: "text",
    step: 0,
    agent: researcher ? "researcher" : "pickle",
  };
}

/** The text of each tool result of a request's newest message, in order. */
function resultTexts(request: RecordedRequest): string[] {
  const last = request.body.messages.at(-1);
  if (!last || typeof last.content === "string") return [];
  return last.content
    .filter((block) => block.type === "tool_result")
    .map((block) => blockText(block.content));
}

/** A tool result's content as text: a string, or its text blocks joined. */
export function blockText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((block: { type?: string; text?: unknown }) =>
      block.type === "text" ? String(block.text) : `[${block.type}]`,
    )
    .join("");
}

/** The text of a user message (without the time note), or null when it holds only tool results. */
function textOf(message: RecordedRequest["body"]["messages"][number]): string | null {
  const text = messageText(message);
  return text === "" ? null : text;
}
