/**
 * A {@link ModelProvider} whose adapter is imported on its first call: a model SDK is one
 * of the largest libraries a process can load (the Anthropic SDK: about 250 modules,
 * 20 MiB), and most commands (`status`, `jobs`, `sessions`…) and an idle server never
 * call a model.
 *
 *   const provider = lazyProvider(
 *     async () => (await import("./anthropic.js")).createAnthropicProvider(options),
 *     { countTokens: true, batches: apiKey !== "" },
 *   );
 */
import type {
  ModelBatches,
  ModelProvider,
  ModelReply,
  ModelRequest,
  TokenCountRequest,
} from "../ports/index.js";

/**
 * Which optional parts of {@link ModelProvider} the loaded provider has. They are read
 * before anything is loaded (the server starts its batch poller when `batches` exists),
 * so they must say what the loaded provider will have.
 */
export interface LazyProviderShape {
  countTokens: boolean;
  batches: boolean;
}

/**
 * A provider that calls `load` once, on its first use, and then forwards every call to
 * what it loaded. A failed load is tried again on the next call.
 */
export function lazyProvider(
  load: () => Promise<ModelProvider>,
  shape: LazyProviderShape,
): ModelProvider {
  let loading: Promise<ModelProvider> | null = null;
  const loaded = (): Promise<ModelProvider> => {
    loading ??= load().catch((thrown: unknown) => {
      loading = null;
      throw thrown;
    });
    return loading;
  };
  const batchesOf = async (): Promise<ModelBatches> => {
    const { batches } = await loaded();
    if (!batches) throw new Error("the loaded model provider has no batch API");
    return batches;
  };
  const batches: ModelBatches = {
    submit: async (customId, request) => (await batchesOf()).submit(customId, request),
    listSince: async (since, signal) => (await batchesOf()).listSince(since, signal),
    status: async (batchId, signal) => (await batchesOf()).status(batchId, signal),
    outcome: async (batchId, customId, signal) =>
      (await batchesOf()).outcome(batchId, customId, signal),
  };
  return {
    complete: async (request: ModelRequest): Promise<ModelReply> =>
      (await loaded()).complete(request),
    ...(shape.countTokens
      ? {
          countTokens: async (request: TokenCountRequest): Promise<number> => {
            const provider = await loaded();
            if (!provider.countTokens) throw new Error("the loaded model provider cannot count");
            return provider.countTokens(request);
          },
        }
      : {}),
    ...(shape.batches ? { batches } : {}),
  };
}
