/**
 * Fallback chains (docs/guides/models.md, "Fallbacks"): a {@link ModelProvider} over the
 * named models an agent lists, tried in order for each model call.
 *
 *   first entry not cooling down ── answers ─────────────────────────► its reply
 *        │ fails in a way a retry will not fix soon (see fallbackReason)
 *        ▼ that entry cools down for `llm.fallback_cooldown_s`
 *   the next entry ── answers ─► its reply, marked with the entry and the reason
 *        │ fails too: the next, …; the last one's error is the call's
 *
 * An entry's own SDK retries (`maxRetries`) are the "short retry": only what is still
 * failing after them moves on. An error a retry could fix (a 400, a refusal of the
 * request) or a cancellation is thrown as it is: another model would not do better.
 *
 * Each call is chosen afresh, so nothing about the choice needs storing: the loop stores
 * every reply with the model that wrote it before anything else happens (a crash resumes
 * from there, and the next call starts again at the head of the chain, or skips what is
 * cooling down in this process).
 */
import { ModelError } from "../base/errors.js";
import type {
  Clock,
  ModelFallback,
  ModelProvider,
  ModelReply,
  ModelRequest,
} from "../ports/index.js";

/** One entry of a chain: its name, provider and settings. */
export interface ModelLink {
  /** The entry's name in picklebot.yaml (`default` for `llm:`). */
  name: string;
  provider: ModelProvider;
  /** The model id the entry calls. */
  model: string;
  /** The entry's `max_tokens` (the head of the chain takes the request's). */
  maxTokens: number;
}

/** The entries that failed lately, skipped until their cool-down ends; one per process. */
export class ModelCooldowns {
  readonly #clock: Clock;
  readonly #cooldownMs: number;
  readonly #until = new Map<string, { at: number; reason: string }>();

  /** `cooldownMs`: how long a failed entry is skipped (`llm.fallback_cooldown_s`). */
  constructor(clock: Clock, cooldownMs: number) {
    this.#clock = clock;
    this.#cooldownMs = cooldownMs;
  }

  /** Why `name` is skipped now, or undefined when it may be called. */
  cooling(name: string): string | undefined {
    const entry = this.#until.get(name);
    if (entry && entry.at > this.#clock.now()) return entry.reason;
    this.#until.delete(name);
    return undefined;
  }

  /** `name` failed with `reason`: skip it for the cool-down. */
  failed(name: string, reason: string): void {
    this.#until.set(name, { at: this.#clock.now() + this.#cooldownMs, reason });
  }

  /** `name` answered: no longer skipped. */
  recovered(name: string): void {
    this.#until.delete(name);
  }
}

/**
 * Why `error` should move the call to the next entry, in a few words after the entry's
 * name ("is failing (503)"); null when it should
 * not (a request the model refuses, a cancellation, anything not from the provider).
 */
export function fallbackReason(error: unknown): string | null {
  if (!(error instanceof ModelError)) return null;
  const { status } = error;
  if (status === 401 || status === 403) return `had its key refused (${status})`;
  if (status === 404) return "does not know its model (404)";
  if (!error.retryable) return null;
  if (status === 429) {
    const wait = error.retryAfterS === undefined ? "" : `, retry after ${error.retryAfterS} s`;
    return `is rate-limited (429${wait})`;
  }
  if (status !== undefined) return `is failing (${status})`;
  return "did not answer";
}

/**
 * A provider that calls `links` in order as the file header says. With one link it is
 * that link's provider. The head of the chain keeps the request's `maxTokens`.
 */
export function chainProvider(
  links: readonly ModelLink[],
  cooldowns: ModelCooldowns,
): ModelProvider {
  const [head] = links;
  if (!head) throw new RangeError("a model chain needs at least one entry");
  if (links.length === 1) return head.provider;
  const complete = (request: ModelRequest) => completeOnChain(links, cooldowns, request);
  const countTokens = head.provider.countTokens?.bind(head.provider);
  return countTokens ? { complete, countTokens } : { complete };
}

async function completeOnChain(
  links: readonly ModelLink[],
  cooldowns: ModelCooldowns,
  request: ModelRequest,
): Promise<ModelReply> {
  let first: { name: string; reason: string } | undefined;
  for (const [index, link] of links.entries()) {
    const last = index === links.length - 1;
    const cooling = cooldowns.cooling(link.name);
    if (cooling !== undefined && !last) {
      first ??= { name: link.name, reason: `${cooling}, skipped while it cools down` };
      continue;
    }
    const maxTokens = index === 0 ? request.maxTokens : link.maxTokens;
    try {
      const reply = await link.provider.complete({ ...request, model: link.model, maxTokens });
      cooldowns.recovered(link.name);
      if (!first) return reply;
      const fallback = {
        entry: link.name,
        model: link.model,
        from: first.name,
        reason: first.reason,
      };
      return { ...reply, fallback };
    } catch (thrown) {
      const reason = fallbackReason(thrown);
      if (reason === null || last || request.signal?.aborted) throw thrown;
      cooldowns.failed(link.name, reason);
      first ??= { name: link.name, reason };
    }
  }
  throw new RangeError("unreachable: the last entry of a chain returns or throws");
}

/**
 * The line a reply a fallback wrote starts with: which model answered, why, and when the
 * first is tried again.
 */
export function fallbackNotice(fallback: ModelFallback, cooldownS: number): string {
  const again =
    cooldownS > 0
      ? `tried again after ${formatCooldown(cooldownS)}`
      : "tried again on the next message";
  return `(Answered by ${fallback.entry}, ${fallback.model}: ${fallback.from} ${fallback.reason}; ${fallback.from} is ${again}.)`;
}

function formatCooldown(seconds: number): string {
  return seconds % 60 === 0 ? `${seconds / 60} min` : `${seconds} s`;
}
