/**
 * The OpenAI-compatible adapter on the fake API, as the ModelProvider contract
 * (test/agents/provider.contract.ts) drives it: the contract's neutral answers become the
 * fake's script, with the API's status codes and error bodies.
 */
import { createOpenAiCompatibleProvider } from "../../src/agents/providers/openai-compatible.js";
import type { Failure, ProviderFixture, ScriptedAnswer } from "../agents/provider.contract.js";
import { type FakeOpenAiReply, startFakeOpenAi } from "./openai.js";

const API_KEY = "sk-or-contract-secret-key";

/** The status each failure is answered with (an overload is a 5xx: 529 as Anthropic's, 503 elsewhere). */
const STATUS = {
  bad_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  too_large: 413,
  rate_limited: 429,
  server_error: 500,
  overloaded: 529,
} satisfies Record<Failure, number>;

/** Starts a fake OpenAI-compatible API and makes providers on it. */
export async function openAiProviderFixture(): Promise<ProviderFixture> {
  const fake = await startFakeOpenAi({ apiKey: API_KEY });
  return {
    apiKey: API_KEY,
    provider: ({ timeoutMs } = {}) =>
      createOpenAiCompatibleProvider({
        apiKey: API_KEY,
        baseURL: fake.url,
        maxRetries: 0,
        ...(timeoutMs === undefined ? {} : { timeoutMs }),
      }),
    async unreachable() {
      const gone = await startFakeOpenAi();
      await gone.close();
      return createOpenAiCompatibleProvider({ apiKey: API_KEY, baseURL: gone.url, maxRetries: 0 });
    },
    script: (...answers) => fake.script(...answers.map(toFakeReply)),
    toolResultsSent(index) {
      const request = fake.requests[index];
      if (!request) throw new Error(`the fake received ${fake.requests.length} requests`);
      return request.body.messages
        .filter((message) => message.role === "tool")
        .map((message) => ({
          type: "tool_result" as const,
          tool_use_id: String(message.tool_call_id),
          content: String(message.content),
        }));
    },
    requestCount: () => fake.requests.length,
    close: () => fake.close(),
  };
}

function toFakeReply(answer: ScriptedAnswer): FakeOpenAiReply {
  if ("failure" in answer) {
    const { failure, message, retryAfterS } = answer;
    return {
      error: {
        status: STATUS[failure],
        message,
        ...(retryAfterS === undefined ? {} : { retryAfterS }),
      },
    };
  }
  if ("toolCall" in answer) return { text: answer.text, toolCalls: [answer.toolCall] };
  if ("overloadedAfterChunks" in answer) {
    return {
      streamError: { message: "The model is overloaded, try again.", type: "overloaded_error" },
      afterChunks: answer.overloadedAfterChunks,
      text: answer.text,
    };
  }
  if ("cutAfterChunks" in answer || "hang" in answer) return answer;
  const { text, chunks, usage } = answer;
  return {
    text,
    ...(chunks === undefined ? {} : { chunks }),
    ...(usage === undefined
      ? {}
      : {
          usage: {
            prompt_tokens: usage.input + usage.cacheRead,
            completion_tokens: usage.output,
            cached_tokens: usage.cacheRead,
          },
        }),
  };
}
