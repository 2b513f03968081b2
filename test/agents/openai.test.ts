/**
 * The OpenAI-compatible adapter beyond the contract: parallel tool calls, the history
 * conversion the real API insists on, cached tokens, keys, HTML answers, tool calls
 * written as text, a context-length refusal and the context window from `/models`; on
 * the real SDK against test/fakes/openai.ts.
 */
import { afterEach, describe, expect, it } from "vitest";
import { promptTooLong } from "../../src/agents/context-budget.js";
import {
  createOpenAiCompatibleProvider,
  UNLISTED_CONTEXT_WINDOW,
} from "../../src/agents/providers/openai-compatible.js";
import type {
  MediaRef,
  ModelRequest,
  RequestContentBlock,
  RequestMessage,
  ToolSpec,
} from "../../src/ports/index.js";
import { type FakeOpenAi, type FakeOpenAiOptions, startFakeOpenAi } from "../fakes/openai.js";
import { failureOf, modelErrorOf } from "../helpers/failure.js";

const READ: ToolSpec = {
  name: "read",
  description: "Reads a file.",
  input_schema: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
};
const ASKED: RequestMessage = {
  role: "user",
  content: [{ type: "text", text: "Compare a and b" }],
};

let fake: FakeOpenAi | undefined;

afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

async function fakeApi(options: FakeOpenAiOptions = {}): Promise<FakeOpenAi> {
  fake = await startFakeOpenAi(options);
  return fake;
}

function request(overrides: Partial<ModelRequest> = {}): ModelRequest {
  return {
    model: "fake-model",
    system: "You are Pickle.",
    messages: [ASKED],
    tools: [READ],
    maxTokens: 512,
    ...overrides,
  };
}

