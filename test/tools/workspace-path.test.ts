import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { resolveInWorkspace } from "../../src/agents/tools/workspace-path.js";
import { ToolError } from "../../src/base/errors.js";
import { createTempWorkspace, type TempWorkspace } from "./workspace.js";

describe("resolveInWorkspace", () => {
  let temp: TempWorkspace;
  beforeEach(() => {
    temp = createTempWorkspace();
  });
  afterEach(() => temp.remove());

  it("resolves relative paths, new files and absolute paths inside the workspace", async () => {
    mkdirSync(join(temp.workspace, "notes"));
    expect(await resolveInWorkspace(temp.workspace, "notes/a.md")).toBe(
      join(temp.workspace, "notes/a.md"),
    );
    expect(await resolveInWorkspace(temp.workspace, "new/dir/b.md")).toBe(
      join(temp.workspace, "new/dir/b.md"),
    );
    const absolute = join(temp.workspace, "notes");
    expect(await resolveInWorkspace(temp.workspace, absolute)).toBe(absolute);
    expect(await resolveInWorkspace(temp.workspace, "notes/../c.md")).toBe(
      join(temp.workspace, "c.md"),
    );
    expect(await resolveInWorkspace(temp.workspace, "..cache/d.md")).toBe(
      join(temp.workspace, "..cache/d.md"),
    );
  });

  it("refuses .. that leaves the workspace, with a message naming the path", async () => {
    const refusal = resolveInWorkspace(temp.workspace, "../x");
    await expect(refusal).rejects.toBeInstanceOf(ToolError);
    await expect(refusal).rejects.toThrow(
      `path "../x" is outside the workspace; use a path inside ${temp.workspace}`,
    );
  });

  it("refuses absolute paths outside the workspace", async () => {
    await expect(resolveInWorkspace(temp.workspace, "/etc/passwd")).rejects.toThrow(
      'path "/etc/passwd" is outside the workspace',
    );
    await expect(resolveInWorkspace(temp.workspace, `${temp.workspace}-evil/x`)).rejects.toThrow(
      "is outside the workspace",
    );
  });

  it("refuses symlinks to files and folders outside, also for files not created yet", async () => {
    writeFileSync(join(temp.outside, "secret.txt"), "secret");
    symlinkSync(join(temp.outside, "secret.txt"), join(temp.workspace, "link.txt"));
    symlinkSync(temp.outside, join(temp.workspace, "out"));
    await expect(resolveInWorkspace(temp.workspace, "link.txt")).rejects.toThrow(
      'path "link.txt" is outside the workspace',
    );
    await expect(resolveInWorkspace(temp.workspace, "out/new/file.txt")).rejects.toThrow(
      'path "out/new/file.txt" is outside the workspace',
    );
  });

  it("refuses a dangling symlink whose target would be created outside", async () => {
    symlinkSync(join(temp.outside, "not-yet.txt"), join(temp.workspace, "dangling.txt"));
    await expect(resolveInWorkspace(temp.workspace, "dangling.txt")).rejects.toThrow(
      "is outside the workspace",
    );
  });

  it("accepts symlinks that stay inside the workspace", async () => {
    mkdirSync(join(temp.workspace, "real"));
    symlinkSync(join(temp.workspace, "real"), join(temp.workspace, "alias"));
    expect(await resolveInWorkspace(temp.workspace, "alias/x.md")).toBe(
      join(temp.workspace, "real/x.md"),
    );
  });
});
