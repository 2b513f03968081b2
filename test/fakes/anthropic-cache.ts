/**
 * The fake Anthropic API's prompt cache: the `usage` of a request as the real API reports
 * it for the prefix up to each `cache_control` breakpoint. The rules, as Anthropic
 * documents them (platform.claude.com/docs/en/build-with-claude/prompt-caching):
 *
 *   - The prompt is one sequence of blocks, in the order tools → system → message content.
 *     A block with `cache_control` (a breakpoint) stands for the prefix that ends with it;
 *     a request may carry at most {@link MAX_BREAKPOINTS} (more is a 400), and a 1-hour
 *     breakpoint may not come after a 5-minute one (a 400 too).
 *   - A prefix shorter than the model's minimum ({@link minimumCacheableTokens}: 1024
 *     tokens for Sonnet, 2048 or 4096 for Haiku and the newest Opus) is never
 *     cached: its breakpoint is ignored.
 *   - Read: from each breakpoint, the cache is looked up at that block and at each block
 *     boundary before it, {@link LOOKBACK_BLOCKS} blocks in all; the longest live prefix
 *     found at any breakpoint is read (`cache_read_input_tokens`); reading it renews its
 *     lifetime and that of every entry it contains (a shorter prefix it read as well).
 *   - Write: the prefix of every cacheable breakpoint past the one read is written; the
 *     tokens from the end of the read prefix to the last such breakpoint are
 *     `cache_creation_input_tokens`, each stretch counted at the TTL of the breakpoint
 *     that ends it (`cache_creation.ephemeral_5m_input_tokens` / `…_1h_…`).
 *   - An entry lives `ttl` (5 minutes, or 1 hour with `ttl: "1h"`) from its last write
 *     or read, on the fake's clock.
 *   - `input_tokens` is the rest: the prompt after the last written (or read) prefix.
 *
 * Tokens are counted as the fake counts them everywhere: a block is its JSON without
 * `cache_control`, a prefix is ⌈characters / 4⌉.
 */
import { createHash } from "node:crypto";
import type { FakeMessagesBody } from "./anthropic.js";

/** Breakpoints one request may carry. */
export const MAX_BREAKPOINTS = 4;

/** Block boundaries the API checks for a hit, counting back from a breakpoint (itself included). */
export const LOOKBACK_BLOCKS = 20;

/** Lifetimes of a cache entry, in ms. */
export const CACHE_TTL_MS = { "5m": 5 * 60_000, "1h": 60 * 60_000 } as const;

/** A breakpoint's lifetime. */
export type CacheTtl = keyof typeof CACHE_TTL_MS;

/** The input side of `usage`, as the API reports it. */
export interface FakeCacheUsage {
  input_tokens: number;
  cache_read_input_tokens: number;
  cache_creation_input_tokens: number;
  cache_creation: { ephemeral_5m_input_tokens: number; ephemeral_1h_input_tokens: number };
}

/** One block of the prompt, as the cache sees it. */
export interface PromptBlock {
  /** The block's JSON without `cache_control`, after its place (`tool:`, `system:`, `3:user:`). */
  text: string;
  /** The breakpoint's TTL; null for a block without `cache_control`. */
  breakpoint: CacheTtl | null;
}

/**
 * Tokens a prefix must have to be cached, by model (Anthropic's table): 4096 for Opus 4.5
 * and 4.6 and Haiku 4.5, 2048 for the older Haiku models, 1024 for the others (Sonnet 4.x,
 * Opus 4 and 4.1, and any name the fake does not know).
 */
export function minimumCacheableTokens(model: string): number {
  if (/opus-4-[56]|haiku-4-5/i.test(model)) return 4096;
  return /haiku/i.test(model) ? 2048 : 1024;
}

/** The prompt as cacheable blocks, in the API's order. */
export function promptBlocks(body: FakeMessagesBody): PromptBlock[] {
  const block = (prefix: string, { cache_control, ...rest }: Record<string, unknown>) => ({
    text: `${prefix}${JSON.stringify(rest)}`,
    breakpoint: ttlOf(cache_control),
  });
  const system =
    typeof body.system === "string" ? [{ type: "text", text: body.system }] : (body.system ?? []);
  return [
    ...(body.tools ?? []).map((tool) => block("tool:", tool)),
    ...system.map((part) => block("system:", part)),
    ...body.messages.flatMap((message, index) => {
      const content =
        typeof message.content === "string"
          ? [{ type: "text", text: message.content }]
          : message.content;
      return content.map((part) => block(`${index}:${message.role}:`, part));
    }),
  ];
}

