import { describe, expect, it } from "vitest";
import { escapeSlackText, toSlackMrkdwn, unescapeSlackText } from "../../src/chat/slack/mrkdwn.js";

describe("Markdown to Slack mrkdwn", () => {
  it("converts bold, italic, strike, headings, bullets and links", () => {
    expect(toSlackMrkdwn("**bold** and *it* and ~~gone~~")).toBe("*bold* and _it_ and ~gone~");
    expect(toSlackMrkdwn("# Plan\n- one\n* two")).toBe("*Plan*\n• one\n• two");
    expect(toSlackMrkdwn("see [the docs](https://x.io/a?b=1)")).toBe(
      "see <https://x.io/a?b=1|the docs>",
    );
  });

  it("leaves code alone, and escapes &, < and > everywhere", () => {
    expect(toSlackMrkdwn("run `a **b** c` now")).toBe("run `a **b** c` now");
    expect(toSlackMrkdwn("```\nif a < b && **x**\n```")).toBe(
      "```\nif a &lt; b &amp;&amp; **x**\n```",
    );
    expect(escapeSlackText("<@U1> & <!channel>")).toBe("&lt;@U1&gt; &amp; &lt;!channel&gt;");
  });

  it("undoes Slack's escaping of incoming text", () => {
    expect(unescapeSlackText("a &lt; b &amp;&amp; c &gt; d")).toBe("a < b && c > d");
  });
});
