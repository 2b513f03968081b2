import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.{ts,tsx}"],
    globalSetup: ["test/helpers/build.ts"],
    // A limit against hangs, not a speed check: a slow host makes tests slower, not red.
    testTimeout: 90_000,
    hookTimeout: 90_000,
    pool: "forks",
    // Most end-to-end files wait on the processes they start, so at least two files run
    // at once, on two cores too (vitest's default there is one): half the wall time.
    maxWorkers: Math.max(2, availableParallelism() - 1),
  },
});
