import { describe, expect, it } from "vitest";
import { escapeMarkdownV2, toTelegramMarkdownV2 } from "../../src/chat/telegram/markdown.js";

describe("Markdown to Telegram MarkdownV2", () => {
  it("converts bold, italic, strike, inline code and links", () => {
    expect(toTelegramMarkdownV2("**bold** and *it* and ~~gone~~")).toBe(
      "*bold* and _it_ and ~gone~",
    );
    expect(toTelegramMarkdownV2("run `a.b()` now")).toBe("run `a.b()` now");
    expect(toTelegramMarkdownV2("see [the docs](https://x.io/a_b?c=1)")).toBe(
      "see [the docs](https://x.io/a_b?c=1)",
    );
  });

  it("escapes every reserved character of plain text", () => {
    expect(escapeMarkdownV2("1+1=2. (yes!)")).toBe("1\\+1\\=2\\. \\(yes\\!\\)");
    expect(toTelegramMarkdownV2("snake_case_name costs 5.00 - done!")).toBe(
      "snake\\_case\\_name costs 5\\.00 \\- done\\!",
    );
  });

  it("shows a marker without its partner (a reply still streaming) as typed", () => {
    expect(toTelegramMarkdownV2("this is **half")).toBe("this is \\*\\*half");
    expect(toTelegramMarkdownV2("an `open code")).toBe("an \\`open code");
  });

  it("keeps fenced code blocks, escaping only backticks and backslashes inside", () => {
    const markdown = "Look:\n```ts\nconst a = b * c; // \\ and `x`\n```\nok.";
    expect(toTelegramMarkdownV2(markdown)).toBe(
      "Look:\n```ts\nconst a = b * c; // \\\\ and \\`x\\`\n```\nok\\.",
    );
  });

  it("turns headings into bold lines", () => {
    expect(toTelegramMarkdownV2("## Plan for today\n- item")).toBe("*Plan for today*\n\\- item");
  });
});
