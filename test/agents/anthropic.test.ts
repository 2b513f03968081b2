/**
 * What the Anthropic adapter does beyond the ModelProvider contract (which
 * anthropic.contract.test.ts runs): the request it builds, its prompt-cache breakpoints,
 * its own wording of failures, token counts.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  type AnthropicProviderOptions,
  createAnthropicProvider,
  MAX_PAUSE_CONTINUATIONS,
  MISSING_API_KEY_MESSAGE,
} from "../../src/agents/providers/anthropic.js";
import { CancelledError, ModelError } from "../../src/base/errors.js";
import type { ModelRequest, RequestMessage, ToolSpec } from "../../src/ports/index.js";
import {
  type FakeAnthropic,
  type FakeMessagesBody,
  promptTokens,
  requestAt,
  startFakeAnthropic,
} from "../fakes/anthropic.js";
import { failureOf, modelErrorOf } from "../helpers/failure.js";

const API_KEY = "sk-ant-test-secret-key";

const READ_TOOL: ToolSpec = {
  name: "read",
  description: "Reads a file of the workspace.",
  input_schema: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
};
const WRITE_TOOL: ToolSpec = {
  name: "write",
  description: "Writes a file of the workspace.",
  input_schema: {
    type: "object",
    properties: { path: { type: "string" }, content: { type: "string" } },
  },
};

let fake: FakeAnthropic;

beforeEach(async () => {
  fake = await startFakeAnthropic();
});

afterEach(async () => {
  await fake.close();
});

function provider(options: AnthropicProviderOptions = {}) {
  return createAnthropicProvider({ apiKey: API_KEY, baseURL: fake.url, ...options });
}

function request(overrides: Partial<ModelRequest> = {}): ModelRequest {
  return {
    model: "claude-test",
    system: "You are Pickle.",
    messages: [{ role: "user", content: [{ type: "text", text: "Hello" }] }],
    tools: [],
    maxTokens: 1024,
    ...overrides,
  };
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object") {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}

describe("Anthropic provider: replies", () => {
  it("sends the key, model, max_tokens and tools the caller asked for", async () => {
    await provider().complete(request({ tools: [READ_TOOL], maxTokens: 321 }));

    const [sent] = fake.requests;
    expect(sent?.headers.authorization ?? sent?.headers["x-api-key"]).toContain(API_KEY);
    expect(sent?.body).toMatchObject({ model: "claude-test", max_tokens: 321, stream: true });
    expect(sent?.body.tools?.map((tool) => tool.name)).toEqual(["read"]);
  });
});

describe("Anthropic provider: prompt caching", () => {
  /** Past the 1 024-token minimum a prefix needs to be cached (Sonnet/Opus). */
  const LONG_SYSTEM = `You are Pickle. ${"Answer briefly and kindly. ".repeat(200)}`;
  const FIVE_MIN = { type: "ephemeral" };
  const ONE_HOUR = { type: "ephemeral", ttl: "1h" };

  /** The content blocks of every request block carrying `cache_control`, in prompt order. */
  function breakpointsOf(body: FakeMessagesBody): Array<Record<string, unknown>> {
    const system = Array.isArray(body.system) ? body.system : [];
    const blocks = body.messages.flatMap((message) =>
      Array.isArray(message.content) ? message.content : [],
    );
    return [...(body.tools ?? []), ...system, ...blocks].filter((block) => block.cache_control);
  }

  it("marks the last tool and the system prompt (1 h), the previous call's last message and the last block (5 min)", async () => {
    const messages: RequestMessage[] = deepFreeze([
      { role: "user", content: [{ type: "text", text: "What is in notes.md?" }] },
      {
        role: "assistant",
        content: [{ type: "tool_use", id: "toolu_1", name: "read", input: { path: "notes.md" } }],
      },
      {
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: "toolu_1", content: "buy pickles" },
          { type: "text", text: "Summarise it." },
        ],
      },
    ]);
    const before = structuredClone(messages);

    const reply = await provider().complete(
      request({ system: LONG_SYSTEM, messages, tools: [READ_TOOL, WRITE_TOOL] }),
    );

    const body = requestAt(fake, 0).body;
    expect(body.system).toEqual([{ type: "text", text: LONG_SYSTEM, cache_control: ONE_HOUR }]);
    expect(body.tools?.[0]).not.toHaveProperty("cache_control");
    expect(body.tools?.[1]).toMatchObject({ name: "write", cache_control: ONE_HOUR });
    expect(body.messages[0]?.content).toEqual([
      { type: "text", text: "What is in notes.md?", cache_control: FIVE_MIN },
    ]);
    expect(JSON.stringify(body.messages[1])).not.toContain("cache_control");
    const lastContent = body.messages.at(-1)?.content as Array<Record<string, unknown>>;
    expect(lastContent[0]).not.toHaveProperty("cache_control");
    expect(lastContent[1]).toEqual({
      type: "text",
      text: "Summarise it.",
      cache_control: FIVE_MIN,
    });
    expect(breakpointsOf(body)).toHaveLength(4);
    expect(messages).toEqual(before);
    expect(reply.usage.cacheWrite).toBe(promptTokens(body));
  });

  it("keeps to two message breakpoints however long the conversation, and to 5-minute ones with prefixCacheTtl 5m", async () => {
    const messages: RequestMessage[] = Array.from({ length: 9 }, (_, index) => ({
      role: index % 2 === 0 ? "user" : "assistant",
      content: [{ type: "text", text: `message ${index}` }],
    }));
    await provider({ prefixCacheTtl: "5m" }).complete(
      request({ system: LONG_SYSTEM, messages, tools: [READ_TOOL], currentTime: "now" }),
    );
    const body = requestAt(fake, 0).body;
    const marked = breakpointsOf(body);
    expect(marked.map((block) => block.text ?? block.name)).toEqual([
      "read",
      LONG_SYSTEM,
      "message 6",
      "message 8",
    ]);
    expect(
      marked.every((block) => JSON.stringify(block.cache_control) === '{"type":"ephemeral"}'),
    ).toBe(true);
  });

  it("sends the current time after the breakpoint, so the next call reads the cached prefix", async () => {
    const first: RequestMessage[] = [{ role: "user", content: [{ type: "text", text: "Hi" }] }];
    const opening = await provider().complete(
      request({ system: LONG_SYSTEM, messages: first, currentTime: "2025-06-01T08:00:00+02:00" }),
    );
    const lastContent = requestAt(fake, 0).body.messages.at(-1)?.content;
    expect(lastContent).toEqual([
      { type: "text", text: "Hi", cache_control: FIVE_MIN },
      { type: "text", text: "(current time: 2025-06-01T08:00:00+02:00)" },
    ]);

    const second: RequestMessage[] = [
      ...first,
      { role: "assistant", content: [{ type: "text", text: "Hello!" }] },
      { role: "user", content: [{ type: "text", text: "How are you?" }] },
    ];
    const next = await provider().complete(
      request({ system: LONG_SYSTEM, messages: second, currentTime: "2025-06-01T08:03:10+02:00" }),
    );

    expect(opening.usage.cacheRead).toBe(0);
    expect(opening.usage.cacheWrite).toBeGreaterThan(1024);
    expect(next.usage.cacheRead).toBe(opening.usage.cacheWrite);
  });
});

