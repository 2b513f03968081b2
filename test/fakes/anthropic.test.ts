import Anthropic from "@anthropic-ai/sdk";
import { afterEach, describe, expect, it } from "vitest";
import {
  FAKE_MODEL_IDS,
  type FakeAnthropic,
  lastUserText,
  splitInto,
  startFakeAnthropic,
} from "./anthropic.js";

let fake: FakeAnthropic | undefined;

afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

function clientFor(server: FakeAnthropic): Anthropic {
  return new Anthropic({ apiKey: "sk-ant-fake", baseURL: server.url, maxRetries: 0 });
}

function ask(client: Anthropic, text: string) {
  return client.messages.create({
    model: "claude-test",
    max_tokens: 100,
    messages: [{ role: "user", content: text }],
  });
}

describe("fake Anthropic server", () => {
  it("answers a non-streaming request with a whole JSON message", async () => {
    fake = await startFakeAnthropic();
    fake.script({ text: "Checking.", toolUses: [{ name: "read", input: { path: "a.md" } }] });

    const message = await ask(clientFor(fake), "read a.md");

    expect(message.stop_reason).toBe("tool_use");
    expect(message.content).toEqual([
      { type: "text", text: "Checking." },
      { type: "tool_use", id: "toolu_fake_1", name: "read", input: { path: "a.md" } },
    ]);
    expect(message.usage.output_tokens).toBeGreaterThan(0);
  });

  it("consumes the script in order, then falls back to the default reply", async () => {
    fake = await startFakeAnthropic();
    fake.script({ text: "first" }, { text: "second", delayMs: 5 });
    const client = clientFor(fake);

    const texts: string[] = [];
    for (let i = 0; i < 3; i++) {
      const message = await ask(client, `question ${i}`);
      texts.push(
        message.content.map((block) => (block.type === "text" ? block.text : "")).join(""),
      );
    }

    expect(texts).toEqual(["first", "second", "ok"]);
    expect(fake.unusedReplies).toBe(0);
    expect(fake.requests.map((request) => lastUserText(request))).toEqual([
      "question 0",
      "question 1",
      "question 2",
    ]);
    expect(fake.requests[0]?.headers["content-type"]).toContain("application/json");
  });

  it("computes dynamic replies from the request, e.g. an echo as the default", async () => {
    fake = await startFakeAnthropic({
      defaultReply: (request) => ({ text: `echo: ${lastUserText(request)}` }),
    });

    const message = await ask(clientFor(fake), "pickles");

    expect(message.content).toEqual([{ type: "text", text: "echo: pickles" }]);
  });

  it("refuses a key it was not given with the API's 401 authentication_error", async () => {
    fake = await startFakeAnthropic({ apiKey: "sk-ant-good" });

    const refused = ask(clientFor(fake), "hello");

    await expect(refused).rejects.toBeInstanceOf(Anthropic.AuthenticationError);
    await expect(refused).rejects.toMatchObject({
      status: 401,
      error: {
        type: "error",
        error: { type: "authentication_error", message: "invalid x-api-key" },
      },
    });
  });

  it("lists its models for the accepted key (GET /v1/models), and answers one by id or with the API's 404, as the SDK reads them", async () => {
    fake = await startFakeAnthropic({ apiKey: "sk-ant-fake" });
    const client = clientFor(fake);

    const page = await client.models.list();
    const known = await client.models.retrieve("claude-haiku-4-5");
    const unknown = await client.models.retrieve("claude-9").catch((error: unknown) => error);

    expect(page.data.map((model) => model.id)).toEqual(FAKE_MODEL_IDS);
    expect(known.id).toBe("claude-haiku-4-5");
    expect(unknown).toMatchObject({
      status: 404,
      error: { type: "error", error: { type: "not_found_error", message: "model: claude-9" } },
    });
  });

  it("refuses a request without x-api-key with a 401", async () => {
    fake = await startFakeAnthropic();

    const response = await fetch(`${fake.url}/v1/models`);

    expect(response.status).toBe(401);
    expect(await response.json()).toMatchObject({ error: { type: "authentication_error" } });
  });

  it("answers unknown routes with an Anthropic-style 404 error body", async () => {
    fake = await startFakeAnthropic();

    const response = await fetch(`${fake.url}/v1/files`, { headers: { "x-api-key": "k" } });

    expect(response.status).toBe(404);
    expect(await response.json()).toMatchObject({
      type: "error",
      error: { type: "not_found_error" },
    });
  });

  it("fails a stream mid-reply with the API's error event, and a plain request with its status", async () => {
    fake = await startFakeAnthropic();
    const client = clientFor(fake);
    const overloaded = { streamError: { type: "overloaded_error" }, afterChunks: 1, text: "ab" };
    fake.script(overloaded, overloaded);
    const deltas: string[] = [];

    const stream = client.messages.stream({
      model: "claude-test",
      max_tokens: 100,
      messages: [{ role: "user", content: "hi" }],
    });
    stream.on("text", (delta) => deltas.push(delta));
    const inStream = await stream.finalMessage().catch((thrown: unknown) => thrown);
    const plain = await ask(client, "hi").catch((thrown: unknown) => thrown);

    expect(deltas).toEqual(["a"]);
    expect(inStream).toBeInstanceOf(Anthropic.APIError);
    expect(inStream).toMatchObject({ status: undefined, type: "overloaded_error" });
    expect(plain).toMatchObject({
      status: 529,
      type: "overloaded_error",
      message: expect.stringContaining("Overloaded"),
    });
  });

  it("drops a hanging request when it closes, so nothing waits forever", async () => {
    fake = await startFakeAnthropic();
    const server = fake;
    server.script(() => {
      void server.close();
      return { hang: true };
    });

    await expect(ask(clientFor(server), "hello?")).rejects.toThrow();
  });

  it("splits text into the asked number of pieces, fewer when it is short", () => {
    expect(splitInto("abcdef", 3)).toEqual(["ab", "cd", "ef"]);
    expect(splitInto("ab", 5)).toEqual(["a", "b"]);
    expect(splitInto("", 3)).toEqual([""]);
  });
});

