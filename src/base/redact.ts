/**
 * Secrets (API keys, bot tokens, database passwords) leave out of every message, error
 * and log line the same way, with the same marker (docs/design.md §8).
 */

/** What a secret is replaced by, wherever it would have been shown. */
export const REDACTED = "[redacted]";

/** Keys whose values are secrets: never logged, never repeated in an error. */
export const SECRET_KEYS: readonly string[] = [
  "api_key",
  "apiKey",
  "bot_token",
  "botToken",
  "app_token",
  "appToken",
  "token",
  "authorization",
  "Authorization",
];

/** Shorter "secrets" would also match ordinary words; real keys and tokens are long. */
const MIN_SECRET_LENGTH = 8;

/** The password of a URL: `scheme://user:<password>@host`. */
const URL_PASSWORD = /(\b[a-z][a-z0-9+.-]*:\/\/[^\s:/@]*:)[^\s@/]+@/gi;

/**
 * `text` with each of `secrets` (the ones long enough to be real), in any of the forms
 * {@link secretForms} lists, and the password of every URL in it replaced by
 * {@link REDACTED}: `postgres://bot:[redacted]@db/picklebot`.
 */
export function redactSecrets(text: string, secrets: Iterable<string | undefined> = []): string {
  return secretRedactor(secrets)(text);
}

/**
 * {@link redactSecrets} for `secrets`, with their forms worked out once: for what redacts
 * many texts (every log line, every piece of a streamed reply).
 */
export function secretRedactor(secrets: Iterable<string | undefined>): (text: string) => string {
  const forms = [...secrets].flatMap(secretForms);
  return (text) => {
    let clean = text.replace(URL_PASSWORD, `$1${REDACTED}@`);
    for (const form of forms) clean = clean.replaceAll(form, REDACTED);
    return clean;
  };
}

/**
 * A copy of a JSON-like value (a tool's input, a message's content) with every string in
 * it passed through {@link redactSecrets}.
 */
export function redactStrings<T>(value: T, secrets: readonly string[]): T {
  if (secrets.length === 0) return value;
  const redact = secretRedactor(secrets);
  const visit = (item: unknown): unknown => {
    if (typeof item === "string") return redact(item);
    if (Array.isArray(item)) return item.map(visit);
    if (item !== null && typeof item === "object") {
      return Object.fromEntries(Object.entries(item).map(([key, inner]) => [key, visit(inner)]));
    }
    return item;
  };
  return visit(value) as T;
}

/**
 * The forms in which a secret shows in text: as it is, URL-encoded, and in base64
 * (standard and URL-safe) at each of the three alignments a longer base64 text can give
 * it, so `echo $TOKEN | base64` is caught too. None for a secret too short to be real.
 */
function secretForms(secret: string | undefined): string[] {
  if (secret === undefined || secret.length < MIN_SECRET_LENGTH) return [];
  const bytes = Buffer.from(secret, "utf8");
  const forms = new Set([secret, encodeURIComponent(secret)]);
  for (const shift of [0, 1, 2]) {
    const whole = bytes.subarray(shift, shift + Math.floor((bytes.length - shift) / 3) * 3);
    forms.add(whole.toString("base64"));
    forms.add(whole.toString("base64url"));
  }
  return [...forms].sort((a, b) => b.length - a.length);
}

/**
 * Redacts text that arrives in pieces (a streamed reply) before passing it on to `emit`.
 * The end of what came so far that could be the start of a secret is held back until
 * the next piece shows whether it is one, or until {@link SecretStreamRedactor.end}.
 */
export class SecretStreamRedactor {
  readonly #redact: (text: string) => string;
  readonly #forms: string[];
  readonly #emit: (text: string) => void;
  #held = "";

  constructor(secrets: readonly string[], emit: (text: string) => void) {
    this.#redact = secretRedactor(secrets);
    this.#forms = secrets.flatMap(secretForms);
    this.#emit = emit;
  }

  /** Takes the next piece of the text. */
  write(piece: string): void {
    const clean = this.#redact(this.#held + piece);
    const cut = clean.length - this.#heldBack(clean);
    this.#held = clean.slice(cut);
    if (cut > 0) this.#emit(clean.slice(0, cut));
  }

  /** The text is complete: passes on what was held back. */
  end(): void {
    if (this.#held !== "") this.#emit(this.#held);
    this.#held = "";
  }

  /** Length of the longest end of `text` that begins one of the secrets' forms. */
  #heldBack(text: string): number {
    let longest = 0;
    for (const form of this.#forms) {
      for (let length = Math.min(form.length - 1, text.length); length > longest; length--) {
        if (text.endsWith(form.slice(0, length))) longest = length;
      }
    }
    return longest;
  }
}

/** The password of a URL (decoded), if it has one. */
export function passwordOfUrl(url: string): string | undefined {
  try {
    return decodeURIComponent(new URL(url).password) || undefined;
  } catch {
    return undefined;
  }
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

/**
 * Shapes of credentials, for text that must never hold one (a memory entry): what each
 * looks like, and its name for the refusal. The password of a URL is one of them.
 */
const SECRET_SHAPES: readonly { what: string; pattern: RegExp }[] = [
  { what: "an API key (sk-…)", pattern: /\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}/ },
  { what: "a GitHub token", pattern: /\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_\w{40,})/ },
  { what: "a Slack token", pattern: /\bxox[abpors]-[A-Za-z0-9-]{10,}/ },
  { what: "an AWS access key", pattern: /\b(?:AKIA|ASIA)[A-Z0-9]{16}\b/ },
  { what: "a Google API key", pattern: /\bAIza[A-Za-z0-9_-]{35}/ },
  { what: "a Telegram bot token", pattern: /\b\d{6,12}:[A-Za-z0-9_-]{35}\b/ },
  { what: "a private key", pattern: /-----BEGIN [A-Z ]*PRIVATE KEY-----/ },
  { what: "a JSON web token", pattern: /\beyJ[\w-]{10,}\.[\w-]{10,}\.[\w-]{10,}/ },
  { what: "a bearer token", pattern: /\bbearer\s+[\w.~+/-]{20,}/i },
  { what: "the password of a URL", pattern: new RegExp(URL_PASSWORD.source, "i") },
  {
    what: "a password, key or token written after its name",
    pattern:
      /\b(?:password|passwd|pwd|passphrase|secret|api[ _-]?key|token|pin)\s*(?:is|=|:)\s*(?=\S*[\d\W_])\S{6,}/i,
  },
  {
    what: "a long random-looking string (a key or token)",
    pattern: /(?<![\w/+-])(?=[\w+/-]*\d)(?=[\w+/-]*[a-z])(?=[\w+/-]*[A-Z])[\w+/-]{32,}/,
  },
  { what: `a value already replaced by ${REDACTED}`, pattern: /\[redacted\]/i },
];

/**
 * What in `text` looks like a secret (a credential's shape, or one of `secrets` in any
 * of its forms), named for a person or a model to act on; null when nothing does.
 */
export function secretShapeIn(
  text: string,
  secrets: Iterable<string | undefined> = [],
): string | null {
  if ([...secrets].flatMap(secretForms).some((form) => text.includes(form))) {
    return "a secret of this workspace's configuration";
  }
  return SECRET_SHAPES.find(({ pattern }) => pattern.test(text))?.what ?? null;
}
