import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createEditTool } from "../../src/agents/tools/edit.js";
import { createReadTool } from "../../src/agents/tools/read.js";
import { createWriteTool } from "../../src/agents/tools/write.js";
import { ToolError } from "../../src/base/errors.js";
import { createTempWorkspace, type TempWorkspace } from "./workspace.js";

let temp: TempWorkspace;
beforeEach(() => {
  temp = createTempWorkspace();
});
afterEach(() => temp.remove());

describe("read", () => {
  const read = createReadTool();

  it("returns the text of a file", async () => {
    writeFileSync(join(temp.workspace, "notes.md"), "# Notes\nbuy pickles\n");
    expect(await read.run({ path: "notes.md" }, temp.context())).toBe("# Notes\nbuy pickles\n");
  });

  it("cuts a large file at 256 KiB and says where to read on", async () => {
    writeFileSync(join(temp.workspace, "big.txt"), "x".repeat(300 * 1024));
    const text = await read.run({ path: "big.txt" }, temp.context());
    expect(text.startsWith("x".repeat(256 * 1024))).toBe(true);
    expect(text).toContain(
      '[truncated: "big.txt" has 307200 bytes; bytes 0–262144 are shown; read on with offset 262144]',
    );
  });

  it("reads from a byte offset, and says when the offset is past the end", async () => {
    writeFileSync(join(temp.workspace, "log.txt"), "first line\nsecond line\n");
    expect(await read.run({ path: "log.txt", offset: 11 }, temp.context())).toBe("second line\n");
    expect(await read.run({ path: "log.txt", offset: 99 }, temp.context())).toBe(
      '(offset 99 is at or past the end of "log.txt", which has 23 bytes)',
    );
  });

  it("refuses binary files", async () => {
    writeFileSync(join(temp.workspace, "image.png"), Buffer.from([0x89, 0x50, 0x00, 0x01]));
    await expect(read.run({ path: "image.png" }, temp.context())).rejects.toThrow(
      '"image.png" is a binary file (4 bytes); read returns text files only',
    );
  });

  it("answers a directory with an error listing its entries", async () => {
    mkdirSync(join(temp.workspace, "docs/sub"), { recursive: true });
    writeFileSync(join(temp.workspace, "docs/a.md"), "a");
    await expect(read.run({ path: "docs" }, temp.context())).rejects.toThrow(
      '"docs" is a directory, not a file; read one of its entries: a.md, sub/',
    );
  });

  it("says when the file does not exist", async () => {
    await expect(read.run({ path: "missing.md" }, temp.context())).rejects.toThrow(
      '"missing.md" does not exist',
    );
  });

  it("refuses paths outside the workspace, also through a symlink", async () => {
    writeFileSync(join(temp.outside, "secret.txt"), "secret");
    symlinkSync(join(temp.outside, "secret.txt"), join(temp.workspace, "link.txt"));
    await expect(read.run({ path: "../outside/secret.txt" }, temp.context())).rejects.toThrow(
      'path "../outside/secret.txt" is outside the workspace',
    );
    await expect(
      read.run({ path: join(temp.outside, "secret.txt") }, temp.context()),
    ).rejects.toThrow("is outside the workspace");
    await expect(read.run({ path: "link.txt" }, temp.context())).rejects.toThrow(
      'path "link.txt" is outside the workspace',
    );
  });

  it("refuses bad input naming the field", async () => {
    await expect(read.run({}, temp.context())).rejects.toThrow(
      'read: "path" must be a string (it is missing)',
    );
    await expect(read.run({ path: 7 }, temp.context())).rejects.toThrow(
      'read: "path" must be a string (got number)',
    );
    await expect(read.run({ path: "" }, temp.context())).rejects.toThrow(
      'read: "path" must not be empty',
    );
    await expect(read.run("notes.md", temp.context())).rejects.toThrow(
      "read: input must be an object (got string)",
    );
  });
});

