/** watchFolder on the real file system: what it reports when it cannot watch. */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { isRetryable } from "../../src/base/errors.js";
import { watchFolder } from "../../src/base/folder-watch.js";

let workspace: string;

beforeEach(() => {
  workspace = mkdtempSync(join(tmpdir(), "picklebot-watch-"));
});

afterEach(() => {
  rmSync(workspace, { recursive: true, force: true });
});

describe("watchFolder", () => {
  it("reports a folder it cannot create as not retryable, and watches nothing", () => {
    const file = join(workspace, "not-a-folder");
    writeFileSync(file, "");
    const errors: Error[] = [];
    const watch = watchFolder(
      join(file, "crons"),
      10,
      () => undefined,
      (e) => errors.push(e),
    );
    watch.close();
    expect(errors).toHaveLength(1);
    expect(errors[0]?.message).toContain(`cannot create ${join(file, "crons")}: ENOTDIR`);
    expect(isRetryable(errors[0])).toBe(false);
  });

  it("creates a missing folder and reports nothing", () => {
    const errors: Error[] = [];
    const watch = watchFolder(
      join(workspace, "crons"),
      10,
      () => undefined,
      (e) => errors.push(e),
    );
    watch.close();
    expect(errors).toEqual([]);
  });
});
