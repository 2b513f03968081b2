import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";

/** A temporary workspace folder; `files` maps relative paths to contents. */
export interface TempWorkspace {
  dir: string;
  /** Writes (or overwrites) a file relative to the workspace. */
  write(path: string, content: string): string;
  remove(): void;
}

/** Creates a temp workspace with the given files. */
export function makeWorkspace(files: Record<string, string> = {}): TempWorkspace {
  const dir = mkdtempSync(join(tmpdir(), "picklebot-ws-"));
  const workspace: TempWorkspace = {
    dir,
    write(path, content) {
      const full = join(dir, path);
      mkdirSync(dirname(full), { recursive: true });
      writeFileSync(full, content);
      return full;
    },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
  for (const [path, content] of Object.entries(files)) workspace.write(path, content);
  return workspace;
}

/** A picklebot.yaml that points the model at a fake Anthropic server. */
export function fakeModelConfig(baseUrl: string, extra = ""): string {
  return `llm:\n  api_key: test-key\n  base_url: ${baseUrl}\n  timeout_s: 20\nhttp:\n  port: 0\n${extra}`;
}

/** Every file under `dir`, as one text (binary files too: SQLite stores text as is). */
export function filesUnder(dir: string): string {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => readFileSync(join(entry.parentPath, entry.name), "latin1"))
    .join("\n");
}
