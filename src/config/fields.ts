/** Field schemas several sections of picklebot.yaml share. */
import { z } from "zod";

/** An http:// or https:// URL. */
export function httpUrl() {
  return z
    .url({ protocol: /^https?$/ })
    .describe("an http:// or https:// URL such as http://127.0.0.1:9999");
}

/** Numbers may also arrive as text, e.g. from `${PORT}`. */
export function fromText<T extends z.ZodType>(schema: T) {
  return z.preprocess(
    (value) =>
      typeof value === "string" && /^\s*-?\d+(\.\d+)?\s*$/.test(value) ? Number(value) : value,
    schema,
  );
}

/** One model's prices (an `llm.prices` entry, a `models:` entry's `prices`): every rate in USD per million tokens. */
export function modelPriceSchema() {
  const rate = fromText(z.number().nonnegative().describe("USD per million tokens, 0 or more"));
  return z.strictObject({ input: rate, output: rate, cache_read: rate, cache_write: rate });
}