describe("the OpenAI-compatible adapter", () => {
  it("takes two parallel tool calls whose arguments stream interleaved, and sends their results as tool messages the API accepts", async () => {
    const api = await fakeApi();
    api.script(
      {
        text: "Reading both.",
        toolCalls: [
          { id: "call_a", name: "read", input: { path: "a.md" } },
          { id: "call_b", name: "read", input: { path: "b.md", note: "ünïcode ✓" } },
        ],
      },
      { text: "They differ." },
    );
    const provider = createOpenAiCompatibleProvider({ baseURL: api.url, maxRetries: 0 });

    const first = await provider.complete(request());
    expect(first.stopReason).toBe("tool_use");
    expect(first.content).toEqual([
      { type: "text", text: "Reading both." },
      { type: "tool_use", id: "call_a", name: "read", input: { path: "a.md" } },
      { type: "tool_use", id: "call_b", name: "read", input: { path: "b.md", note: "ünïcode ✓" } },
    ]);
    const second = await provider.complete(
      request({
        messages: [
          ASKED,
          { role: "assistant", content: first.content },
          {
            role: "user",
            content: [
              { type: "tool_result", tool_use_id: "call_a", content: "alpha" },
              {
                type: "tool_result",
                tool_use_id: "call_b",
                content: "no such file",
                is_error: true,
              },
              { type: "text", text: "and be brief" },
            ],
          },
        ],
        currentTime: "Fri 09:00",
      }),
    );

    expect(second.content).toEqual([{ type: "text", text: "They differ." }]);
    expect(api.refused).toEqual([]);
    expect(api.requests[1]?.body.messages.slice(1)).toEqual([
      { role: "user", content: [{ type: "text", text: "Compare a and b" }] },
      {
        role: "assistant",
        content: "Reading both.",
        tool_calls: [
          {
            id: "call_a",
            type: "function",
            function: { name: "read", arguments: '{"path":"a.md"}' },
          },
          {
            id: "call_b",
            type: "function",
            function: { name: "read", arguments: '{"path":"b.md","note":"ünïcode ✓"}' },
          },
        ],
      },
      { role: "tool", tool_call_id: "call_a", content: "alpha" },
      { role: "tool", tool_call_id: "call_b", content: "Error: no such file" },
      {
        role: "user",
        content: [
          { type: "text", text: "and be brief" },
          { type: "text", text: "(current time: Fri 09:00)" },
        ],
      },
    ]);
  });

  it("tells apart parallel calls that all come at index 0, each whole (as some Ollama versions send them)", async () => {
    const api = await fakeApi();
    api.script({
      text: "",
      wholeCallsAtIndexZero: true,
      finishReason: "stop",
      toolCalls: [
        { id: "call_1", name: "read", input: { path: "a.md" } },
        { id: "call_2", name: "read", input: { path: "b.md" } },
      ],
    });

    const reply = await createOpenAiCompatibleProvider({ baseURL: api.url }).complete(request());

    expect(reply).toMatchObject({
      stopReason: "tool_use",
      content: [
        { type: "tool_use", id: "call_1", name: "read", input: { path: "a.md" } },
        { type: "tool_use", id: "call_2", name: "read", input: { path: "b.md" } },
      ],
    });
  });

  it("sends the tools as functions, max_tokens to an endpoint that is not OpenAI's, and nothing of Anthropic's", async () => {
    const api = await fakeApi();
    await createOpenAiCompatibleProvider({ baseURL: api.url, maxRetries: 0 }).complete(request());

    const body = api.requests[0]?.body;
    expect(body?.tools).toEqual([
      {
        type: "function",
        function: { name: "read", description: "Reads a file.", parameters: READ.input_schema },
      },
    ]);
    expect(body?.max_tokens).toBe(512);
    expect(body?.messages[0]).toEqual({ role: "system", content: "You are Pickle." });
    expect(JSON.stringify(body)).not.toContain("cache_control");
  });

  it("reports cached prompt tokens as cache reads, apart from the rest of the input", async () => {
    const api = await fakeApi();
    api.script({
      text: "Cached.",
      usage: { prompt_tokens: 1000, completion_tokens: 9, cached_tokens: 800 },
    });

    const reply = await createOpenAiCompatibleProvider({ baseURL: api.url }).complete(request());

    expect(reply.usage).toEqual({ input: 200, output: 9, cacheRead: 800, cacheWrite: 0 });
  });

  it("reads a reply that ends with `stop` while holding tool calls (as Ollama ends one) as tool use, and `length` as max_tokens", async () => {
    const api = await fakeApi();
    api.script(
      { text: "", toolCalls: [{ name: "read", input: { path: "a.md" } }], finishReason: "stop" },
      { text: "cut", finishReason: "length" },
    );
    const provider = createOpenAiCompatibleProvider({ baseURL: api.url });

    expect((await provider.complete(request())).stopReason).toBe("tool_use");
    expect((await provider.complete(request())).stopReason).toBe("max_tokens");
  });

  it("sends no Authorization header to a local server when no key is set", async () => {
    const api = await fakeApi();

    await createOpenAiCompatibleProvider({ baseURL: api.url }).complete(request());

    expect(api.requests[0]?.headers.authorization).toBeUndefined();
  });

  it("fails each call to a hosted endpoint without a key, naming llm.api_key, before any request", async () => {
    const provider = createOpenAiCompatibleProvider({ baseURL: "https://openrouter.ai/api/v1" });

    const error = await modelErrorOf(provider.complete(request()));

    expect(error.retryable).toBe(false);
    expect(error.message).toContain(
      "No API key for the model endpoint https://openrouter.ai/api/v1",
    );
    expect(error.message).toContain("llm.api_key in picklebot.yaml");
  });

  it("refuses a web page where the API should answer (a base URL without /v1), naming llm.base_url", async () => {
    const api = await fakeApi();
    const provider = createOpenAiCompatibleProvider({ baseURL: api.root, maxRetries: 0 });

    const error = await modelErrorOf(provider.complete(request()));

    expect(error.retryable).toBe(false);
    expect(error.message).toContain("answered with a web page");
    expect(error.message).toContain("check llm.base_url in picklebot.yaml (it usually ends in /v1");
  });

  it("reports a proxy's HTML error page as the status it came with, without the page", async () => {
    const api = await fakeApi();
    api.script({ html: { status: 502 } });

    const error = await modelErrorOf(
      createOpenAiCompatibleProvider({ baseURL: api.url, maxRetries: 0 }).complete(request()),
    );

    expect(error.status).toBe(502);
    expect(error.retryable).toBe(true);
    expect(error.message).toContain("an HTML page instead of an API answer");
    expect(error.message).not.toContain("<html");
  });

  it("reports a prompt over the context window as not retryable, with the counts the context budget reads and the key to set", async () => {
    const api = await fakeApi({ promptTokenLimit: 300 });
    const long: RequestMessage = {
      role: "user",
      content: [{ type: "text", text: "pickle ".repeat(400) }],
    };

    const error = await modelErrorOf(
      createOpenAiCompatibleProvider({ baseURL: api.url, maxRetries: 0 }).complete(
        request({ messages: [long] }),
      ),
    );

    expect(error.retryable).toBe(false);
    expect(error.status).toBe(400);
    expect(error.message).toContain("maximum context length is 300 tokens");
    expect(error.message).toContain("set llm.context_window in picklebot.yaml");
    const counts = promptTooLong(error.message);
    expect(counts?.limit).toBe(300);
    expect(counts?.tokens).toBeGreaterThan(300);
  });

  it("does not sleep through a long Retry-After: a 429 asking for an hour is a retryable error at once", async () => {
    const api = await fakeApi();
    api.script(
      { error: { status: 429, message: "Rate limit reached", retryAfterS: 3600 } },
      { text: "too late" },
    );

    const error = await modelErrorOf(
      createOpenAiCompatibleProvider({ baseURL: api.url, apiKey: "", maxRetries: 2 }).complete(
        request(),
      ),
    );

    expect(error).toMatchObject({ status: 429, retryable: true, retryAfterS: 3600 });
    expect(api.requests).toHaveLength(1);
  });

  it("reports a refused key as a credential refusal naming llm.api_key", async () => {
    const api = await fakeApi({ apiKey: "sk-right" });

    const error = await modelErrorOf(
      createOpenAiCompatibleProvider({
        baseURL: api.url,
        apiKey: "sk-wrong",
        maxRetries: 0,
      }).complete(request()),
    );

    expect(error.credentialRefused).toBe(true);
    expect(error.message).toContain("The model endpoint refused the API key (status 401");
    expect(error.message).toContain("check llm.api_key in picklebot.yaml");
    expect(error.message).not.toContain("sk-wrong");
  });

  it("takes the context window from the endpoint's model list, else the stated default", async () => {
    const api = await fakeApi({
      models: [{ id: "listed", contextLength: 16_384 }, { id: "bare" }],
    });
    const provider = createOpenAiCompatibleProvider({ baseURL: api.url });

    expect(await provider.contextWindow?.("listed")).toBe(16_384);
    expect(await provider.contextWindow?.("bare")).toBe(UNLISTED_CONTEXT_WINDOW);
    expect(await provider.contextWindow?.("listed")).toBe(16_384);
    expect(api.modelListings).toBe(2);
  });
});