describe("Anthropic provider: failures", () => {
  it("waits out a 429 and succeeds on the SDK's retry", async () => {
    fake.script({ error: { status: 429, retryAfterS: 0 } }, { text: "Worth the wait." });

    const reply = await provider({ maxRetries: 2 }).complete(request());

    expect(reply.content).toEqual([{ type: "text", text: "Worth the wait." }]);
    expect(fake.requests).toHaveLength(2);
  });

  it("does not sleep through a long Retry-After: a 429 asking for an hour is a retryable error at once", async () => {
    fake.script({ error: { status: 429, retryAfterS: 3600 } }, { text: "too late" });

    const error = await modelErrorOf(provider({ maxRetries: 2 }).complete(request()));

    expect(error).toMatchObject({ status: 429, retryable: true, retryAfterS: 3600 });
    expect(fake.requests).toHaveLength(1);
  });

  it("reports a 401 with a hint and never shows the API key", async () => {
    fake.script({ error: { status: 401, message: `invalid x-api-key ${API_KEY}` } });

    const error = await modelErrorOf(provider().complete(request()));

    expect(error.retryable).toBe(false);
    expect(error.message).toContain("401");
    expect(error.message).toContain("ANTHROPIC_API_KEY");
    expect(error.message).not.toContain(API_KEY);
  });

  it("reports an unreachable endpoint as retryable", async () => {
    const gone = await startFakeAnthropic();
    await gone.close();

    const error = await modelErrorOf(
      createAnthropicProvider({ apiKey: API_KEY, baseURL: gone.url, maxRetries: 0 }).complete(
        request(),
      ),
    );

    expect(error.retryable).toBe(true);
    expect(error.message).toContain("Could not reach the Anthropic API");
    expect(error.message).toContain("ECONNREFUSED");
  });

  it("fails without a request when no API key is configured", async () => {
    const error = await modelErrorOf(
      createAnthropicProvider({ baseURL: fake.url }).complete(request()),
    );

    expect(error.message).toBe(MISSING_API_KEY_MESSAGE);
    expect(error.message).toBe(
      "No Anthropic API key: set ANTHROPIC_API_KEY in the environment or llm.api_key in picklebot.yaml.",
    );
    expect(error.retryable).toBe(false);
    expect(fake.requests).toHaveLength(0);
  });
});

