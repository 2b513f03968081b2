/**
 * The size estimate of request messages: each block is sized by its kind, and for the
 * kinds of today that is exactly their JSON, as the API receives it.
 */
import { describe, expect, it } from "vitest";
import {
  contextWindowOf,
  DEFAULT_CONTEXT_WINDOW,
  estimateMessageTokens,
  imageTokens,
  PDF_PAGE_TOKENS,
} from "../../src/agents/context-budget.js";
import type { RequestMessage } from "../../src/ports/index.js";

const conversation: RequestMessage[] = [
  { role: "user", content: [{ type: "text", text: "Read notes.md, then tell me what is due." }] },
  {
    role: "assistant",
    content: [
      { type: "text", text: "Reading it." },
      { type: "tool_use", id: "t1", name: "read", input: { path: "notes.md", offset: 0 } },
    ],
  },
  {
    role: "user",
    content: [
      { type: "tool_result", tool_use_id: "t1", content: '- taxes (Friday)\n- "rent"' },
      { type: "tool_result", tool_use_id: "t2", content: "no such file", is_error: true },
    ],
  },
  { role: "assistant", content: [{ type: "text", text: "Taxes, on Friday. ✓" }] },
];

describe("estimateMessageTokens", () => {
  it("counts a third of a token for each character of the messages' JSON", () => {
    for (let end = 0; end <= conversation.length; end++) {
      const messages = conversation.slice(0, end);
      expect(estimateMessageTokens(messages)).toBe(Math.ceil(JSON.stringify(messages).length / 3));
    }
  });

  it("counts a message without blocks", () => {
    const messages: RequestMessage[] = [{ role: "user", content: [] }];
    expect(estimateMessageTokens(messages)).toBe(Math.ceil(JSON.stringify(messages).length / 3));
  });
});

describe("contextWindowOf", () => {
  it("takes llm.context_window, else the table, else the provider's, else the default", () => {
    expect(contextWindowOf("qwen2.5:7b", 8192, 16_384)).toBe(8192);
    expect(contextWindowOf("gpt-4o-mini", undefined, 16_384)).toBe(128_000);
    expect(contextWindowOf("qwen2.5:7b", undefined, 16_384)).toBe(16_384);
    expect(contextWindowOf("qwen2.5:7b")).toBe(DEFAULT_CONTEXT_WINDOW);
  });
});

describe("estimateMessageTokens of images and PDFs", () => {
  const media = { sha256: "b".repeat(64), bytes: 4_000_000, name: "photo.jpg" };
  const bare = estimateMessageTokens([{ role: "user", content: [] }]);

  it("counts an image by the API's formula, width × height / 750, not by its bytes", () => {
    const image: RequestMessage = {
      role: "user",
      content: [{ type: "image", mediaType: "image/jpeg", media, width: 1568, height: 1045 }],
    };
    expect(imageTokens(1568, 1045)).toBe(2185);
    expect(estimateMessageTokens([image]) - bare).toBe(2185);
  });

  it("counts a PDF by its pages", () => {
    const pdf: RequestMessage = {
      role: "user",
      content: [{ type: "document", mediaType: "application/pdf", media, pages: 4 }],
    };
    expect(estimateMessageTokens([pdf]) - bare).toBe(4 * PDF_PAGE_TOKENS);
  });
});
