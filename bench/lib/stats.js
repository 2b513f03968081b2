/** Small helpers for benchmark numbers and tables. */

/** The `p`-th percentile (0–100) of `values`, nearest rank. */
export function percentile(values, p) {
  if (values.length === 0) return Number.NaN;
  const sorted = Float64Array.from(values).sort();
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank];
}

/** A rate with thousands separators: 24,310. */
export function formatRate(perSecond) {
  if (!Number.isFinite(perSecond)) return "–";
  return Math.round(perSecond).toLocaleString("en-US");
}

/** Milliseconds with three decimals: 0.142 ms. */
export function formatMs(ms) {
  if (!Number.isFinite(ms)) return "–";
  return `${ms.toFixed(3)} ms`;
}

/** A markdown table from a header row and body rows. */
export function markdownTable(header, rows) {
  const line = (cells) => `| ${cells.join(" | ")} |`;
  return [line(header), line(header.map(() => "---")), ...rows.map(line)].join("\n");
}

/** Resolves after the current macrotask, letting timers and I/O run. */
export function yieldToEventLoop() {
  return new Promise((resolve) => setImmediate(resolve));
}
