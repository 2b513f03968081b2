/**
 * What model calls cost: list prices in USD per million tokens, by model id prefix
 * (`claude-sonnet-4-5-20250929` is priced as `claude-sonnet-4-5`), with the workspace's
 * `llm.prices` over them; a batch call costs half (docs/guides/cost.md, "Prices").
 *
 * Anthropic's: cache writes are the 5-minute kind (1.25 × input), cache reads 0.1 ×
 * input; checked against https://platform.claude.com/docs/en/about-claude/pricing on
 * 2026-11-25. OpenAI's (`openai-compatible` on OpenAI's own API): cache reads at the
 * cached-input rate, no write premium; those of https://platform.openai.com/docs/pricing
 * as pages quoting it in 2026 gave them (the page itself was not reachable from here:
 * check it before relying on them).
 */
import type { TokenUsage } from "../ports/index.js";

/** One model's rates, USD per million tokens. */
export interface ModelPrice {
  input: number;
  output: number;
  cache_read: number;
  cache_write: number;
}

/** Prices by model id (or id prefix), as `llm.prices` writes them. */
export type PriceTable = Readonly<Record<string, ModelPrice>>;

/** The list price of a model whose cache rates follow the usual multipliers. */
function listPrice(input: number, output: number): ModelPrice {
  return { input, output, cache_read: input * 0.1, cache_write: input * 1.25 };
}

/** An OpenAI model's price: cached input at its own rate, no write premium. */
function openAiPrice(input: number, output: number, cachedInput: number): ModelPrice {
  return { input, output, cache_read: cachedInput, cache_write: input };
}

/** The built-in table (see the file header for its date). */
export const LIST_PRICES: PriceTable = {
  "claude-opus-4": listPrice(15, 75),
  "claude-opus-4-0": listPrice(15, 75),
  "claude-opus-4-1": listPrice(15, 75),
  "claude-opus-4-5": listPrice(5, 25),
  "claude-opus-4-6": listPrice(5, 25),
  "claude-opus-4-7": listPrice(5, 25),
  "claude-opus-4-8": listPrice(5, 25),
  "claude-sonnet-4": listPrice(3, 15),
  "claude-3-7-sonnet": listPrice(3, 15),
  "claude-haiku-4-5": listPrice(1, 5),
  "claude-3-5-haiku": listPrice(0.8, 4),
  "gpt-4o": openAiPrice(2.5, 10, 1.25),
  "gpt-4o-mini": openAiPrice(0.15, 0.6, 0.075),
  "gpt-4.1": openAiPrice(2, 8, 0.5),
  "gpt-4.1-mini": openAiPrice(0.4, 1.6, 0.1),
  "gpt-4.1-nano": openAiPrice(0.1, 0.4, 0.025),
  "gpt-5": openAiPrice(1.25, 10, 0.125),
  "gpt-5-mini": openAiPrice(0.25, 2, 0.025),
  "gpt-5-nano": openAiPrice(0.05, 0.4, 0.005),
  o3: openAiPrice(2, 8, 0.5),
  "o3-mini": openAiPrice(1.1, 4.4, 0.55),
  "o4-mini": openAiPrice(1.1, 4.4, 0.275),
};

/** The share of the list price a batch call pays. */
export const BATCH_DISCOUNT = 0.5;

/**
 * The price of `model`: the overrides' entry for it, else the longest table key that is
 * the id itself or a prefix of it followed by `-`; undefined when neither knows it.
 */
export function priceOf(
  model: string,
  overrides: PriceTable = NO_OVERRIDES,
): ModelPrice | undefined {
  let known = lookups.get(overrides);
  if (known === undefined) {
    known = new Map();
    lookups.set(overrides, known);
  }
  if (!known.has(model)) known.set(model, lookUp(model, overrides));
  return known.get(model);
}

/** No `llm.prices` overrides: the list prices alone. */
const NO_OVERRIDES: PriceTable = {};

/**
 * Answers of {@link priceOf} by price table and model: a usage report or a budget check
 * prices every call of a period, a handful of models. A config's table never changes.
 */
const lookups = new WeakMap<PriceTable, Map<string, ModelPrice | undefined>>();

function lookUp(model: string, overrides: PriceTable): ModelPrice | undefined {
  const exact = overrides[model];
  if (exact) return exact;
  const table = { ...LIST_PRICES, ...overrides };
  const keys = Object.keys(table).filter((key) => model === key || model.startsWith(`${key}-`));
  const longest = keys.sort((a, b) => b.length - a.length)[0];
  return longest === undefined ? undefined : table[longest];
}

/**
 * How to give `model` a price: the `llm.prices` entry to add, for a model neither the
 * table nor the overrides know (its calls would count as $0).
 */
export function unpricedFix(model: string): string {
  return (
    `add "${model}: {input: …, output: …, cache_read: …, cache_write: …}" under llm.prices ` +
    "in picklebot.yaml (USD per million tokens; 0 for a free model)"
  );
}

/**
 * The price of one web search the API runs (Anthropic's server tool): $10 per 1,000
 * searches, whatever the model, and with no batch discount.
 */
export const WEB_SEARCH_PRICE = 0.01;

/** The price of a cache write with the 1-hour lifetime: twice the input price. */
export const ONE_HOUR_WRITE_FACTOR = 2;

/**
 * What one call cost in USD at `price`; half for a batch call. Cache writes with the
 * 1-hour lifetime cost {@link ONE_HOUR_WRITE_FACTOR} × input, the others `cache_write`;
 * each web search the API ran {@link WEB_SEARCH_PRICE}.
 */
export function costOf(usage: TokenUsage, price: ModelPrice, batch = false): number {
  const oneHour = usage.cacheWrite1h ?? 0;
  const perMillion =
    usage.input * price.input +
    usage.output * price.output +
    usage.cacheRead * price.cache_read +
    (usage.cacheWrite - oneHour) * price.cache_write +
    oneHour * price.input * ONE_HOUR_WRITE_FACTOR;
  const searches = (usage.webSearches ?? 0) * WEB_SEARCH_PRICE;
  return (perMillion / 1_000_000) * (batch ? BATCH_DISCOUNT : 1) + searches;
}
