/** Plain-text output helpers shared by the inspection commands. */
import { InvalidArgumentError } from "commander";
import { printable } from "../base/printable.js";

export { printable } from "../base/printable.js";
export { formatTime } from "../base/time-zone.js";

/**
 * Prints rows as aligned columns under a header. Cells are made {@link printable}: a
 * control character or line feed from a chat or a model shows as an escape, so every
 * row stays one line.
 */
export function printTable(header: string[], cells: string[][]): void {
  const rows = cells.map((row) => row.map((cell) => printable(cell)));
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => (row[column] ?? "").length)),
  );
  const line = (cells: string[]) =>
    cells
      .map((cell, column) => cell.padEnd(widths[column] ?? 0))
      .join("  ")
      .trimEnd();
  console.log(line(header.map((title) => printable(title.toUpperCase()))));
  for (const row of rows) console.log(line(row));
}

/** A span of time in its two largest units: `45s`, `12m 5s`, `3h 20m`, `2d 4h`. */
export function formatDuration(ms: number): string {
  const units: [string, number][] = [
    ["d", 86_400_000],
    ["h", 3_600_000],
    ["m", 60_000],
    ["s", 1000],
  ];
  let rest = Math.max(0, Math.round(ms / 1000) * 1000);
  const parts: string[] = [];
  for (const [unit, size] of units) {
    if (rest < size && parts.length === 0 && unit !== "s") continue;
    parts.push(`${Math.floor(rest / size)}${unit}`);
    rest %= size;
    if (parts.length === 2) break;
  }
  return parts.join(" ");
}

/**
 * Prints one line of output, {@link printable}: a line feed or escape sequence inside it
 * (a chat name, a model's text) shows as an escape instead of acting on the terminal.
 */
export function printLine(line: string): void {
  console.log(printable(line));
}

/** Controls that JSON.stringify leaves raw: DEL, C1 and the bidirectional overrides. */
const RAW_IN_JSON = /[\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

/**
 * Prints a value as indented JSON (for `--json`). Every control character is a `\uXXXX`
 * escape (JSON.stringify leaves DEL and C1 raw): the same value, safe on a terminal.
 */
export function printJson(value: unknown): void {
  const json = JSON.stringify(value, null, 2);
  console.log(
    json.replace(RAW_IN_JSON, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`),
  );
}

/** A `--limit` value: a positive whole number. */
export function parseLimit(value: string): number {
  const limit = Number(value);
  if (!Number.isInteger(limit) || limit < 1)
    throw new InvalidArgumentError("expected a positive whole number");
  return limit;
}
