/**
 * The named models of picklebot.yaml (docs/guides/models.md): the `models:` entries, and
 * `llm:` itself as the entry named `default`. An entry is resolved to a whole `llm`
 * section (its own keys over `llm`'s), so the provider registry makes its provider as it
 * makes the default one.
 *
 * What an agent's `model:` means (docs/decisions/agent-model-names-an-entry-or-an-id.md):
 *
 *   the name of an entry  ─► that entry
 *   close to an entry's name (a typo) ─► refused, with "did you mean"
 *   anything else         ─► a model id, called through the default entry
 */
import { type Config, DEFAULT_MODEL_ENTRY, type LlmConfig } from "./schema.js";
import { closestMatch, didYouMean } from "./suggest.js";

/** One named model, resolved: `llm`'s settings with the entry's over them. */
export interface ModelEntry {
  /** The entry's name (`default` for `llm:`). */
  name: string;
  /** Everything the provider registry and the runner need, as an `llm` section. */
  llm: LlmConfig;
}

/** What picks a model: an agent's (or a cron's, or a chat's) `model` and `fallbacks`. */
export interface ModelChoice {
  /** An entry name or a model id. (Default: the default entry) */
  model?: string | undefined;
  /** Entry names tried after it, in order. (Default: the entry's own `fallbacks`) */
  fallbacks?: readonly string[] | undefined;
}

/** Where an entry's keys are in picklebot.yaml: `llm` for the default entry, else `models.<name>`. */
export function modelEntrySection(name: string): string {
  return name === DEFAULT_MODEL_ENTRY ? "llm" : `models.${name}`;
}

/** Every entry name: `default` first, then `models:` in file order. */
export function modelEntryNames(config: Pick<Config, "models">): string[] {
  return [DEFAULT_MODEL_ENTRY, ...Object.keys(config.models)];
}

/** The entry named `name`, or undefined when there is none. */
export function modelEntry(
  config: Pick<Config, "llm" | "models">,
  name: string,
): ModelEntry | undefined {
  if (name === DEFAULT_MODEL_ENTRY) return { name, llm: config.llm };
  const entry = Object.hasOwn(config.models, name) ? config.models[name] : undefined;
  if (!entry) return undefined;
  const { llm } = config;
  const provider = entry.provider ?? llm.provider;
  const sameProvider = provider === llm.provider;
  return {
    name,
    llm: {
      ...llm,
      provider,
      model: entry.model,
      api_key: entry.api_key ?? (sameProvider ? llm.api_key : undefined),
      base_url: entry.base_url ?? (sameProvider ? llm.base_url : undefined),
      max_tokens: entry.max_tokens ?? llm.max_tokens,
      context_window: entry.context_window,
      vision: entry.vision ?? true,
      timeout_s: entry.timeout_s ?? llm.timeout_s,
      prompt_cache_ttl: entry.prompt_cache_ttl ?? llm.prompt_cache_ttl,
      prices: entry.prices ? { ...llm.prices, [entry.model]: entry.prices } : llm.prices,
      fallbacks: entry.fallbacks,
    },
  };
}

/**
 * The entries a choice calls, in order: its entry (a model id: the default entry with that
 * model), then its fallbacks (the choice's, else the entry's own), each once.
 */
export function modelChain(
  config: Pick<Config, "llm" | "models">,
  choice: ModelChoice,
): ModelEntry[] {
  const primary = primaryEntry(config, choice.model);
  const names = choice.fallbacks ?? primary.llm.fallbacks;
  const chain = [primary];
  for (const name of names) {
    const entry = modelEntry(config, name);
    if (entry && !chain.some((link) => link.name === entry.name)) chain.push(entry);
  }
  return chain;
}

function primaryEntry(
  config: Pick<Config, "llm" | "models">,
  model: string | undefined,
): ModelEntry {
  const named =
    model === undefined ? modelEntry(config, DEFAULT_MODEL_ENTRY) : modelEntry(config, model);
  if (named) return named;
  return { name: DEFAULT_MODEL_ENTRY, llm: { ...config.llm, model: model ?? config.llm.model } };
}

/**
 * Why a choice written in `file` names no model it can call, as one sentence naming the
 * file, the key and the fix; null when it is fine. `model:` may be a model id, so only a
 * near miss of an entry's name is refused.
 */
export function modelChoiceProblem(
  config: Pick<Config, "models">,
  choice: ModelChoice,
  file: string,
): string | null {
  const known = modelEntryNames(config);
  const problems: string[] = [];
  const { model } = choice;
  if (model !== undefined && !known.includes(model)) {
    const match = closestMatch(model, known);
    if (match !== undefined)
      problems.push(`model: "${model}" is no named model; did you mean "${match}"?`);
  }
  for (const name of choice.fallbacks ?? []) {
    if (known.includes(name)) continue;
    const suggestion = didYouMean(name, known);
    problems.push(`fallbacks: unknown model "${name}"${suggestion ? ` (${suggestion})` : ""}`);
  }
  if (problems.length === 0) return null;
  return `${file}: ${problems.join("; ")} (named models: ${known.join(", ")}); name one of those or add it under models: in picklebot.yaml`;
}

/** The prices of every model the workspace names: `llm.prices` and each entry's `prices`. */
export function workspacePrices(config: Pick<Config, "llm" | "models">): LlmConfig["prices"] {
  const prices = { ...config.llm.prices };
  for (const entry of Object.values(config.models)) {
    if (entry.prices) prices[entry.model] = entry.prices;
  }
  return prices;
}
