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
import type { LlmConfig, ModelProviderKind } from "../../config/index.js";
import type { MediaReader, ModelProvider } from "../../ports/index.js";
import { createAnthropicProvider } from "./anthropic.js";

/** How the registry makes one kind of provider. */
export interface ModelProviderEntry {
  /**
   * The provider `llm` configures (its key, endpoint, timeout, cache lifetime), reading
   * the files of image and document blocks with `readMedia`.
   */
  create(llm: LlmConfig, readMedia?: MediaReader): ModelProvider;
}

/** Every provider `llm.provider` can name. */
export const modelProviders = {
  anthropic: {
    create: (llm, readMedia) =>
      createAnthropicProvider({
        ...(readMedia ? { readMedia } : {}),
        apiKey: llm.api_key,
        baseURL: llm.base_url,
        timeoutMs: llm.timeout_s * 1000,
        prefixCacheTtl: llm.prompt_cache_ttl,
      }),
  },
} satisfies Record<ModelProviderKind, ModelProviderEntry>;

/** The model provider the `llm` section names. */
export function createModelProvider(llm: LlmConfig, readMedia?: MediaReader): ModelProvider {
  const entry: ModelProviderEntry = modelProviders[llm.provider];
  return entry.create(llm, readMedia);
}