describe("Anthropic provider: token counts", () => {
  it("counts a request's input tokens with count_tokens, as the API would bill them", async () => {
    const counted = await provider().countTokens?.(request({ tools: [READ_TOOL] }));

    expect(fake.counts).toHaveLength(1);
    expect(fake.counts[0]?.body).toMatchObject({ model: "claude-test", tools: [{ name: "read" }] });
    expect(counted).toBe(promptTokens(fake.counts[0]?.body as FakeMessagesBody));
    expect(fake.requests).toHaveLength(0);
  });

  it("reports an endpoint without count_tokens as a ModelError, not retryable", async () => {
    await fake.close();
    fake = await startFakeAnthropic({ countTokens: false });

    const error = await modelErrorOf(provider().countTokens?.(request()) ?? Promise.resolve());

    expect(error.retryable).toBe(false);
    expect(error.message).toContain("404");
  });
});

describe("Anthropic provider: cancellation", () => {
  it("rejects with a CancelledError when the signal aborts a call that gets no answer", async () => {
    const controller = new AbortController();
    fake.script(() => {
      controller.abort();
      return { hang: true };
    });

    const error = await failureOf(provider().complete(request({ signal: controller.signal })));

    expect(error).toBeInstanceOf(CancelledError);
    expect(error.message).toBe("The model call was cancelled.");
    expect(error).not.toBeInstanceOf(ModelError);
  });
});

