import { describe, expect, it } from "vitest";
import { spokenText } from "../../src/chat/speech.js";

describe("spokenText", () => {
  it("reads Markdown aloud without its marks", () => {
    const markdown =
      "# Pickles\n> **Crunchy** and _sour_: see [the recipe](https://example.com), `brine` ~~old~~.\n```sh\nmake pickles\n```";
    expect(spokenText(markdown)).toBe(
      "Pickles\nCrunchy and _sour_: see the recipe, brine old.\nmake pickles",
    );
  });
});
