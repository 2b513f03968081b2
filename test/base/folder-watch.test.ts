/** watchFolder on the real file system: every way of saving a file is seen, every time. */
import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { isRetryable } from "../../src/base/errors.js";
import { type FolderWatch, watchFolder } from "../../src/base/folder-watch.js";
import { EDITOR_SAVES } from "../helpers/editors.js";
import { waitFor } from "../helpers/wait.js";

let workspace: string;
const watches: FolderWatch[] = [];

beforeEach(() => {
  workspace = mkdtempSync(join(tmpdir(), "picklebot-watch-"));
});

afterEach(() => {
  for (const watch of watches.splice(0)) watch.close();
  rmSync(workspace, { recursive: true, force: true });
});

/** Watches `dir` and keeps what `file` held at each notification. */
function watchFile(dir: string, file: string, options: { recursive?: boolean; pollMs?: number }) {
  const seen = { text: readText(file), errors: [] as Error[] };
  const onChange = () => {
    seen.text = readText(file);
  };
  watches.push(watchFolder(dir, 20, onChange, (e) => seen.errors.push(e), options));
  return seen;
}

function readText(file: string): string | null {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return null;
  }
}

function writeNew(file: string, text: string): void {
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, text);
}

describe("watchFolder", () => {
  const layouts = [
    {
      name: "a file in a folder inside (recursive)",
      path: "agents/chef/AGENT.md",
      recursive: true,
    },
    { name: "a file directly in the folder", path: "crons/daily.yaml", recursive: false },
  ];
  for (const layout of layouts) {
    it(`sees every save of ${layout.name}, three times in a row by each editor`, async () => {
      const dir = join(workspace, layout.path.split("/")[0] ?? "");
      const file = join(workspace, layout.path);
      writeNew(file, "first");
      const seen = watchFile(dir, file, { recursive: layout.recursive });
      for (const [editor, save] of Object.entries(EDITOR_SAVES)) {
        for (let round = 1; round <= 3; round += 1) {
          const text = `${editor}, round ${round}`;
          save(file, text);
          await waitFor(() => seen.text === text, `"${text}" to be seen (last: ${seen.text})`);
        }
      }
      expect(seen.errors).toEqual([]);
    });
  }

  it("sees a folder added inside, and the files saved in it afterwards", async () => {
    const agents = join(workspace, "agents");
    const file = join(agents, "chef/AGENT.md");
    const seen = watchFile(agents, file, { recursive: true });
    writeNew(file, "new agent");
    await waitFor(() => seen.text === "new agent", "the new agent");
    EDITOR_SAVES["temp file renamed over it"](file, "changed");
    await waitFor(() => seen.text === "changed", "the change in the new folder");
  });

  it("sees the watched folder itself replaced, on its next look", async () => {
    const agents = join(workspace, "agents");
    const file = join(agents, "chef/AGENT.md");
    writeNew(file, "old release");
    const seen = watchFile(agents, file, { recursive: true, pollMs: 50 });
    writeNew(join(workspace, "next/chef/AGENT.md"), "new release");
    renameSync(agents, join(workspace, "previous"));
    renameSync(join(workspace, "next"), agents);
    await waitFor(() => seen.text === "new release", "the replaced folder");
    EDITOR_SAVES["in-place write"](file, "edited after");
    await waitFor(() => seen.text === "edited after", "a change in the replaced folder");
  });

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
