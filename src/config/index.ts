/**
 * Configuration of a workspace: picklebot.yaml (DESIGN.md §2.1), loaded, interpolated
 * and validated.
 */
export { formatKeyPath, userErrorFromIssues } from "./issues.js";
export { CONFIG_FILE_NAME, loadConfig, loadDotEnv, parseYaml, resolveWorkspace } from "./load.js";
export { redactConfig } from "./redact.js";
export {
  buildConfigSchema,
  type Config,
  type ConfigSchemaContext,
  type Environment,
  hostTimeZone,
  ID_PATTERN,
  isValidTimeZone,
} from "./schema.js";
export { closestMatch, didYouMean } from "./suggest.js";
