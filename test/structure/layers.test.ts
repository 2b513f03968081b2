/**
 * The layer rule (docs/development/architecture.md), checked as `npm run deps` checks it:
 * dependency-cruiser with the project's config passes on src/, and fails on a tree that
 * imports upward, imports a sibling of its layer, or has folders importing each other in a
 * circle.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const DEPCRUISE = join(ROOT, "node_modules/.bin/depcruise");
const CONFIG = join(ROOT, ".dependency-cruiser.cjs");

/** Runs the check in `cwd`; its exit code and what it printed. */
function checkLayers(cwd: string): { code: number | null; output: string } {
  const result = spawnSync(DEPCRUISE, ["src", "--config", CONFIG], { cwd, encoding: "utf8" });
  return { code: result.status, output: result.stdout + result.stderr };
}

let tree: string | undefined;
afterEach(() => {
  if (tree) rmSync(tree, { recursive: true, force: true });
  tree = undefined;
});

/** A small tree of TypeScript files (path → imports), with a tsconfig, in a temp folder. */
function makeTree(files: Record<string, string[]>): string {
  tree = mkdtempSync(join(tmpdir(), "picklebot-layers-"));
  writeFileSync(
    join(tree, "tsconfig.json"),
    JSON.stringify({ compilerOptions: { module: "NodeNext", moduleResolution: "NodeNext" } }),
  );
  for (const [path, imports] of Object.entries(files)) {
    const full = join(tree, path);
    mkdirSync(dirname(full), { recursive: true });
    const lines = imports.map((spec, index) => `import { x${index} } from "${spec}";`);
    writeFileSync(full, `${lines.join("\n")}\nexport const x = 1;\n`);
  }
  return tree;
}

describe("the layer rule", () => {
  it("holds for src/", () => {
    const { code, output } = checkLayers(ROOT);
    expect(output).toContain("no dependency violations found");
    expect(code).toBe(0);
  });

  it("holds for a tree whose imports point down", () => {
    const dir = makeTree({
      "src/ports/index.ts": [],
      "src/base/errors.ts": ["../ports/index.js"],
      "src/storage/index.ts": ["../base/errors.js", "../ports/index.js"],
      "src/server/server.ts": ["../storage/index.js"],
    });
    expect(checkLayers(dir).code).toBe(0);
  });

  it("fails on an upward import, naming the rule and both files", () => {
    const dir = makeTree({
      "src/ports/index.ts": [],
      "src/storage/queue.ts": ["../server/metrics.js"],
      "src/server/metrics.ts": ["../ports/index.js"],
    });
    const { code, output } = checkLayers(dir);
    expect(code).not.toBe(0);
    expect(output).toContain("layer-storage: src/storage/queue.ts → src/server/metrics.ts");
  });

  it("fails on a sideways import between siblings of one layer", () => {
    const dir = makeTree({
      "src/agents/runner.ts": ["../frontends/registry.js"],
      "src/frontends/registry.ts": [],
    });
    const { code, output } = checkLayers(dir);
    expect(code).not.toBe(0);
    expect(output).toContain("layer-agents");
  });

  it("fails on folders that import each other in a circle, without a module cycle", () => {
    const dir = makeTree({
      "src/server/bus/inbox.ts": ["../cron/fire.js"],
      "src/server/cron/fire.ts": [],
      "src/server/cron/worker.ts": ["../bus/delivery.js"],
      "src/server/bus/delivery.ts": [],
    });
    const { code, output } = checkLayers(dir);
    expect(code).not.toBe(0);
    expect(output).toContain("no-folder-cycle");
  });
});
