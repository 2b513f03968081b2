/**
 * Secrets (API keys, bot tokens, database passwords) leave out of every message, error
 * and log line the same way, with the same marker (DESIGN §8).
 */

/** What a secret is replaced by, wherever it would have been shown. */
export const REDACTED = "[redacted]";

/** Keys whose values are secrets: never logged, never repeated in an error. */
export const SECRET_KEYS: readonly string[] = [
  "api_key",
  "apiKey",
  "bot_token",
  "botToken",
  "token",
  "authorization",
  "Authorization",
];

/** Shorter "secrets" would also match ordinary words; real keys and tokens are long. */
const MIN_SECRET_LENGTH = 8;

/** The password of a URL: `scheme://user:<password>@host`. */
const URL_PASSWORD = /(\b[a-z][a-z0-9+.-]*:\/\/[^\s:/@]*:)[^\s@/]+@/gi;

/**
 * `text` with each of `secrets` (the ones long enough to be real) and the password of
 * every URL in it replaced by {@link REDACTED}:
 * `postgres://bot:[redacted]@db/picklebot`.
 */
export function redactSecrets(text: string, secrets: Iterable<string | undefined> = []): string {
  let clean = text.replace(URL_PASSWORD, `$1${REDACTED}@`);
  for (const secret of secrets) {
    if (secret !== undefined && secret.length >= MIN_SECRET_LENGTH) {
      clean = clean.replaceAll(secret, REDACTED);
    }
  }
  return clean;
}

/**
 * The error itself when neither its message nor its stack holds a secret, else a copy
 * (same name) whose message and stack are redacted by {@link redactSecrets}.
 */
export function redactError(error: Error, secrets: Iterable<string | undefined> = []): Error {
  const list = [...secrets];
  const message = redactSecrets(error.message, list);
  const stack = error.stack === undefined ? undefined : redactSecrets(error.stack, list);
  if (message === error.message && stack === error.stack) return error;
  const copy = new Error(message);
  copy.name = error.name;
  copy.stack = stack;
  return copy;
}
