import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";

/** Builds dist/ once before the suites, so end-to-end tests run the real CLI. */
export default function buildOnce(): void {
  const root = fileURLToPath(new URL("../..", import.meta.url));
  // tsc emits even with type errors; `npm run typecheck` is the gate for those.
  try {
    execFileSync(
      process.execPath,
      ["node_modules/typescript/bin/tsc", "-p", "tsconfig.build.json"],
      {
        cwd: root,
        stdio: "inherit",
      },
    );
  } catch {
    process.stderr.write("build: tsc reported type errors (see above); testing what it emitted\n");
  }
}
