/** Which settings differ between two loads of picklebot.yaml, by key, never by value. */
import { formatKeyPath } from "./issues.js";

/**
 * The keys whose values differ between `before` and `after` (two loaded configs), as
 * dotted paths ("telegram.bot_token", "mcp_servers.web.url"), sorted. Objects are
 * compared key by key; anything else (arrays included) as a whole.
 */
export function changedKeys(before: unknown, after: unknown): string[] {
  return changedPaths(before, after, []).sort();
}

function changedPaths(before: unknown, after: unknown, path: string[]): string[] {
  if (isRecord(before) && isRecord(after)) {
    const keys = new Set([...Object.keys(before), ...Object.keys(after)]);
    return [...keys].flatMap((key) => changedPaths(before[key], after[key], [...path, key]));
  }
  return JSON.stringify(before) === JSON.stringify(after) ? [] : [formatKeyPath(path)];
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
