/**
 * The ModelProvider contract, written once and run against every provider adapter, each
 * on the real SDK talking to a fake of its API (test/agents/anthropic.contract.test.ts):
 * streaming, a tool call round trip, usage, every class of failure with whether a retry
 * can help, and cancellation. A provider that cannot do something opts out of that case,
 * with the reason, and the case is reported as skipped with it.
 *
 * The cases speak in the provider's neutral terms (`ScriptedAnswer`, `Failure`); each
 * fixture turns them into its fake's script, with the API's real status codes and error
 * bodies.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { CancelledError, ModelError, TimeoutError } from "../../src/base/errors.js";
import type {
  ModelProvider,
  ModelRequest,
  RequestMessage,
  TokenUsage,
  ToolResultBlock,
  ToolSpec,
} from "../../src/ports/index.js";
import { failureOf, modelErrorOf } from "../helpers/failure.js";

/** A failure the provider's API can answer with, in the API's neutral terms. */
export type Failure =
  /** 400: the request is malformed (it will fail again). */
  | "bad_request"
  /** 401: the API key is wrong. */
  | "unauthorized"
  /** 403: the key may not use this model or endpoint. */
  | "forbidden"
  /** 404: no such model or endpoint. */
  | "not_found"
  /** 413: the request is over the API's size limit. */
  | "too_large"
  /** 429: rate limited, with a retry-after. */
  | "rate_limited"
  /** 500: the API failed. */
  | "server_error"
  /** Overloaded (Anthropic's 529). */
  | "overloaded";

/** One answer the fake gives to the next model request. */
export type ScriptedAnswer =
  /** A text reply streamed in `chunks` deltas, stop reason end_turn. */
  | { text: string; chunks?: number; usage?: TokenUsage }
  /** Some text, then one tool call; stop reason tool_use. */
  | { text: string; toolCall: { id: string; name: string; input: Record<string, unknown> } }
  /** An error answer; `message` is the API's own words, shown in the error. */
  | { failure: Failure; message: string; retryAfterS?: number }
  /** `chunks` text deltas, then the connection drops. */
  | { cutAfterChunks: number; text: string }
  /** `chunks` text deltas, then the API reports it is overloaded in the stream itself. */
  | { overloadedAfterChunks: number; text: string }
  /** No answer at all: the request hangs until the client gives up. */
  | { hang: true };

/** A fake API and providers on it, for one test. */
export interface ProviderFixture {
  /** A provider on the fake, with no HTTP retries, and its HTTP timeout when given. */
  provider(options?: { timeoutMs?: number }): ModelProvider;
  /** A provider whose endpoint refuses connections. */
  unreachable(): Promise<ModelProvider>;
  /** Appends answers; each model request takes the next. */
  script(...answers: ScriptedAnswer[]): void;
  /** The tool results request `index` (0-based) sent, in the neutral shape. */
  toolResultsSent(index: number): ToolResultBlock[];
  /** Model requests the fake received. */
  requestCount(): number;
  /** The API key the providers use: no error message may show it. */
  apiKey: string;
  close(): Promise<void>;
}

/** The cases of the contract, by name, so a provider can opt out of one. */
export type ContractCase =
  | "streaming"
  | "tool round trip"
  | "usage"
  | `failure: ${Failure}`
  | "failure: stream cut"
  | "failure: overloaded mid-stream"
  | "failure: unreachable"
  | "failure: timeout"
  | "cancel before the answer"
  | "cancel mid-stream"
  | "deadline"
  | "listener error";

/** Options of {@link modelProviderContract}. */
export interface ContractOptions {
  /** Cases the provider cannot pass, each with the reason. (Default: none) */
  optOuts?: Partial<Record<ContractCase, string>>;
}

/** The status, retryability and message each failure must give. */
const FAILURES = {
  bad_request: { status: 400, retryable: false },
  unauthorized: { status: 401, retryable: false },
  forbidden: { status: 403, retryable: false },
  not_found: { status: 404, retryable: false },
  too_large: { status: 413, retryable: false },
  rate_limited: { status: 429, retryable: true },
  server_error: { status: 500, retryable: true },
  overloaded: { status: 529, retryable: true },
} satisfies Record<Failure, { status: number; retryable: boolean }>;

