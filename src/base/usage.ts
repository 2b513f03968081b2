/**
 * Token counts, summed the same way by the agent loop (one turn) and the history stores
 * (one session).
 */
import type { TokenUsage } from "../ports/index.js";

/** No tokens used yet. */
export function zeroUsage(): TokenUsage {
  return { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };
}

/** The sum of two token counts, as a new record. */
export function addUsage(total: TokenUsage, more: TokenUsage): TokenUsage {
  return {
    input: total.input + more.input,
    output: total.output + more.output,
    cacheRead: total.cacheRead + more.cacheRead,
    cacheWrite: total.cacheWrite + more.cacheWrite,
    ...oneHourWrites((total.cacheWrite1h ?? 0) + (more.cacheWrite1h ?? 0)),
    ...webSearches((total.webSearches ?? 0) + (more.webSearches ?? 0)),
    ...serviceCost((total.serviceUsd ?? 0) + (more.serviceUsd ?? 0)),
  };
}

/** `serviceUsd` when there is any: a call no speech service charged for does not name it. */
export function serviceCost(usd: number | null | undefined): Pick<TokenUsage, "serviceUsd"> {
  return usd ? { serviceUsd: usd } : {};
}

/** `webSearches` when there are any: a call that searched nothing does not name them. */
export function webSearches(count: number | null | undefined): Pick<TokenUsage, "webSearches"> {
  return count ? { webSearches: count } : {};
}

/** `cacheWrite1h` when there are any: a record without 1-hour writes does not name them. */
export function oneHourWrites(tokens: number | null | undefined): Pick<TokenUsage, "cacheWrite1h"> {
  return tokens ? { cacheWrite1h: tokens } : {};
}
