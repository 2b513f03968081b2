/** The fake OpenAI-compatible API refuses what the real one refuses, in its words. */
import { afterEach, describe, expect, it } from "vitest";
import { type FakeOpenAi, startFakeOpenAi } from "./openai.js";

let fake: FakeOpenAi;

afterEach(async () => {
  await fake.close();
});

async function post(
  body: Record<string, unknown>,
): Promise<{ status: number; error: { message: string } }> {
  const response = await fetch(`${fake.url}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "fake-model", stream: true, ...body }),
  });
  const text = await response.text();
  return {
    status: response.status,
    error: response.status === 200 ? { message: "" } : JSON.parse(text).error,
  };
}

const user = { role: "user", content: "hi" };

describe("the fake OpenAI-compatible API", () => {
  it("refuses a tool message that follows no assistant tool_calls, in the API's words", async () => {
    fake = await startFakeOpenAi();

    const answer = await post({
      messages: [user, { role: "tool", tool_call_id: "call_1", content: "x" }],
    });

    expect(answer.status).toBe(400);
    expect(answer.error.message).toBe(
      "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
    );
    expect(fake.refused).toHaveLength(1);
  });

  it("refuses tool calls left without their tool messages", async () => {
    fake = await startFakeOpenAi();
    const call = { id: "call_1", type: "function", function: { name: "read", arguments: "{}" } };

    const answer = await post({
      messages: [user, { role: "assistant", content: null, tool_calls: [call] }, user],
    });

    expect(answer.error.message).toContain("did not have response messages: call_1");
  });

  it("refuses an unknown role, an unknown content part, an unknown field and a schema that is not an object's", async () => {
    fake = await startFakeOpenAi();
    const tool = (parameters: unknown) => ({
      type: "function",
      function: { name: "read", parameters },
    });

    expect((await post({ messages: [{ role: "robot", content: "x" }] })).error.message).toContain(
      "Invalid value: 'robot'",
    );
    expect(
      (await post({ messages: [{ role: "user", content: [{ type: "document" }] }] })).error.message,
    ).toContain("Invalid value: 'document'");
    expect((await post({ messages: [user], cache_control: {} })).error.message).toBe(
      "Unrecognized request argument supplied: cache_control",
    );
    expect(
      (await post({ messages: [user], tools: [tool({ type: "string" })] })).error.message,
    ).toContain("Invalid schema for function 'read'");
    expect(fake.requests).toHaveLength(0);
  });

  it("takes an image as a data URL in a user message, and refuses one it cannot read, or in another role, in the API's words", async () => {
    fake = await startFakeOpenAi();
    const png = Buffer.from("89504e470d0a1a0a0000000d49484452", "hex").toString("base64");
    const image = (url: string) => ({ type: "image_url", image_url: { url } });
    const asUser = (url: string) => ({ messages: [{ role: "user", content: [image(url)] }] });
    const expected =
      "Invalid image URL: 'messages[0].content[0].image_url.url'. Expected a base64-encoded data URL with an image MIME type (e.g. 'data:image/png;base64,aW1nIGJ5dGVzIGhlcmU='), but got";

    expect((await post(asUser(`data:image/png;base64,${png}`))).status).toBe(200);
    const refusals = [
      [png, `${expected} a value without the 'data:' prefix.`],
      [`data:image/svg+xml;base64,${png}`, `${expected} unsupported MIME type 'image/svg+xml'.`],
      ["data:image/png;base64,", `${expected} empty base64-encoded bytes.`],
      ["data:image/png;base64,not base64!", `${expected} an invalid base64-encoded value.`],
      [
        `data:image/png;base64,${Buffer.from("plain text, no image").toString("base64")}`,
        "You uploaded an unsupported image. Please make sure your image has of one the following formats: ['png', 'jpeg', 'gif', 'webp'].",
      ],
    ];
    for (const [url, message] of refusals) {
      const answer = await post(asUser(String(url)));
      expect(answer).toMatchObject({
        status: 400,
        error: { message, type: "invalid_request_error" },
      });
    }
    const inAssistant = await post({
      messages: [user, { role: "assistant", content: [image(`data:image/png;base64,${png}`)] }],
    });
    expect(inAssistant.error.message).toBe(
      "Image URLs are only allowed for messages with role 'user', but this message with role 'assistant' contains an image URL.",
    );
    expect(fake.requests).toHaveLength(1);
  });

  it("lists its models and asks for the key it was given", async () => {
    fake = await startFakeOpenAi({ apiKey: "sk-fake", models: [{ id: "m", contextLength: 4096 }] });

    const refused = await fetch(`${fake.url}/models`);
    const listed = await fetch(`${fake.url}/models`, {
      headers: { authorization: "Bearer sk-fake" },
    });

    expect(refused.status).toBe(401);
    expect(await listed.json()).toMatchObject({ data: [{ id: "m", context_length: 4096 }] });
  });
});
