/**
 * The model-provider registry: one entry per value of `llm.provider`, each making its
 * {@link ModelProvider} from the `llm` config section. The record is checked against the
 * config's enum, so a value added there without an entry here does not compile, and a new
 * provider is one entry plus its adapter (a file of this folder, run against
 * test/agents/provider.contract.ts).
 *
 * An entry must not load its SDK when it is made: `create` runs for every command that
 * loads the workspace, most of which never call the model. The adapter imports its SDK
 * on its first call (see anthropic.ts).
 */
import { isLocalEndpoint } from "../../base/local-endpoint.js";
import type { LlmConfig, ModelProviderKind } from "../../config/index.js";
import type { MediaReader, ModelProvider } from "../../ports/index.js";
import { createAnthropicProvider } from "./anthropic.js";
import {
  createOpenAiCompatibleProvider,
  envReferenceFor,
  OPENAI_BASE_URL,
} from "./openai-compatible.js";

/** How the registry makes one kind of provider. */
export interface ModelProviderEntry {
  /**
   * The provider `llm` configures (its key, endpoint, timeout, cache lifetime), reading
   * the files of image and document blocks with `readMedia`; `section` is where its keys
   * are in picklebot.yaml (`llm`, `models.haiku`), as its messages name them.
   */
  create(llm: LlmConfig, readMedia: MediaReader | undefined, section: string): ModelProvider;
  /**
   * Features of picklebot that are off with this provider, as `doctor` and
   * docs/guides/models.md name them: nothing is sent for them.
   */
  featuresOff: readonly string[];
  /**
   * What the server logs at start when `llm` (the keys under `section` of
   * picklebot.yaml) has no key and this provider needs one; null when it needs none (a
   * local server).
   */
  missingKey(llm: LlmConfig, section: string): string | null;
}

/** What only Anthropic's API has (docs/guides/models.md, "What only Anthropic has"). */
const ANTHROPIC_ONLY = [
  "prompt-cache breakpoints (the endpoint caches prompt prefixes by itself, if it does)",
  "the Batch API (batch: true crons run as normal calls, at the full price)",
  "count_tokens (request sizes are estimated)",
  "PDF document blocks",
  "server-side tools",
] as const;

/** Every provider `llm.provider` can name. */
export const modelProviders = {
  anthropic: {
    create: (llm, readMedia, section) =>
      createAnthropicProvider({
        ...(readMedia ? { readMedia } : {}),
        section,
        apiKey: llm.api_key,
        baseURL: llm.base_url,
        timeoutMs: llm.timeout_s * 1000,
        prefixCacheTtl: llm.prompt_cache_ttl,
        vision: llm.vision,
      }),
    featuresOff: [],
    missingKey: (llm, section) =>
      llm.api_key
        ? null
        : `no model API key for ${section}: set ANTHROPIC_API_KEY (or ${section}.api_key in picklebot.yaml); its jobs fail until one is set`,
  },
  "openai-compatible": {
    create: (llm, readMedia, section) =>
      createOpenAiCompatibleProvider({
        ...(readMedia ? { readMedia } : {}),
        section,
        apiKey: llm.api_key,
        baseURL: llm.base_url,
        timeoutMs: llm.timeout_s * 1000,
        vision: llm.vision,
      }),
    featuresOff: ANTHROPIC_ONLY,
    missingKey: (llm, section) => {
      const baseUrl = llm.base_url ?? OPENAI_BASE_URL;
      if (llm.api_key || isLocalEndpoint(baseUrl)) return null;
      return `no model API key for ${baseUrl}: set ${section}.api_key in picklebot.yaml (e.g. api_key: ${envReferenceFor(baseUrl)}); its jobs fail until one is set`;
    },
  },
} satisfies Record<ModelProviderKind, ModelProviderEntry>;

/**
 * The model provider the `llm` section names (a named model's, resolved: its keys are
 * under `section` of picklebot.yaml).
 */
export function createModelProvider(
  llm: LlmConfig,
  readMedia?: MediaReader,
  section = "llm",
): ModelProvider {
  const entry: ModelProviderEntry = modelProviders[llm.provider];
  return entry.create(llm, readMedia, section);
}
