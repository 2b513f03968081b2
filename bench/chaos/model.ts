/**
 * The model of the chaos run: the test suite's fake Anthropic server, answering every
 * request from what the request contains, and numbering every call so that the stored
 * history says which call produced each reply.
 *
 * Each answer streams one text delta, then pauses until its simulated latency is over (or
 * the run releases it on purpose, to kill the server right after the reply arrived).
 */
import type { FakeAnthropic, FakeReply, RecordedRequest } from "../../test/fakes/anthropic.js";
import { messageText, startFakeAnthropic } from "../../test/fakes/anthropic.js";
import type { Random } from "./random.js";
import { callTag, jobOfText, type ModelCall } from "./workload.js";

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
}

/** The fake model, with a log of every call and control over the paused ones. */
export class ChaosModel {
  /** Every call received, in arrival order; `number` is the index + 1. */
  readonly calls: ModelCall[] = [];
  readonly #fake: FakeAnthropic;
  readonly #random: Random;
  readonly #latencyMs: [number, number];
  readonly #pending = new Set<PendingCall>();
  #holdNext: ((pending: PendingCall) => void) | null = null;

  private constructor(fake: FakeAnthropic, options: ChaosModelOptions) {
    this.#fake = fake;
    this.#random = options.random;
    this.#latencyMs = options.latencyMs ?? [5, 40];
  }

  /** Starts the fake on 127.0.0.1. */
  static async start(options: ChaosModelOptions): Promise<ChaosModel> {
    let model: ChaosModel | null = null;
    const fake = await startFakeAnthropic({
      defaultReply: (request) => {
        if (!model) throw new Error("the chaos model is not ready");
        return model.#answer(request);
      },
    });
    model = new ChaosModel(fake, options);
    return model;
  }

  /** Base URL for `llm.base_url`. */
  get url(): string {
    return this.#fake.url;
  }

  /** Calls whose reply is still streaming. */
  get inFlight(): number {
    return this.#pending.size;
  }

  /**
   * Resolves once a call is in flight, taking it out of the latency schedule; `release`
   * sends the rest of its reply. Null when none arrives within `timeoutMs`.
   */
  async holdCall(timeoutMs: number): Promise<{ call: ModelCall; release: () => void } | null> {
    const held = [...this.#pending].at(-1);
    if (held) return this.#hold(held);
    const next = new Promise<PendingCall | null>((resolve) => {
      const timer = setTimeout(() => resolve(null), timeoutMs);
      this.#holdNext = (pending) => {
        this.#holdNext = null;
        clearTimeout(timer);
        resolve(pending);
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
  }

  #hold(pending: PendingCall): { call: ModelCall; release: () => void } {
    if (pending.timer) clearTimeout(pending.timer);
    pending.timer = null;
    return { call: pending.call, release: pending.release };
  }

  #answer(request: RecordedRequest): FakeReply {
    // Request bodies hold whole conversations: keep none, the call log has what we need.
    this.#fake.requests.length = 0;
    const call = describeCall(request, this.calls.length + 1);
    this.calls.push(call);
    const resume = new Promise<void>((resolve) => {
      const pending: PendingCall = { call, timer: null, release: () => {} };
      pending.release = () => {
        if (pending.timer) clearTimeout(pending.timer);
        this.#pending.delete(pending);
        resolve();
      };
      this.#pending.add(pending);
      if (this.#holdNext) this.#holdNext(pending);
      else pending.timer = setTimeout(pending.release, this.#random.between(...this.#latencyMs));
    });
    const text = `${callTag(call.number)} answers ${call.jobTag}`;
    if (call.step === 0 && call.wantsTool) {
      const toolUses = [{ name: "read", input: { path: "notes.txt" } }];
      return { text, toolUses, pauseAfterChunks: 1, resume };
    }
    return { text, chunks: 2, pauseAfterChunks: 1, resume };
  }
}

/** Which job and which step of its turn a request is for. */
function describeCall(request: RecordedRequest, number: number): ModelCall {
  const messages = request.body.messages;
  for (let index = messages.length - 1; index >= 0; index -= 1) {
    const message = messages[index];
    if (message?.role !== "user") continue;
    const text = textOf(message);
    if (text === null) continue;
    const job = jobOfText(text);
    const step = messages.length - 1 - index;
    return { number, jobTag: job?.tag ?? "?", wantsTool: job?.tool ?? false, step };
  }
  return { number, jobTag: "?", wantsTool: false, step: 0 };
}

/** The text of a user message (without the time note), or null when it holds only tool results. */
function textOf(message: RecordedRequest["body"]["messages"][number]): string | null {
  const text = messageText(message);
  return text === "" ? null : text;
}
