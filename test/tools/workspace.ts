import { mkdirSync, mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ToolContext } from "../../src/ports/index.js";

/** A temporary workspace folder and a sibling folder outside it (real paths). */
export interface TempWorkspace {
  workspace: string;
  outside: string;
  context(signal?: AbortSignal): ToolContext;
  remove(): void;
}

/** Creates `<tmp>/picklebot-tools-*` holding `workspace/` and `outside/`. */
export function createTempWorkspace(): TempWorkspace {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "picklebot-tools-")));
  const workspace = join(root, "workspace");
  const outside = join(root, "outside");
  mkdirSync(workspace);
  mkdirSync(outside);
  return {
    workspace,
    outside,
    context: (signal = new AbortController().signal) => ({
      workspace,
      signal,
      agentId: "pickle",
      sessionKey: "console:test",
    }),
    remove: () => rmSync(root, { recursive: true, force: true }),
  };
}
