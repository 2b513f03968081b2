/** Plain-text output helpers shared by the inspection commands. */
import { InvalidArgumentError } from "commander";

/** Prints rows as aligned columns under a header. */
export function printTable(header: string[], rows: string[][]): void {
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => (row[column] ?? "").length)),
  );
  const line = (cells: string[]) =>
    cells
      .map((cell, column) => cell.padEnd(widths[column] ?? 0))
      .join("  ")
      .trimEnd();
  console.log(line(header.map((title) => title.toUpperCase())));
  for (const row of rows) console.log(line(row));
}

/** An epoch-ms time as `YYYY-MM-DD HH:MM:SS` in the host's zone, or "-". */
export function formatTime(epochMs: number | null | undefined): string {
  if (epochMs === null || epochMs === undefined) return "-";
  const date = new Date(epochMs);
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`;
}

/** Prints a value as indented JSON (for `--json`). */
export function printJson(value: unknown): void {
  console.log(JSON.stringify(value, null, 2));
}

/** A `--limit` value: a positive whole number. */
export function parseLimit(value: string): number {
  const limit = Number(value);
  if (!Number.isInteger(limit) || limit < 1)
    throw new InvalidArgumentError("expected a positive whole number");
  return limit;
}
