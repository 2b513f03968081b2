/**
 * What every HTTP model adapter reads the same way from a failed call: whether its status
 * is worth a retry, how long its Retry-After asks to wait, and the root cause of a
 * connection failure.
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

/** The innermost cause, e.g. `connect ECONNREFUSED 127.0.0.1:9` under undici's "fetch failed". */
export function describeCause(error: Error): string {
  let innermost: Error = error;
  while (innermost.cause instanceof Error) innermost = innermost.cause;
  return innermost.message.replace(/\.$/, "");
}
