/**
 * The Anthropic adapter on the fake Messages API, as the ModelProvider contract
 * (test/agents/provider.contract.ts) drives it: the contract's neutral answers become the
 * fake's script, with the API's status codes and error bodies.
 */
import { createAnthropicProvider } from "../../src/agents/providers/anthropic.js";
import type { TokenUsage, ToolResultBlock } from "../../src/ports/index.js";
import type { Failure, ProviderFixture, ScriptedAnswer } from "../agents/provider.contract.js";
import { type FakeReply, type FakeUsage, requestAt, startFakeAnthropic } from "./anthropic.js";

const API_KEY = "sk-ant-contract-secret-key";

/** The status the Messages API answers each failure with. */
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

/** Starts a fake Messages API and makes Anthropic providers on it. */
export async function anthropicProviderFixture(): Promise<ProviderFixture> {
  const fake = await startFakeAnthropic({ apiKey: API_KEY });
  return {
    apiKey: API_KEY,
    provider: ({ timeoutMs } = {}) =>
      createAnthropicProvider({
        apiKey: API_KEY,
        baseURL: fake.url,
        maxRetries: 0,
        ...(timeoutMs === undefined ? {} : { timeoutMs }),
      }),
    async unreachable() {
      const gone = await startFakeAnthropic();
      await gone.close();
      return createAnthropicProvider({ apiKey: API_KEY, baseURL: gone.url, maxRetries: 0 });
    },
    script: (...answers) => fake.script(...answers.map(toFakeReply)),
    toolResultsSent(index) {
      const blocks = requestAt(fake, index).body.messages.flatMap((message) =>
        Array.isArray(message.content) ? message.content : [],
      );
      return blocks
        .filter((block) => block.type === "tool_result")
        .map(({ cache_control: _, ...block }) => block as unknown as ToolResultBlock);
    },
    requestCount: () => fake.requests.length,
    close: () => fake.close(),
  };
}

function toFakeReply(answer: ScriptedAnswer): FakeReply {
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
  if ("toolCall" in answer) return { text: answer.text, toolUses: [answer.toolCall] };
  if ("overloadedAfterChunks" in answer) {
    return {
      streamError: { type: "overloaded_error" },
      afterChunks: answer.overloadedAfterChunks,
      text: answer.text,
    };
  }
  if ("text" in answer && !("cutAfterChunks" in answer)) {
    const { text, chunks, usage } = answer;
    return {
      text,
      ...(chunks === undefined ? {} : { chunks }),
      ...(usage === undefined ? {} : { usage: toFakeUsage(usage) }),
    };
  }
  return answer;
}

function toFakeUsage({ input, output, cacheRead, cacheWrite }: TokenUsage): Partial<FakeUsage> {
  return {
    input_tokens: input,
    output_tokens: output,
    cache_read_input_tokens: cacheRead,
    cache_creation_input_tokens: cacheWrite,
  };
}
