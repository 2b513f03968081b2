import { describe, expect, it } from "vitest";
import { splitMessage } from "../../src/chat/split.js";

describe("splitMessage", () => {
  it("keeps a text that fits in one message as it is", () => {
    expect(splitMessage("short reply", 100)).toEqual(["short reply"]);
  });

  it("cuts at the last paragraph break that fits", () => {
    const text = `${"a".repeat(60)}\n\n${"b".repeat(30)}\n\n${"c".repeat(50)}`;
    expect(splitMessage(text, 100)).toEqual([
      `${"a".repeat(60)}\n\n${"b".repeat(30)}`,
      "c".repeat(50),
    ]);
  });

  it("falls back to a line break, then a space, then a hard cut", () => {
    expect(splitMessage(`${"a".repeat(70)}\n${"b".repeat(50)}`, 100)).toEqual([
      "a".repeat(70),
      "b".repeat(50),
    ]);
    expect(splitMessage(`${"a".repeat(70)} ${"b".repeat(50)}`, 100)).toEqual([
      "a".repeat(70),
      "b".repeat(50),
    ]);
    const parts = splitMessage("x".repeat(250), 100);
    expect(parts.join("")).toBe("x".repeat(250));
    for (const part of parts) expect(part.length).toBeLessThanOrEqual(100);
  });

  it("does not cut inside a code block when a boundary outside it fits", () => {
    const code = "```js\nconst a = 1;\n\nconst b = 2;\n```";
    const text = `${"intro ".repeat(10).trim()}\n\n${code}\n\nafter`;
    const parts = splitMessage(text, text.length - 3);
    expect(parts).toEqual([`${"intro ".repeat(10).trim()}`, `${code}\n\nafter`]);
  });

  it("closes and reopens a code block that must be cut, keeping its language", () => {
    const lines = Array.from({ length: 40 }, (_, n) => `line ${n}`).join("\n");
    const parts = splitMessage(`\`\`\`python\n${lines}\n\`\`\``, 120);
    expect(parts.length).toBeGreaterThan(1);
    for (const part of parts) {
      expect(part.length).toBeLessThanOrEqual(120);
      expect(part.startsWith("```python\n")).toBe(true);
      expect(part.endsWith("```")).toBe(true);
    }
  });

  it("keeps earlier parts unchanged while a long reply grows", () => {
    const base = Array.from({ length: 30 }, (_, n) => `sentence number ${n}.`).join(" ");
    const early = splitMessage(base, 200);
    const later = splitMessage(`${base} and more text arriving`, 200);
    expect(later.slice(0, early.length - 1)).toEqual(early.slice(0, -1));
  });

  it("never cuts inside a surrogate pair, and keeps a grapheme whole when it fits", () => {
    const loneSurrogate = /[\uD800-\uDFFF]/u;
    for (const offset of [0, 1]) {
      const parts = splitMessage(`${"a".repeat(offset)}${"😀".repeat(120)}`, 101);
      expect(parts.join("")).toBe(`${"a".repeat(offset)}${"😀".repeat(120)}`);
      for (const part of parts) {
        expect(part.length).toBeLessThanOrEqual(101);
        expect(part).not.toMatch(loneSurrogate);
      }
    }
    const family = "👨‍👩‍👧‍👦"; // 11 UTF-16 code units joined by ZWJ
    const flag = "🇫🇷"; // two regional indicators
    for (const unit of [family, flag, "e\u0301"]) {
      for (let limit = 20; limit < 40; limit++) {
        const text = unit.repeat(30);
        const parts = splitMessage(text, limit);
        expect(parts.join("")).toBe(text);
        for (const part of parts) {
          expect(part.length).toBeLessThanOrEqual(limit);
          expect(part.split(unit).every((piece) => piece === "")).toBe(true);
        }
      }
    }
  });

  it("cuts a grapheme longer than a message only between code points", () => {
    const text = `a${"\u0301".repeat(50)}${"😀".repeat(30)}`;
    const parts = splitMessage(text, 25);
    expect(parts.join("")).toBe(text);
    for (const part of parts) {
      expect(part.length).toBeLessThanOrEqual(25);
      expect(part).not.toMatch(/[\uD800-\uDFFF]/u);
    }
  });
});
