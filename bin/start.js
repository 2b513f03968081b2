#!/usr/bin/env node
/**
 * `npm start`: brings dist/ up to date when run from a clone, then runs `picklebot server`
 * in this same process. package.json runs it with `exec`, so the shell npm starts is
 * replaced by node: the SIGTERM a service manager sends to npm reaches the server, which
 * stops gracefully and exits 0, and npm exits with it. Nothing is left holding the port
 * or the workspace lock.
 */
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const compiler = fileURLToPath(new URL("../node_modules/typescript/bin/tsc", import.meta.url));
const built = fileURLToPath(new URL("../dist/cli/main.js", import.meta.url));

if (existsSync(new URL("../src", import.meta.url)) && existsSync(compiler)) {
  // Incremental: a second start with nothing changed takes about a second.
  execFileSync(process.execPath, [compiler, "-p", "tsconfig.build.json"], {
    cwd: root,
    stdio: "inherit",
  });
} else if (!existsSync(built)) {
  process.stderr.write(
    "picklebot: dist/ is missing and TypeScript is not installed; run `npm install` (which builds) first\n",
  );
  process.exit(1);
}
process.argv.splice(2, 0, "server");
await import("../dist/cli/main.js");