describe("photos and PDFs people sent", () => {
  const PNG = Buffer.from("89504e470d0a1a0a0000000d4948445200000001", "hex");
  const stored = new Map([["a".repeat(64), PNG]]);
  const readMedia = async (ref: MediaRef) => stored.get(ref.sha256) ?? new Uint8Array();
  const photo: RequestContentBlock = {
    type: "image",
    mediaType: "image/png",
    media: { sha256: "a".repeat(64), bytes: PNG.length, name: "photo.png" },
    width: 800,
    height: 600,
  };
  const report: RequestContentBlock = {
    type: "document",
    mediaType: "application/pdf",
    media: { sha256: "b".repeat(64), bytes: 10, name: "report.pdf" },
    pages: 3,
  };
  const withFiles: RequestMessage[] = [
    { role: "user", content: [photo, report, { type: "text", text: "what is this?" }] },
    { role: "assistant", content: [{ type: "tool_use", id: "call_1", name: "read", input: {} }] },
    {
      role: "user",
      content: [
        { type: "tool_result", tool_use_id: "call_1", content: "a file" },
        photo,
        { type: "text", text: "and again" },
      ],
    },
  ];

  /** The content parts of the user messages of the fake's first request. */
  function userParts(api: FakeOpenAi): Array<Record<string, unknown>> {
    return (api.requests[0]?.body.messages ?? [])
      .filter((message) => message.role === "user")
      .flatMap((message) => (Array.isArray(message.content) ? message.content : []));
  }

  it("sends an image as a data URL in the user's message, after the tool results of the same message, and a PDF as its description", async () => {
    const api = await fakeApi();
    const provider = createOpenAiCompatibleProvider({ baseURL: api.url, readMedia });

    await provider.complete(request({ messages: withFiles }));

    expect(api.refused).toEqual([]);
    const url = `data:image/png;base64,${PNG.toString("base64")}`;
    expect(userParts(api)).toEqual([
      { type: "image_url", image_url: { url } },
      {
        type: "text",
        text: "[PDF report.pdf, application/pdf, 10 B, 3 pages] (not shown to this model)",
      },
      { type: "text", text: "what is this?" },
      { type: "image_url", image_url: { url } },
      { type: "text", text: "and again" },
    ]);
    expect(api.requests[0]?.body.messages.map((message) => message.role)).toEqual([
      "system",
      "user",
      "assistant",
      "tool",
      "user",
    ]);
  });

  it("describes each image as text to a model with vision: false, without reading its file", async () => {
    const api = await fakeApi();
    let reads = 0;
    const provider = createOpenAiCompatibleProvider({
      baseURL: api.url,
      vision: false,
      readMedia: async (ref) => {
        reads += 1;
        return readMedia(ref);
      },
    });

    await provider.complete(request({ messages: withFiles }));

    expect(userParts(api)[0]).toEqual({
      type: "text",
      text: "[image photo.png, image/png, 20 B, 800×600 px] (not shown to this model)",
    });
    expect(JSON.stringify(api.requests[0]?.body)).not.toContain("image_url");
    expect(reads).toBe(0);
  });
});

