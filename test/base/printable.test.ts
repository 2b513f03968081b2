import { describe, expect, it } from "vitest";
import { printable, printableDeep } from "../../src/base/printable.js";

describe("printable", () => {
  it("escapes C0, ESC, DEL and C1 controls, keeping accents and emoji", () => {
    expect(printable("\x1b]0;pwned\x07\x1b[2J")).toBe("\\x1b]0;pwned\\x07\\x1b[2J");
    expect(printable("a\x00b\x7fc\x9bd")).toBe("a\\x00b\\x7fc\\x9bd");
    expect(printable("café 🥒")).toBe("café 🥒");
  });

  it("escapes line breaks on one line, keeps \\n and tabs in a multi-line body", () => {
    expect(printable("bob\napproved user 666 (owner)\r")).toBe(
      "bob\\napproved user 666 (owner)\\r",
    );
    expect(printable("line 1\n\tline 2\r\x1b[2J", { multiline: true })).toBe(
      "line 1\n\tline 2\\r\\x1b[2J",
    );
  });

  it("escapes the bidirectional overrides that reorder what a terminal shows", () => {
    expect(printable("abc\u202edef")).toBe("abc\\u{202e}def");
  });

  it("escapes every string of a log record, keeping line feeds only in the named keys", () => {
    expect(
      printableDeep(
        { msg: "hi\x1b[2J", user: { name: "a\nb" }, err: { stack: "E\n  at x" }, n: 1 },
        new Set(["stack"]),
      ),
    ).toEqual({ msg: "hi\\x1b[2J", user: { name: "a\\nb" }, err: { stack: "E\n  at x" }, n: 1 });
  });
});

describe("the terminal log (pino-pretty)", () => {
  it("escapes control characters in the message and the fields", async () => {
    const { createLogger } = await import("../../src/base/log.js");
    let screen = "";
    const destination = {
      write: (text: string) => {
        screen += text;
      },
    } as unknown as NodeJS.WritableStream;
    const logger = createLogger({ pretty: true, destination, level: "info" });
    logger.info({ name: "Eve\x1b]0;pwned\x07\nforged" }, "pairing requested by \x1b[2Jsomeone");
    expect(screen).toContain("pairing requested by \\x1b[2Jsomeone");
    expect(screen).toContain("Eve\\x1b]0;pwned\\x07\\nforged");
    expect(screen).not.toContain("\x07");
    expect(screen).not.toContain("\x1b]0");
  });
});
