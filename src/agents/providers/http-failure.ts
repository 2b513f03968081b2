/**
 * What every HTTP model adapter reads the same way from a failed call: whether its status
 * is worth a retry, how long its Retry-After asks to wait, and the root cause of a
 * connection failure; and the fetch that keeps the SDKs' own retries short.
 */

/** Whether a retry of the same request may succeed: 408, 409, 429 and every 5xx. */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

/** The wait a `retry-after` header asks for, in seconds (a number or an HTTP date). */
export function retryAfterSeconds(headers: Headers | undefined): number | undefined {
  const value = headers?.get("retry-after");
  if (value == null || value.trim() === "") return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - Date.now()) / 1000));
}

/**
 * The longest Retry-After the SDK's own retry (the "short retry" of
 * docs/guides/models.md, "Fallbacks") waits out. The SDKs honour any Retry-After, an hour
 * included, inside one call; a longer wait is the caller's: the fallback chain moves on,
 * or the worker holds the job for that long without spending an attempt.
 */
export const SHORT_RETRY_MAX_WAIT_S = 2;

/**
 * `base` (default: the global fetch), except that a failed response asking for a longer
 * wait than {@link SHORT_RETRY_MAX_WAIT_S} carries `x-should-retry: false`, which both
 * SDKs obey: the call fails at once with the response's status and Retry-After.
 */
export function shortRetryFetch(base: typeof fetch = fetch): typeof fetch {
  return async (input, init) => {
    const response = await base(input, init);
    if (response.ok || !asksLongWait(response.headers)) return response;
    const headers = new Headers(response.headers);
    headers.set("x-should-retry", "false");
    const { status, statusText } = response;
    return new Response(response.body, { status, statusText, headers });
  };
}

/** Whether `retry-after-ms` or `retry-after` asks for more than the short retry waits. */
function asksLongWait(headers: Headers): boolean {
  const ms = Number(headers.get("retry-after-ms") ?? Number.NaN);
  const seconds = Number.isFinite(ms) ? ms / 1000 : retryAfterSeconds(headers);
  return seconds !== undefined && seconds > SHORT_RETRY_MAX_WAIT_S;
}

/** The innermost cause, e.g. `connect ECONNREFUSED 127.0.0.1:9` under undici's "fetch failed". */
export function describeCause(error: Error): string {
  let innermost: Error = error;
  while (innermost.cause instanceof Error) innermost = innermost.cause;
  return innermost.message.replace(/\.$/, "");
}
