/**
 * What a Discord failure means for the core, decided once where the error is made: a
 * {@link ChatPlatformError} that says whether a retry can help, with the owner's fix for
 * a refused login, and never the bot token.
 */
import { DiscordAPIError, HTTPError, RateLimitError } from "@discordjs/rest";
import { ChatPlatformError, toError } from "../../base/errors.js";
import { redactError } from "../../base/redact.js";
import { credentialRefused } from "../../config/index.js";

/** The bot token refused: what the gateway closes with (4004), or a REST 401. */
const TOKEN_REFUSED_CLOSE = 4004;

/**
 * Gateway closes after which @discordjs/ws gives up: the close code, the error it
 * rejects `login()` with, and what the owner has to do.
 */
const UNRECOVERABLE_CLOSES = [
  {
    code: TOKEN_REFUSED_CLOSE,
    error: "Authentication failed",
    fix: credentialRefused("discord", "gateway close 4004, Authentication failed"),
  },
  {
    code: 4013,
    error: "Used invalid intents",
    fix: "Discord rejected the intents picklebot asked for; please report this as a bug",
  },
  {
    code: 4014,
    error: "Used disallowed intents",
    fix:
      "Discord refused the Message Content intent; enable it in the Developer Portal under " +
      "Bot → Privileged Gateway Intents → Message Content Intent, then restart",
  },
] as const;

/** An unrecoverable gateway close, by close code or login error. */
function unrecoverableClose(match: { code?: unknown; message?: string }) {
  return UNRECOVERABLE_CLOSES.find(
    (entry) => entry.code === match.code || entry.error === match.message,
  );
}

/** The owner's fix for an unrecoverable gateway close, by close code or login error. */
export function unrecoverableFix(match: { code?: unknown; message?: string }): string | undefined {
  return unrecoverableClose(match)?.fix;
}

/** The error, or a copy whose message and stack no longer contain the bot token. */
export function scrubError(thrown: unknown, token: string): Error {
  return redactError(toError(thrown), [token]);
}

/** What a failed REST call was for, and what its message may need. */
export interface RequestFailure {
  /** What the call did, as in "could not send a message". */
  action: string;
  chatId: string;
  token: string;
  /** The REST client's timeout: an abort means it passed. */
  callTimeoutMs: number;
}

/**
 * A failed send, edit or typing call: a 429 retryable after Discord's wait, a 5xx, a
 * timeout or a network error retryable, any other refusal final.
 */
export function requestError(thrown: unknown, failure: RequestFailure): ChatPlatformError {
  const context = { platform: "discord", chatId: failure.chatId };
  const cause = scrubError(thrown, failure.token);
  const prefix = `Discord: could not ${failure.action} in channel ${failure.chatId}`;
  if (thrown instanceof RateLimitError) {
    const retryAfterS = Math.max(thrown.retryAfter, thrown.timeToReset) / 1000;
    return new ChatPlatformError(`${prefix}: rate limited, retry after ${retryAfterS} s`, {
      cause,
      context,
      retryable: true,
      retryAfterS,
    });
  }
  if (thrown instanceof DiscordAPIError || thrown instanceof HTTPError) {
    const code = thrown instanceof DiscordAPIError ? `, code ${thrown.code}` : "";
    const answer = `${cause.message} (HTTP ${thrown.status}${code})`;
    const refused = thrown.status === 401;
    const reason = refused ? credentialRefused("discord", answer) : answer;
    return new ChatPlatformError(`${prefix}: ${reason}`, {
      cause,
      context,
      retryable: thrown.status >= 500,
      credentialRefused: refused,
    });
  }
  // No send, edit or typing carries a signal: an abort is the REST client's own timeout.
  const reason =
    cause.name === "AbortError"
      ? `no answer within ${failure.callTimeoutMs / 1000} s; abandoned`
      : cause.message;
  return new ChatPlatformError(`${prefix}: ${reason}`, { cause, context, retryable: true });
}

/**
 * A failed login: a refused token (a 401 to the gateway lookup, or the gateway's close
 * 4004) or intent is final and says what to fix.
 */
export function loginError(thrown: unknown, token: string): ChatPlatformError {
  const cause = scrubError(thrown, token);
  const code = (thrown as { code?: unknown }).code;
  if ((thrown instanceof DiscordAPIError || thrown instanceof HTTPError) && thrown.status === 401) {
    return new ChatPlatformError(credentialRefused("discord", "HTTP 401, TokenInvalid"), {
      cause,
      context: { platform: "discord", key: "discord.bot_token" },
      credentialRefused: true,
    });
  }
  const close = unrecoverableClose({ code, message: cause.message });
  return new ChatPlatformError(`Discord: could not connect: ${close?.fix ?? cause.message}`, {
    cause,
    context: { platform: "discord" },
    retryable: close === undefined,
    credentialRefused: close?.code === TOKEN_REFUSED_CLOSE,
  });
}
