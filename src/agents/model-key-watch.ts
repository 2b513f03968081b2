/**
 * The model provider of a running server, watched for a refused API key: the first call
 * the API refuses the key for (a {@link PicklebotError} with `credentialRefused`, whose
 * message says what to do) is logged once, and the refusal is shown on `/healthz`, the
 * dashboard and `picklebot status` until a call works again. Each job such a call fails
 * is failed as before: a refused key is not retried.
 */
import { PicklebotError } from "../base/errors.js";
import type { Refusal } from "../base/refusal.js";
import type { ModelProvider } from "../ports/index.js";

/** The log line of a refused model API key. */
const KEY_REFUSED = "the model API refused the key; every model call fails until it is fixed";

/** `provider`, telling `refusal` of each refused key and each call that worked. */
export function watchModelKey(provider: ModelProvider, refusal: Refusal): ModelProvider {
  const watched = async <T>(call: () => Promise<T>): Promise<T> => {
    try {
      const result = await call();
      refusal.end();
      return result;
    } catch (error) {
      if (error instanceof PicklebotError && error.credentialRefused) {
        refusal.refused(error.message, KEY_REFUSED);
      }
      throw error;
    }
  };
  const { countTokens, batches, contextWindow } = provider;
  return {
    complete: (request) => watched(() => provider.complete(request)),
    ...(countTokens
      ? { countTokens: (request) => watched(() => countTokens.call(provider, request)) }
      : {}),
    ...(batches ? { batches } : {}),
    ...(contextWindow ? { contextWindow: contextWindow.bind(provider) } : {}),
  };
}