describe("fake Anthropic server refuses what the real API refuses", () => {
  type Messages = Anthropic.MessageParam[];
  const toolUse = (id: string) => ({ type: "tool_use" as const, id, name: "read", input: {} });
  const toolResult = (id: string) => ({
    type: "tool_result" as const,
    tool_use_id: id,
    content: "ok",
  });

  async function refusalFor(messages: Messages): Promise<{ status?: number; message: string }> {
    fake = await startFakeAnthropic();
    const client = clientFor(fake);
    const error = await client.messages
      .create({ model: "claude-test", max_tokens: 10, messages })
      .then(() => null)
      .catch((thrown: InstanceType<typeof Anthropic.APIError>) => thrown);
    expect(error, "the request should be refused").toBeInstanceOf(Anthropic.BadRequestError);
    expect(fake.requests).toHaveLength(0);
    expect(fake.refused).toHaveLength(1);
    const body = error?.error as { error: { type: string; message: string } };
    expect(body.error.type).toBe("invalid_request_error");
    return { status: error?.status, message: body.error.message };
  }

  it("a tool_use without its tool_result in the next message", async () => {
    const error = await refusalFor([
      { role: "user", content: "read it" },
      { role: "assistant", content: [toolUse("toolu_1")] },
      { role: "user", content: "what happened?" },
    ]);
    expect(error.status).toBe(400);
    expect(error.message).toContain(
      "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_1",
    );
  });

  it("a tool_result whose tool_use is not in the previous message", async () => {
    const error = await refusalFor([{ role: "user", content: [toolResult("toolu_9")] }]);
    expect(error.message).toContain(
      "messages.0.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_9",
    );
  });

  it("two user messages in a row", async () => {
    const error = await refusalFor([
      { role: "user", content: "one" },
      { role: "user", content: "two" },
    ]);
    expect(error.message).toContain(
      'roles must alternate between "user" and "assistant", but found multiple "user" roles in a row',
    );
  });

  it("a first message from the assistant", async () => {
    const error = await refusalFor([{ role: "assistant", content: "hi" }]);
    expect(error.message).toContain('first message must use the "user" role');
  });

  it("empty content and empty text blocks", async () => {
    expect(
      (
        await refusalFor([
          { role: "user", content: [] },
          { role: "assistant", content: "x" },
          { role: "user", content: "y" },
        ])
      ).message,
    ).toContain("messages.0: all messages must have non-empty content");
    await fake?.close();
    expect(
      (await refusalFor([{ role: "user", content: [{ type: "text", text: "" }] }])).message,
    ).toContain("text content blocks must be non-empty");
  });

  it("two tools of one name", async () => {
    fake = await startFakeAnthropic();
    const tool = { name: "fake__echo", input_schema: { type: "object" as const } };
    const error = await clientFor(fake)
      .messages.create({
        model: "claude-test",
        max_tokens: 10,
        tools: [tool, { name: "read", input_schema: { type: "object" } }, tool],
        messages: [{ role: "user", content: "hi" }],
      })
      .catch((thrown: InstanceType<typeof Anthropic.APIError>) => thrown);
    expect(error).toBeInstanceOf(Anthropic.BadRequestError);
    expect((error as InstanceType<typeof Anthropic.APIError>).error).toMatchObject({
      error: { type: "invalid_request_error", message: "tools: Tool names must be unique." },
    });
    expect(fake.refused).toHaveLength(1);
  });

  const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).toString("base64");
  const image = (mediaType: string, data = png) =>
    ({
      type: "image",
      source: { type: "base64", media_type: mediaType, data },
    }) as Anthropic.ImageBlockParam;
  const pdfOf = (pages: number) => {
    const objects = "<< /Type /Page >>\n".repeat(pages);
    const data = Buffer.from(`%PDF-1.4\n${objects}%%EOF\n`).toString("base64");
    return {
      type: "document",
      source: { type: "base64", media_type: "application/pdf", data },
    } as Anthropic.DocumentBlockParam;
  };
  const asking = (...blocks: Anthropic.ContentBlockParam[]): Messages => [
    { role: "user", content: [...blocks, { type: "text", text: "what is it?" }] },
  ];

  it("an image of a type it does not read, or whose bytes are of another type", async () => {
    expect((await refusalFor(asking(image("image/heic")))).message).toBe(
      "messages.0.content.0.image.source.base64.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'",
    );
    await fake?.close();
    expect((await refusalFor(asking(image("image/jpeg")))).message).toBe(
      "messages.0.content.0.image.source.base64.data: Image does not match the provided media type image/jpeg",
    );
  });

  it("an image over 5 MB", async () => {
    const big = Buffer.alloc(5 * 1024 * 1024 + 1);
    big.set([0x89, 0x50, 0x4e, 0x47]);
    expect((await refusalFor(asking(image("image/png", big.toString("base64"))))).message).toBe(
      "messages.0.content.0.image.source.base64: image exceeds 5 MB maximum: 5242881 bytes > 5242880 bytes",
    );
  });

  it("more than 100 images and PDF pages in one request, and a PDF of more than 100 pages", async () => {
    const images = Array.from({ length: 90 }, () => image("image/png"));
    expect((await refusalFor(asking(...images, pdfOf(11)))).message).toBe(
      "Too much media: 11 document pages + 90 images > 100",
    );
    await fake?.close();
    expect((await refusalFor(asking(pdfOf(101)))).message).toBe(
      "messages.0.content.0.pdf.source.base64.data: A maximum of 100 PDF pages may be provided.",
    );
  });

  it("a request over 32 MB, with the API's 413 request_too_large", async () => {
    fake = await startFakeAnthropic();
    const big = Buffer.alloc(25 * 1024 * 1024);
    big.write("%PDF-1.4\n<< /Type /Page >>\n%%EOF\n");
    const document = {
      type: "document",
      source: { type: "base64", media_type: "application/pdf", data: big.toString("base64") },
    } as Anthropic.DocumentBlockParam;
    const error = await clientFor(fake)
      .messages.create({ model: "claude-test", max_tokens: 10, messages: asking(document) })
      .catch((thrown: InstanceType<typeof Anthropic.APIError>) => thrown);
    expect(error).toBeInstanceOf(Anthropic.APIError);
    expect((error as InstanceType<typeof Anthropic.APIError>).status).toBe(413);
    expect((error as InstanceType<typeof Anthropic.APIError>).error).toMatchObject({
      error: { type: "request_too_large", message: "Request exceeds the maximum size" },
    });
    expect(fake.requests).toHaveLength(0);
  });

  it("accepts 100 images and PDF pages of the types they say", async () => {
    fake = await startFakeAnthropic();
    const images = Array.from({ length: 90 }, () => image("image/png"));
    const message = await clientFor(fake).messages.create({
      model: "claude-test",
      max_tokens: 10,
      messages: asking(...images, pdfOf(10)),
    });
    expect(message.content).toEqual([{ type: "text", text: "ok" }]);
  });

  it("accepts a well-formed tool exchange", async () => {
    fake = await startFakeAnthropic();
    const message = await clientFor(fake).messages.create({
      model: "claude-test",
      max_tokens: 10,
      messages: [
        { role: "user", content: "read it" },
        { role: "assistant", content: [{ type: "text", text: "Reading." }, toolUse("toolu_1")] },
        { role: "user", content: [toolResult("toolu_1"), { type: "text", text: "and?" }] },
      ],
    });
    expect(message.content).toEqual([{ type: "text", text: "ok" }]);
    expect(fake.refused).toHaveLength(0);
  });
});

