/** A validated {@link Config} for in-process tests, as picklebot.yaml would give it. */
import { systemClock } from "../../src/base/clock.js";
import { buildConfigSchema, type Config } from "../../src/config/index.js";
import type { Storage } from "../../src/ports/index.js";
import { openStorage } from "../../src/storage/index.js";

/**
 * The config of a picklebot.yaml holding `yaml` (snake_case keys, as a user writes them),
 * for `workspace`; no environment variable is read.
 */
export function testConfig(workspace: string, yaml: Record<string, unknown> = {}): Config {
  return buildConfigSchema({ env: {}, workspace }).parse({
    timezone: "UTC",
    http: { enabled: false },
    ...yaml,
  });
}

/**
 * Runs `use` on the storage of `workspace` (its default SQLite database), closed before a
 * CLI or server child process opens it.
 */
export async function withWorkspaceStorage<T>(
  workspace: string,
  use: (storage: Storage) => Promise<T>,
): Promise<T> {
  const storage = await openStorage(testConfig(workspace), systemClock);
  try {
    return await use(storage);
  } finally {
    await storage.close();
  }
}