const READ_TOOL: ToolSpec = {
  name: "read",
  description: "Reads a file of the workspace.",
  input_schema: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
};

function request(overrides: Partial<ModelRequest> = {}): ModelRequest {
  return {
    model: "contract-model",
    system: "You are Pickle.",
    messages: [{ role: "user", content: [{ type: "text", text: "Hello" }] }],
    tools: [],
    maxTokens: 1024,
    ...overrides,
  };
}

/** Runs the ModelProvider contract against the provider `factory` sets up on its fake. */
export function modelProviderContract(
  name: string,
  factory: () => Promise<ProviderFixture>,
  { optOuts = {} }: ContractOptions = {},
): void {
  let fixture: ProviderFixture;

  beforeEach(async () => {
    fixture = await factory();
  });

  afterEach(async () => {
    await fixture.close();
  });

  /** A case, or the same case skipped with its reason when the provider opts out. */
  function contractCase(key: ContractCase, title: string, run: () => Promise<void>): void {
    const reason = optOuts[key];
    if (reason === undefined) it(title, run);
    else it.skip(`${title} (opted out: ${reason})`, run);
  }

  describe(`${name}: the ModelProvider contract`, () => {
    describe("replies", () => {
      contractCase(
        "streaming",
        "streams the reply as text deltas that add up to the whole text",
        async () => {
          const text = "Pickles are cucumbers that went on an adventure.";
          fixture.script({ text, chunks: 4 });
          const deltas: string[] = [];

          const reply = await fixture
            .provider()
            .complete(request({ onText: (delta) => deltas.push(delta) }));

          expect(deltas).toHaveLength(4);
          expect(deltas.join("")).toBe(text);
          expect(reply.content).toEqual([{ type: "text", text }]);
          expect(reply.stopReason).toBe("end_turn");
        },
      );

      contractCase(
        "tool round trip",
        "asks for a tool, takes its result in the next request, then ends the turn",
        async () => {
          const input = { path: "notes/groceries.md", lines: [1, 2, 3], note: "ünïcode ✓" };
          fixture.script(
            { text: "Let me look.", toolCall: { id: "toolu_42", name: "read", input } },
            { text: "You need pickles." },
          );
          const provider = fixture.provider();
          const asked: RequestMessage = {
            role: "user",
            content: [{ type: "text", text: "What do I need?" }],
          };

          const first = await provider.complete(request({ messages: [asked], tools: [READ_TOOL] }));
          expect(first.stopReason).toBe("tool_use");
          expect(first.content).toEqual([
            { type: "text", text: "Let me look." },
            { type: "tool_use", id: "toolu_42", name: "read", input },
          ]);

          const result: ToolResultBlock = {
            type: "tool_result",
            tool_use_id: "toolu_42",
            content: "- pickles",
          };
          const second = await provider.complete(
            request({
              messages: [
                asked,
                { role: "assistant", content: first.content },
                { role: "user", content: [result] },
              ],
              tools: [READ_TOOL],
            }),
          );

          expect(fixture.toolResultsSent(1)).toEqual([result]);
          expect(second.stopReason).toBe("end_turn");
          expect(second.content).toEqual([{ type: "text", text: "You need pickles." }]);
        },
      );

      contractCase(
        "usage",
        "reports the tokens the API counted: input, output, cache reads and writes",
        async () => {
          const usage = { input: 120, output: 7, cacheRead: 1000, cacheWrite: 50 };
          fixture.script({ text: "Counted.", usage });

          const reply = await fixture.provider().complete(request());

          expect(reply.usage).toEqual(usage);
        },
      );
    });

    describe("failures", () => {
      for (const [failure, expected] of Object.entries(FAILURES) as Array<
        [Failure, (typeof FAILURES)[Failure]]
      >) {
        const retry = expected.retryable ? "retryable" : "not retryable";
        contractCase(
          `failure: ${failure}`,
          `reports a ${expected.status} (${failure}) as ${retry}, with its status and the API's words`,
          async () => {
            const words = `the API says: ${failure} (${fixture.apiKey})`;
            fixture.script({ failure, message: words, retryAfterS: 7 });

            const error = await modelErrorOf(fixture.provider().complete(request()));

            expect(error.retryable).toBe(expected.retryable);
            expect(error.status).toBe(expected.status);
            expect(error.message).toContain(String(expected.status));
            expect(error.message).toContain(`the API says: ${failure}`);
            expect(error.message).not.toContain(fixture.apiKey);
            if (failure === "rate_limited") expect(error.retryAfterS).toBe(7);
            expect(fixture.requestCount()).toBe(1);
          },
        );
      }

      contractCase(
        "failure: stream cut",
        "reports a stream cut off mid-reply as retryable, after the deltas that came",
        async () => {
          fixture.script({
            cutAfterChunks: 2,
            text: "This reply will never be finished by the model.",
          });
          const deltas: string[] = [];

          const error = await modelErrorOf(
            fixture.provider().complete(request({ onText: (delta) => deltas.push(delta) })),
          );

          expect(error.retryable).toBe(true);
          expect(deltas).toHaveLength(2);
        },
      );

      contractCase(
        "failure: overloaded mid-stream",
        "reports an overload the API announces mid-stream as retryable",
        async () => {
          fixture.script({ overloadedAfterChunks: 1, text: "Half of a reply, then nothing." });

          const error = await modelErrorOf(fixture.provider().complete(request()));

          expect(error.retryable).toBe(true);
          expect(error.message).toContain("overloaded");
        },
      );

      contractCase(
        "failure: unreachable",
        "reports an endpoint that refuses connections as retryable, naming the cause",
        async () => {
          const provider = await fixture.unreachable();

          const error = await modelErrorOf(provider.complete(request()));

          expect(error.retryable).toBe(true);
          expect(error.message).toContain("ECONNREFUSED");
          expect(error.message).not.toContain(fixture.apiKey);
        },
      );

      contractCase(
        "failure: timeout",
        "reports a call that gets no answer within its timeout as retryable",
        async () => {
          fixture.script({ hang: true });

          const error = await modelErrorOf(
            fixture.provider({ timeoutMs: 200 }).complete(request()),
          );

          expect(error.retryable).toBe(true);
        },
      );
    });

    describe("cancellation", () => {
      contractCase(
        "cancel before the answer",
        "rejects promptly with a CancelledError, not a ModelError, when the signal aborts a call waiting for its answer",
        async () => {
          fixture.script({ hang: true });
          const controller = new AbortController();
          const call = fixture.provider().complete(request({ signal: controller.signal }));
          await waitFor(() => fixture.requestCount() === 1);
          controller.abort();

          // The fake never answers: a call that ignored the signal would outlast the test.
          const error = await failureOf(call);

          expect(error).toBeInstanceOf(CancelledError);
          expect(error).not.toBeInstanceOf(ModelError);
          expect((error as CancelledError).retryable).toBe(false);
        },
      );

      contractCase(
        "cancel mid-stream",
        "rejects with a CancelledError when the signal aborts mid-stream",
        async () => {
          const controller = new AbortController();
          fixture.script({ text: "one two three four five six", chunks: 6 });

          const error = await failureOf(
            fixture
              .provider()
              .complete(request({ signal: controller.signal, onText: () => controller.abort() })),
          );

          expect(error).toBeInstanceOf(CancelledError);
        },
      );

      contractCase(
        "deadline",
        "rejects with the signal's own TimeoutError when a deadline aborts the call",
        async () => {
          fixture.script({ hang: true });
          const controller = new AbortController();
          const timeout = new TimeoutError("timed out after 5 ms");
          const call = fixture.provider().complete(request({ signal: controller.signal }));
          await waitFor(() => fixture.requestCount() === 1);
          controller.abort(timeout);

          const error = await failureOf(call);

          expect(error).toBe(timeout);
        },
      );

      contractCase("listener error", "rethrows an error thrown by onText unchanged", async () => {
        const broken = new Error("frontend exploded");
        fixture.script({ text: "streaming along nicely", chunks: 3 });

        const error = await failureOf(
          fixture.provider().complete(
            request({
              onText: () => {
                throw broken;
              },
            }),
          ),
        );

        expect(error).toBe(broken);
      });
    });
  });
}

/** Resolves once `done()` holds, checking every few milliseconds (up to 5 s). */
async function waitFor(done: () => boolean): Promise<void> {
  const until = Date.now() + 5000;
  while (!done()) {
    if (Date.now() > until) throw new Error("timed out waiting for the fake to get the request");
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
