/**
 * Append-only JSON Lines files, as the jsonl history store writes them. A crash can leave
 * at most a torn last line: readers skip lines that do not parse, and a writer that finds
 * the file not ending in a newline starts its line on a fresh one, so the torn fragment
 * never swallows the next record.
 */

import { appendFileSync, closeSync, fstatSync, openSync, readSync } from "node:fs";

/** Complete lines read from a byte offset of a file. */
export interface LinesRead {
  /** The parsed lines, in file order; lines that do not parse are left out. */
  records: unknown[];
  /** Offset just past the last newline read: where the next read starts. */
  nextOffset: number;
}

/**
 * Reads the lines of `path` from byte `offset` up to its last newline (a trailing line
 * without one may still be being written, or be torn: it is left for a later read).
 * A missing file reads as empty.
 */
export function readLinesFrom(path: string, offset: number): LinesRead {
  const bytes = readBytesFrom(path, offset);
  const end = bytes.lastIndexOf(0x0a);
  if (end === -1) return { records: [], nextOffset: offset };
  const text = bytes.subarray(0, end).toString("utf8");
  return { records: parseLines(text), nextOffset: offset + end + 1 };
}

/** Every line of `path` that parses, including a last line without a newline. */
export function readAllLines(path: string): unknown[] {
  return parseLines(readBytesFrom(path, 0).toString("utf8"));
}

/** Appends `record` as one JSON line, on a fresh line if the file ends in a torn one. */
export function appendLine(path: string, record: unknown): void {
  const separator = endsMidLine(path) ? "\n" : "";
  appendFileSync(path, `${separator}${JSON.stringify(record)}\n`);
}

function parseLines(text: string): unknown[] {
  const records: unknown[] = [];
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    try {
      records.push(JSON.parse(line));
    } catch {
      // A torn line from a crash mid-write: the record was never completely stored.
    }
  }
  return records;
}

function readBytesFrom(path: string, offset: number): Buffer {
  const fd = openIfExists(path);
  if (fd === null) return Buffer.alloc(0);
  try {
    const length = Math.max(0, fstatSync(fd).size - offset);
    const bytes = Buffer.alloc(length);
    let filled = 0;
    while (filled < length) {
      const read = readSync(fd, bytes, filled, length - filled, offset + filled);
      if (read === 0) break;
      filled += read;
    }
    return bytes.subarray(0, filled);
  } finally {
    closeSync(fd);
  }
}

/** True when the file exists, is not empty and its last byte is not a newline. */
function endsMidLine(path: string): boolean {
  const fd = openIfExists(path);
  if (fd === null) return false;
  try {
    const size = fstatSync(fd).size;
    if (size === 0) return false;
    const last = Buffer.alloc(1);
    readSync(fd, last, 0, 1, size - 1);
    return last[0] !== 0x0a;
  } finally {
    closeSync(fd);
  }
}

function openIfExists(path: string): number | null {
  try {
    return openSync(path, "r");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw error;
  }
}
