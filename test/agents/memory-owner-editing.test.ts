/** The owner's whole-text edit and clear of a memory (`picklebot memory edit|clear`, dashboard). */
import { describe, expect, it } from "vitest";
import { clearText, type EditTarget, replaceText } from "../../src/agents/memory/editing.js";

const target: EditTarget = { label: "the notes", budget: 100, quote: true, secrets: ["hunter22"] };

describe("replaceText", () => {
  it("stores the edited entries, tidied, as an edit holding the old text", () => {
    expect(replaceText("A", "  A \n  §  \n\nB\n", target)("A")).toEqual({
      text: "A\n§\nB",
      change: { action: "edit", entry: "A\n§\nB", previous: "A" },
    });
  });

  it("refuses when the memory changed since it was read, so the later write is not lost", () => {
    expect(replaceText("A", "A\n§\nB", target)("A\n§\nC")).toEqual({
      refused:
        "the notes changed while you were editing it (the agent or someone else wrote to it); start again from what it holds now.",
    });
  });

  it("refuses an unchanged text and a configured secret", () => {
    expect(replaceText("A", "A\n", target)("A")).toEqual({
      refused: "nothing to change: the text is the same as before.",
    });
    expect(replaceText("A", "the password is hunter22", target)("A")).toMatchObject({
      refused: expect.stringContaining("entry 1"),
    });
  });

  it("records an edit to nothing as a clear", () => {
    expect(replaceText("A", "\n", target)("A")).toEqual(clearText()("A"));
    expect(clearText()("A")).toEqual({
      text: "",
      change: { action: "clear", entry: null, previous: "A" },
    });
  });
});