describe("write", () => {
  const write = createWriteTool();

  it("creates parent folders and reports the bytes written", async () => {
    const result = await write.run({ path: "a/b/notes.md", content: "héllo" }, temp.context());
    expect(result).toBe("wrote 6 bytes to a/b/notes.md");
    expect(readFileSync(join(temp.workspace, "a/b/notes.md"), "utf8")).toBe("héllo");
  });

  it("replaces an existing file", async () => {
    writeFileSync(join(temp.workspace, "notes.md"), "old");
    await write.run({ path: "notes.md", content: "new" }, temp.context());
    expect(readFileSync(join(temp.workspace, "notes.md"), "utf8")).toBe("new");
  });

  it("refuses to write into a symlinked folder that points outside", async () => {
    symlinkSync(temp.outside, join(temp.workspace, "out"));
    await expect(
      write.run({ path: "out/sub/evil.sh", content: "x" }, temp.context()),
    ).rejects.toThrow('path "out/sub/evil.sh" is outside the workspace');
    expect(existsSync(join(temp.outside, "sub"))).toBe(false);
  });

  it("refuses .. paths and writes nothing", async () => {
    await expect(write.run({ path: "../x.txt", content: "x" }, temp.context())).rejects.toThrow(
      'path "../x.txt" is outside the workspace',
    );
    expect(existsSync(join(temp.workspace, "../x.txt"))).toBe(false);
  });

  it("refuses bad input naming the field", async () => {
    const error = await write.run({ path: "a.md", content: 3 }, temp.context()).catch((e) => e);
    expect(error).toBeInstanceOf(ToolError);
    expect(error.message).toBe('write: "content" must be a string (got number)');
    await expect(write.run({ path: "a.md" }, temp.context())).rejects.toThrow(
      'write: "content" must be a string (it is missing)',
    );
  });
});

describe("edit", () => {
  const edit = createEditTool();
  const file = () => join(temp.workspace, "todo.md");

  it("replaces the one occurrence of old_text", async () => {
    writeFileSync(file(), "- milk\n- eggs\n- $& bread\n");
    const result = await edit.run(
      { path: "todo.md", old_text: "- eggs", new_text: "- eggs (12)" },
      temp.context(),
    );
    expect(result).toBe("edited todo.md: replaced 1 occurrence");
    expect(readFileSync(file(), "utf8")).toBe("- milk\n- eggs (12)\n- $& bread\n");
  });

  it("inserts replacement text literally, even with $ patterns", async () => {
    writeFileSync(file(), "price: X\n");
    await edit.run({ path: "todo.md", old_text: "X", new_text: "$& $1 $$" }, temp.context());
    expect(readFileSync(file(), "utf8")).toBe("price: $& $1 $$\n");
  });

  it("fails when old_text is absent", async () => {
    writeFileSync(file(), "- milk\n");
    await expect(
      edit.run({ path: "todo.md", old_text: "- eggs", new_text: "" }, temp.context()),
    ).rejects.toThrow("old_text not found in todo.md");
  });

  it("fails when old_text is ambiguous and leaves the file alone", async () => {
    writeFileSync(file(), "- x\n- x\n- x\n");
    await expect(
      edit.run({ path: "todo.md", old_text: "- x", new_text: "- y" }, temp.context()),
    ).rejects.toThrow(
      "old_text occurs 3 times in todo.md; include more surrounding text to make it unique",
    );
    expect(readFileSync(file(), "utf8")).toBe("- x\n- x\n- x\n");
  });

  it("refuses an empty old_text", async () => {
    writeFileSync(file(), "- x\n");
    await expect(
      edit.run({ path: "todo.md", old_text: "", new_text: "y" }, temp.context()),
    ).rejects.toThrow('edit: "old_text" must not be empty');
  });

  it("names every missing field", async () => {
    await expect(edit.run({ path: "todo.md" }, temp.context())).rejects.toThrow(
      'edit: "old_text" must be a string (it is missing); "new_text" must be a string (it is missing)',
    );
  });

  it("refuses files reached through a symlink to outside", async () => {
    writeFileSync(join(temp.outside, "x.md"), "a");
    symlinkSync(join(temp.outside, "x.md"), join(temp.workspace, "x.md"));
    await expect(
      edit.run({ path: "x.md", old_text: "a", new_text: "b" }, temp.context()),
    ).rejects.toThrow('path "x.md" is outside the workspace');
    expect(readFileSync(join(temp.outside, "x.md"), "utf8")).toBe("a");
  });
});