function ttlOf(cacheControl: unknown): CacheTtl | null {
  if (cacheControl === undefined || cacheControl === null) return null;
  return (cacheControl as { ttl?: string }).ttl === "1h" ? "1h" : "5m";
}

/** Why the API refuses the request's breakpoints (its 400 text), or null. */
export function cacheControlRefusal(body: FakeMessagesBody): string | null {
  const marks = promptBlocks(body).flatMap((block) => (block.breakpoint ? [block.breakpoint] : []));
  if (marks.length > MAX_BREAKPOINTS) {
    return `A maximum of ${MAX_BREAKPOINTS} blocks with cache_control may be provided. Found ${marks.length}.`;
  }
  const firstShort = marks.indexOf("5m");
  if (firstShort !== -1 && marks.slice(firstShort).includes("1h")) {
    return "A cache_control with ttl '1h' must not come after one with ttl '5m' (tools, system, messages order).";
  }
  return null;
}

/** A prompt cache with a clock: the entries written, by prefix, with their expiry. */
export class FakePromptCache {
  readonly #now: () => number;
  readonly #entries = new Map<string, { expires: number; ttl: CacheTtl }>();

  /** `now`: the clock that TTLs run on, in ms. (Default: `Date.now`) */
  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /** The usage of one request, and the cache updated as the API would after it. */
  use(body: FakeMessagesBody): FakeCacheUsage {
    const blocks = promptBlocks(body);
    const sums = cumulativeTokens(blocks);
    const tokens = (end: number) => sums[end] ?? 0;
    const keys = prefixKeys(blocks);
    const minimum = minimumCacheableTokens(body.model);
    const breakpoints = blocks.flatMap((block, index) =>
      block.breakpoint && tokens(index + 1) >= minimum
        ? [{ end: index + 1, ttl: block.breakpoint }]
        : [],
    );
    const now = this.#now();
    let readEnd = 0;
    for (const { end } of breakpoints) {
      for (let at = end; at > Math.max(0, end - LOOKBACK_BLOCKS) && at > readEnd; at--) {
        if (this.#live(keys[at] as string, now)) readEnd = at;
      }
    }
    for (let end = 1; end <= readEnd; end++) this.#renew(keys[end] as string, now);
    const created = { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 };
    let writtenTo = readEnd;
    for (const { end, ttl } of breakpoints) {
      if (end <= readEnd) continue;
      created[ttl === "1h" ? "ephemeral_1h_input_tokens" : "ephemeral_5m_input_tokens"] +=
        tokens(end) - tokens(writtenTo);
      writtenTo = end;
      this.#entries.set(keys[end] as string, { expires: now + CACHE_TTL_MS[ttl], ttl });
    }
    return {
      input_tokens: tokens(blocks.length) - tokens(writtenTo),
      cache_read_input_tokens: tokens(readEnd),
      cache_creation_input_tokens: tokens(writtenTo) - tokens(readEnd),
      cache_creation: created,
    };
  }

  #live(key: string, now: number): boolean {
    const entry = this.#entries.get(key);
    return entry !== undefined && entry.expires > now;
  }

  #renew(key: string, now: number): void {
    const entry = this.#entries.get(key);
    if (entry && entry.expires > now) entry.expires = now + CACHE_TTL_MS[entry.ttl];
  }
}

/** `sums[end]`: the tokens of the prefix of `end` blocks (⌈characters / 4⌉). */
function cumulativeTokens(blocks: PromptBlock[]): number[] {
  const sums = [0];
  let chars = 0;
  for (const block of blocks) {
    chars += block.text.length;
    sums.push(Math.ceil(chars / 4));
  }
  return sums;
}

/** `keys[end]`: a key of the prefix of `end` blocks (a running hash, so a prefix is stored small). */
function prefixKeys(blocks: PromptBlock[]): string[] {
  const keys = [""];
  for (const block of blocks) {
    keys.push(
      createHash("sha256")
        .update(`${keys.at(-1)}\n${block.text}`)
        .digest("hex"),
    );
  }
  return keys;
}
