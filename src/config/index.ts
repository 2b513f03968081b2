/**
 * Configuration of a workspace: picklebot.yaml (docs/design.md §2.1), loaded, interpolated
 * and validated.
 */
export {
  APPROVAL_ACTIONS,
  type ApprovalAction,
  type ApprovalPolicy,
  approvalPolicySchema,
  DEFAULT_APPROVAL_TIMEOUT_S,
  type PathRule,
  type PolicyTools,
  type ToolApproval,
} from "./approvals.js";
export { changedKeys } from "./changes.js";
export {
  CREDENTIAL_SERVICES,
  type CredentialService,
  type CredentialServiceKind,
  credentialRefused,
} from "./credentials.js";
export { formatKeyPath, userErrorFromIssues } from "./issues.js";
export {
  CONFIG_FILE_NAME,
  CONFIG_FILE_NAMES,
  configFileOf,
  configFileSetting,
  loadConfig,
  parseYaml,
  requireWorkspaceFiles,
  resolveWorkspace,
} from "./load.js";
export {
  DEFAULT_MCP_CALL_TIMEOUT_MS,
  isStdioServer,
  MCP_SERVER_NAME_PATTERN,
  type McpHttpServerConfig,
  type McpServerConfig,
  type McpStdioServerConfig,
  mcpServerSecrets,
} from "./mcp.js";
export {
  type ModelChoice,
  type ModelEntry,
  modelChain,
  modelChoiceProblem,
  modelEntry,
  modelEntryNames,
  modelEntrySection,
  workspacePrices,
} from "./models.js";
export { allowedUserIds, enabledPlatforms, runnablePlatforms } from "./platforms.js";
export { redactConfig, secretValues } from "./redact.js";
export {
  buildConfigSchema,
  type Config,
  type ConfigSchemaContext,
  DEFAULT_FALLBACK_COOLDOWN_S,
  DEFAULT_JOB_RETENTION_H,
  DEFAULT_MODEL_ENTRY,
  type Environment,
  ID_PATTERN,
  isValidTimeZone,
  jobRetentionHours,
  type LlmConfig,
  MODEL_PROVIDER_KINDS,
  type ModelProviderKind,
  type SpeechToTextConfig,
} from "./schema.js";
export { closestMatch, didYouMean } from "./suggest.js";