describe("fake Anthropic server with a context window", () => {
  it('refuses a prompt over it with the API\'s "prompt is too long" 400', async () => {
    fake = await startFakeAnthropic({ promptTokenLimit: 1000 });
    const client = clientFor(fake);
    expect((await ask(client, "short")).content).toEqual([{ type: "text", text: "ok" }]);
    const error = await ask(client, "x".repeat(8000)).catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(Anthropic.BadRequestError);
    expect((error as InstanceType<typeof Anthropic.APIError>).message).toMatch(
      /prompt is too long: \d+ tokens > 1000 maximum/,
    );
    expect(fake.refused).toHaveLength(1);
  });
});

describe("fake Anthropic server: web search, the API's server tool", () => {
  const WEB_SEARCH = { type: "web_search_20250305", name: "web_search", max_uses: 2 } as const;
  const searchReply = {
    text: "It opens at 7.",
    webSearch: { query: "pool", results: [{ title: "Pool", url: "https://pool.example/" }] },
  };

  async function searched(client: Anthropic) {
    return client.messages
      .stream({
        model: "claude-test",
        max_tokens: 100,
        tools: [WEB_SEARCH],
        messages: [{ role: "user", content: "when does the pool open?" }],
      })
      .finalMessage();
  }

  it("streams server_tool_use, web_search_tool_result and the text, and counts the search", async () => {
    fake = await startFakeAnthropic();
    fake.script(searchReply);
    const message = await searched(clientFor(fake));
    expect(message.content.map((block) => block.type)).toEqual([
      "server_tool_use",
      "web_search_tool_result",
      "text",
    ]);
    expect(message.content[0]).toMatchObject({ name: "web_search", input: { query: "pool" } });
    expect(message.usage.server_tool_use).toEqual({ web_search_requests: 1 });
  });

  it("takes the blocks back as they came, and refuses a result that was changed or left out", async () => {
    fake = await startFakeAnthropic();
    fake.script(searchReply);
    const client = clientFor(fake);
    const message = await searched(client);
    const followUp = (content: Anthropic.ContentBlockParam[]) =>
      client.messages.create({
        model: "claude-test",
        max_tokens: 100,
        tools: [WEB_SEARCH],
        messages: [
          { role: "user", content: "when does the pool open?" },
          { role: "assistant", content },
          { role: "user", content: "thanks" },
        ],
      });
    const blocks = message.content as unknown as Anthropic.ContentBlockParam[];
    await expect(followUp(blocks)).resolves.toBeDefined();
    const [use, result, text] = blocks as [
      Anthropic.ServerToolUseBlockParam,
      Anthropic.WebSearchToolResultBlockParam,
      Anthropic.TextBlockParam,
    ];
    const changed = { ...result, content: [] };
    await expect(followUp([use, changed, text])).rejects.toThrow(
      "the `web_search_tool_result` block is not the one the API returned",
    );
    await expect(followUp([use, text])).rejects.toThrow(
      "was found without a corresponding `web_search_tool_result` block",
    );
  });

  it("refuses to answer with a search when the request offers no web_search tool", async () => {
    fake = await startFakeAnthropic();
    fake.script(searchReply);
    await expect(ask(clientFor(fake), "when does the pool open?")).rejects.toThrow(
      "offers no web_search_20250305 tool",
    );
    expect(fake.unusedReplies).toBe(1);
  });
});
