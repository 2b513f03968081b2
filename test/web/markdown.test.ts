import { describe, expect, it } from "vitest";
import { renderMarkdown } from "../../src/web/markdown.js";

describe("renderMarkdown", () => {
  it("renders paragraphs, headings, lists, emphasis and code", () => {
    expect(renderMarkdown("# Plan\n\nFirst **bold** and *soft*.\nNext line.")).toBe(
      "<h3>Plan</h3>\n<p>First <strong>bold</strong> and <em>soft</em>.<br>Next line.</p>",
    );
    expect(renderMarkdown("1. one\n2. `two`")).toBe(
      "<ol><li>one</li><li><code>two</code></li></ol>",
    );
    expect(renderMarkdown("```ts\nconst a = 1 < 2;\n```")).toBe(
      "<pre><code>const a = 1 &lt; 2;</code></pre>",
    );
  });

  it("escapes every HTML character, in text, code and link labels", () => {
    const html = renderMarkdown(
      '<img src=x onerror="alert(1)"> & `<b>` [<i>x</i>](https://a.example/?q=1&r=2)',
    );
    expect(html).not.toMatch(/<img|<b>|<i>/);
    expect(html).toContain("&lt;img src=x onerror=&quot;alert(1)&quot;&gt; &amp;");
    expect(html).toContain("<code>&lt;b&gt;</code>");
    expect(html).toContain(
      '<a href="https://a.example/?q=1&amp;r=2" rel="noopener noreferrer">&lt;i&gt;x&lt;/i&gt;</a>',
    );
  });

  it("links only http and https targets", () => {
    expect(renderMarkdown("[x](javascript:alert(1))")).toBe("<p>[x](javascript:alert(1))</p>");
    expect(renderMarkdown('[x](https://a.example/" onclick="y)')).not.toContain('" onclick');
  });
});
