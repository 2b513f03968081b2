/** What a call that must fail threw: for tests of the errors a port documents. */
import { expect } from "vitest";
import { ModelError } from "../../src/base/errors.js";

/** The Error `promise` rejects with; throws when it resolves or rejects with a non-Error. */
export async function failureOf(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (thrown) {
    if (thrown instanceof Error) return thrown;
    throw new Error(`expected an Error, got ${String(thrown)}`);
  }
  throw new Error("expected the call to fail, but it succeeded");
}

/** The {@link ModelError} `promise` rejects with; fails the test on any other outcome. */
export async function modelErrorOf(promise: Promise<unknown>): Promise<ModelError> {
  const error = await failureOf(promise);
  expect(error).toBeInstanceOf(ModelError);
  return error as ModelError;
}
