/**
 * What a Slack failure means for the core, decided once where it is made: a
 * {@link ChatPlatformError} that says whether a retry can help (and after how long), with
 * the owner's fix for a refused token, and never a token.
 *
 *   HTTP 429 (`ratelimited`, Retry-After)          ─► retryable after Slack's wait
 *   HTTP 5xx, Slack's `internal_error`,
 *     `fatal_error`, `service_unavailable`,
 *     `request_timeout`, a network error, a timeout ─► retryable
 *   a refused token (`invalid_auth`, `not_authed`,
 *     `account_inactive`, `token_revoked`, …)       ─► final, with the fix
 *   any other Slack error (`channel_not_found`,
 *     `not_in_channel`, `msg_too_long`, …)          ─► final
 */
import { ErrorCode, type WebAPIPlatformError } from "@slack/web-api";
import { ChatPlatformError, toError } from "../../base/errors.js";
import { redactError } from "../../base/redact.js";
import { credentialRefused } from "../../config/index.js";

/** Slack's answers that mean the token is not (or no longer) accepted. */
const TOKEN_REFUSALS = new Set([
  "not_authed",
  "invalid_auth",
  "account_inactive",
  "token_revoked",
  "token_expired",
  "not_allowed_token_type",
  "team_disabled",
]);

/** Slack's answers that a later try may not get. */
const TRANSIENT = new Set([
  "ratelimited",
  "internal_error",
  "fatal_error",
  "service_unavailable",
  "request_timeout",
]);

/** What a failed call was, for its message. */
export interface SlackFailure {
  /** The Web API method, or what was done ("answer a button press"). */
  method: string;
  /** The token the call used: `slack.bot_token` or `slack.app_token`. */
  key: "slack.bot_token" | "slack.app_token";
  /** Every token, to keep out of messages. */
  tokens: readonly string[];
  /** The call's time limit: a timeout names it. */
  timeoutMs: number;
  chatId?: string;
}

/** The failure of one Slack call as a {@link ChatPlatformError}. */
export function slackError(thrown: unknown, failure: SlackFailure): ChatPlatformError {
  if (thrown instanceof ChatPlatformError) return thrown;
  const cause = redactError(toError(thrown), failure.tokens);
  const context = {
    platform: "slack",
    method: failure.method,
    ...(failure.chatId === undefined ? {} : { chatId: failure.chatId }),
  };
  const prefix = `slack: ${failure.method}${failure.chatId ? ` in ${failure.chatId}` : ""}`;
  const code = (thrown as { code?: unknown }).code;
  if (code === ErrorCode.RateLimitedError) {
    const retryAfterS = (thrown as { retryAfter: number }).retryAfter;
    return new ChatPlatformError(`${prefix}: rate limited, retry after ${retryAfterS} s`, {
      cause,
      context,
      retryable: true,
      retryAfterS,
    });
  }
  if (code === ErrorCode.PlatformError) {
    const error = String((thrown as WebAPIPlatformError).data.error);
    if (TOKEN_REFUSALS.has(error)) {
      const why = `${failure.key.replace("slack.", "")}, ${failure.method}: ${error}`;
      return new ChatPlatformError(credentialRefused("slack", why), {
        cause,
        context: { ...context, key: failure.key },
        credentialRefused: true,
      });
    }
    return new ChatPlatformError(`${prefix}: ${error}`, {
      cause,
      context,
      retryable: TRANSIENT.has(error),
    });
  }
  if (code === ErrorCode.HTTPError) {
    const status = (thrown as { statusCode: number }).statusCode;
    return new ChatPlatformError(`${prefix}: HTTP ${status}`, {
      cause,
      context,
      retryable: status >= 500 || status === 408,
    });
  }
  const original = (thrown as { original?: unknown }).original ?? thrown;
  const timedOut = (original as { name?: unknown }).name === "TimeoutError";
  const reason = timedOut
    ? `no answer within ${failure.timeoutMs / 1000} s; abandoned`
    : cause.message;
  return new ChatPlatformError(`${prefix}: ${reason}`, { cause, context, retryable: true });
}