describe("web search, the API's server tool", () => {
  const searchReply = {
    text: "It opens at 7.",
    webSearch: {
      query: "pool hours",
      results: [{ title: "Pool", url: "https://pool.example/", page_age: "2 days ago" }],
    },
  };

  it("is offered after the tools, with the breakpoint, and its blocks and searches come back", async () => {
    fake.script(searchReply);
    const serverTools = [{ kind: "web_search" as const, maxUses: 4 }];
    const reply = await provider().complete(request({ tools: [READ_TOOL], serverTools }));
    expect(requestAt(fake, 0).body.tools).toEqual([
      expect.objectContaining({ name: "read" }),
      {
        type: "web_search_20250305",
        name: "web_search",
        max_uses: 4,
        cache_control: { type: "ephemeral", ttl: "1h" },
      },
    ]);
    expect(reply.usage.webSearches).toBe(1);
    const [use, result, text] = reply.content;
    expect(use).toMatchObject({
      type: "server_tool_use",
      name: "web_search",
      input: { query: "pool hours" },
      provider: "anthropic",
    });
    expect(result).toMatchObject({
      type: "server_tool_result",
      tool_use_id: (use as { id: string }).id,
      content: "Pool https://pool.example/",
      provider: "anthropic",
    });
    expect(text).toEqual({ type: "text", text: "It opens at 7." });
  });

  it("continues a turn the API paused after a search (pause_turn), sending its content back, into one reply", async () => {
    fake.script({ ...searchReply, text: "", stopReason: "pause_turn" }, { text: "It opens at 7." });
    const serverTools = [{ kind: "web_search" as const, maxUses: 4 }];
    let streamed = "";

    const reply = await provider().complete(
      request({ serverTools, onText: (delta) => (streamed += delta) }),
    );

    expect(fake.refused).toEqual([]);
    expect(fake.requests).toHaveLength(2);
    const continued = requestAt(fake, 1).body.messages;
    expect(continued).toHaveLength(2);
    const sentBack = continued[1];
    expect(sentBack?.role).toBe("assistant");
    expect(
      ((sentBack?.content ?? []) as Array<{ type: string }>).map((block) => block.type),
    ).toEqual(["server_tool_use", "web_search_tool_result"]);
    expect(reply.stopReason).toBe("end_turn");
    expect(reply.content.map((block) => block.type)).toEqual([
      "server_tool_use",
      "server_tool_result",
      "text",
    ]);
    expect(reply.usage.webSearches).toBe(1);
    expect(reply.usage.input).toBe(
      (fake.requests[0]?.usage?.input_tokens ?? 0) + (fake.requests[1]?.usage?.input_tokens ?? 0),
    );
    expect(streamed).toBe("It opens at 7.");
  });

  it("stops continuing a paused turn after MAX_PAUSE_CONTINUATIONS, and returns it as it stands", async () => {
    const paused = { ...searchReply, text: "", stopReason: "pause_turn" };
    fake.script(...Array.from({ length: MAX_PAUSE_CONTINUATIONS + 2 }, () => paused));
    const serverTools = [{ kind: "web_search" as const, maxUses: 4 }];

    const reply = await provider().complete(request({ serverTools }));

    expect(fake.refused).toEqual([]);
    expect(fake.requests).toHaveLength(MAX_PAUSE_CONTINUATIONS + 1);
    expect(reply.stopReason).toBe("pause_turn");
    expect(reply.usage.webSearches).toBe(MAX_PAUSE_CONTINUATIONS + 1);
  });

  it("sends its blocks back as they came; another provider's as text", async () => {
    fake.script(searchReply);
    const serverTools = [{ kind: "web_search" as const, maxUses: 4 }];
    const asked = request({ serverTools });
    const first = await provider().complete(asked);
    const followUp: RequestMessage[] = [
      ...asked.messages,
      { role: "assistant", content: first.content },
      { role: "user", content: [{ type: "text", text: "thanks" }] },
    ];
    await provider().complete(request({ serverTools, messages: followUp }));
    expect(fake.refused).toEqual([]);
    const sentBack = requestAt(fake, 1).body.messages[1]?.content as Array<Record<string, unknown>>;
    expect(sentBack.slice(0, 2)).toEqual(
      first.content.slice(0, 2).map((block) => ("raw" in block ? block.raw : null)),
    );

    const foreign = first.content.map((block) =>
      "raw" in block ? { ...block, provider: "another" } : block,
    );
    const moved: RequestMessage[] = [
      followUp[0] as RequestMessage,
      { role: "assistant", content: foreign },
      followUp[2] as RequestMessage,
    ];
    await provider().complete(request({ messages: moved }));
    const asText = requestAt(fake, 2).body.messages[1]?.content as Array<Record<string, unknown>>;
    expect(asText.map((block) => block.type)).toEqual(["text", "text", "text"]);
    expect(asText[1]?.text).toBe("Pool https://pool.example/");
  });
});

describe("Anthropic provider: a model with vision: false", () => {
  it("gets each image and PDF as the line of text that describes it, without a file read", async () => {
    const media = { sha256: "c".repeat(64), bytes: 10, name: "photo.jpg" };
    const message: RequestMessage = {
      role: "user",
      content: [
        { type: "image", mediaType: "image/jpeg", media, width: 800, height: 600 },
        {
          type: "document",
          mediaType: "application/pdf",
          media: { ...media, name: "a.pdf" },
          pages: 2,
        },
        { type: "text", text: "what are these?" },
      ],
    };
    let reads = 0;
    const readMedia = async () => {
      reads += 1;
      return new Uint8Array();
    };

    await provider({ vision: false, readMedia }).complete(request({ messages: [message] }));

    const sent = requestAt(fake, 0).body.messages[0]?.content as Array<Record<string, unknown>>;
    expect(sent.slice(0, 3).map((block) => block.text)).toEqual([
      "[image photo.jpg, image/jpeg, 10 B, 800×600 px] (not shown to this model)",
      "[PDF a.pdf, application/pdf, 10 B, 2 pages] (not shown to this model)",
      "what are these?",
    ]);
    expect(reads).toBe(0);
  });
});
