/** A validated {@link Config} for in-process tests, as picklebot.yaml would give it. */
import { buildConfigSchema, type Config } from "../../src/config/index.js";

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
