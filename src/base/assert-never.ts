/**
 * The end of an exhaustive `switch`: its `default` calls {@link assertNever} with the value
 * switched on, so a kind added to a union and forgotten in the switch is a type error
 * there (the value is not `never` any more), and a value that slips past the types at run
 * time (a row written by a newer version) fails loudly instead of being skipped.
 */

/** Throws for a value no case handled; `what` names it in the message ("content block"). */
export function assertNever(value: never, what = "value"): never {
  throw new Error(`unexpected ${what}: ${JSON.stringify(value)}`);
}