describe("a search another provider's API ran", () => {
  it("is read as text in the assistant's message, where it happened", async () => {
    const api = await fakeApi();
    api.script({ text: "Noted." });
    const provider = createOpenAiCompatibleProvider({ baseURL: api.url, maxRetries: 0 });
    const searched: RequestMessage = {
      role: "assistant",
      content: [
        { type: "text", text: "Let me look. " },
        {
          type: "server_tool_use",
          id: "srvtoolu_1",
          name: "web_search",
          input: { query: "pool hours" },
          provider: "anthropic",
          raw: { type: "server_tool_use" },
        },
        {
          type: "server_tool_result",
          tool_use_id: "srvtoolu_1",
          content: "Pool: open 7-21",
          provider: "anthropic",
          raw: { type: "web_search_tool_result" },
        },
        { type: "text", text: " It opens at 7." },
      ],
    };

    await provider.complete(request({ messages: [ASKED, searched, ASKED] }));

    const sent = JSON.stringify(api.requests.at(-1));
    expect(sent).toContain(
      'Let me look. (web_search {\\"query\\":\\"pool hours\\"})Pool: open 7-21 It opens at 7.',
    );
    expect(sent).not.toContain("srvtoolu_1");
  });
});

describe("tool calls a local model writes as text", () => {
  it("rethrows an error the listener throws on held-back text, unchanged", async () => {
    const api = await fakeApi();
    api.script({ text: '{"not": "a call"}' });
    const broken = new Error("frontend exploded");

    const error = await failureOf(
      createOpenAiCompatibleProvider({ baseURL: api.url }).complete(
        request({
          onText: () => {
            throw broken;
          },
        }),
      ),
    );

    expect(error).toBe(broken);
  });

  it("repairs <tool_call> tags naming a known tool into tool calls, and does not stream the tags", async () => {
    const api = await fakeApi();
    api.script({
      text: 'Let me check.<tool_call>{"name": "read", "arguments": {"path": "a.md"}}</tool_call>',
      chunks: 7,
    });
    const deltas: string[] = [];

    const reply = await createOpenAiCompatibleProvider({ baseURL: api.url }).complete(
      request({ onText: (delta) => deltas.push(delta) }),
    );

    expect(reply.stopReason).toBe("tool_use");
    expect(reply.content).toEqual([
      { type: "text", text: "Let me check." },
      { type: "tool_use", id: "call_text_0", name: "read", input: { path: "a.md" } },
    ]);
    expect(deltas.join("")).toBe("Let me check.");
  });

  it("repairs a reply that is only a JSON call (fenced, with `parameters`)", async () => {
    const api = await fakeApi();
    api.script({ text: '```json\n{"name": "read", "parameters": {"path": "b.md"}}\n```' });

    const reply = await createOpenAiCompatibleProvider({ baseURL: api.url }).complete(request());

    expect(reply.content).toEqual([
      { type: "tool_use", id: "call_text_0", name: "read", input: { path: "b.md" } },
    ]);
  });

  it("leaves JSON naming no known tool as the text it is, streamed at the end", async () => {
    const api = await fakeApi();
    const text = '{"name": "rm", "arguments": {"path": "/"}}';
    api.script({ text });
    const deltas: string[] = [];

    const reply = await createOpenAiCompatibleProvider({ baseURL: api.url }).complete(
      request({ onText: (delta) => deltas.push(delta) }),
    );

    expect(reply).toMatchObject({ stopReason: "end_turn", content: [{ type: "text", text }] });
    expect(deltas.join("")).toBe(text);
  });
});
