/**
 * The rules every platform's buttons follow, checked once before a message with choices
 * is sent, so a choice no platform would take fails the same way everywhere and never
 * reaches the network.
 */
import { ChatPlatformError } from "../base/errors.js";
import {
  type ChatPlatformKind,
  type Choice,
  MAX_CHOICE_ID_BYTES,
  MAX_CHOICES,
} from "../ports/index.js";

/**
 * Throws a {@link ChatPlatformError} (not retryable) naming the first rule `choices`
 * break: 1 to {@link MAX_CHOICES} of them, each id 1 to {@link MAX_CHOICE_ID_BYTES} bytes
 * of UTF-8 and unique, each label non-empty.
 */
export function checkChoices(platform: ChatPlatformKind, choices: readonly Choice[]): void {
  const problem = choicesProblem(choices);
  if (problem !== undefined) {
    throw new ChatPlatformError(`${platform}: cannot send these choices: ${problem}`, {
      context: { platform },
    });
  }
}

/** What is wrong with `choices`, or undefined when nothing is. */
function choicesProblem(choices: readonly Choice[]): string | undefined {
  if (choices.length === 0) return "a message with choices needs at least one";
  if (choices.length > MAX_CHOICES) {
    return `${choices.length} choices, at most ${MAX_CHOICES} fit in one row`;
  }
  const seen = new Set<string>();
  for (const { id, label } of choices) {
    const bytes = Buffer.byteLength(id, "utf8");
    if (bytes === 0) return `the choice "${label}" has an empty id`;
    if (bytes > MAX_CHOICE_ID_BYTES) {
      return `the id of the choice "${label}" is ${bytes} bytes long, at most ${MAX_CHOICE_ID_BYTES} are allowed`;
    }
    if (seen.has(id)) return `two choices have the id "${id}"`;
    if (label.trim() === "") return `the choice "${id}" has an empty label`;
    seen.add(id);
  }
  return undefined;
}
