/**
 * Checks of the numbers in option objects, where a constructor or factory accepts them:
 * nonsense (0 workers, a negative timeout, NaN) fails at once with the option's name,
 * instead of as a hot loop or a hang later. An absent option passes (its default applies).
 */
import { UserError } from "./errors.js";

/** What a numeric option must be. */
export type NumberRule = "count" | "positive" | "non-negative" | "fraction";

const RULES: Record<NumberRule, { test: (value: number) => boolean; expected: string }> = {
  count: {
    test: (value) => Number.isInteger(value) && value >= 1,
    expected: "a whole number of at least 1",
  },
  positive: {
    test: (value) => Number.isFinite(value) && value > 0,
    expected: "a number greater than 0",
  },
  "non-negative": {
    test: (value) => Number.isFinite(value) && value >= 0,
    expected: "a number of at least 0",
  },
  fraction: { test: (value) => value >= 0 && value <= 1, expected: "a number from 0 to 1" },
};

/**
 * Throws a {@link UserError} naming `owner` and the first option of `options` that breaks
 * its rule: `AgentWorker: concurrency must be a whole number of at least 1, found 0`.
 */
export function checkNumberOptions<T extends object>(
  owner: string,
  options: T,
  rules: Partial<Record<keyof T & string, NumberRule>>,
): void {
  for (const [name, rule] of Object.entries(rules) as Array<[string, NumberRule]>) {
    const value: unknown = (options as Record<string, unknown>)[name];
    if (value === undefined) continue;
    const { test, expected } = RULES[rule];
    if (typeof value === "number" && test(value)) continue;
    const found = typeof value === "string" ? JSON.stringify(value) : String(value);
    throw new UserError(`${owner}: ${name} must be ${expected}, found ${found}`, {
      context: { option: name },
    });
  }
}
