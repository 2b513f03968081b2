/**
 * Unhandled rejections, seen by the test itself (vitest also fails a run that has one):
 *
 *   const rejections = trackUnhandledRejections();   // at the top of a test file
 *   expect(rejections).toEqual([]);                  // at the end of a test
 */
import { afterEach, beforeEach } from "vitest";

/** Collects the unhandled rejections of each test of the enclosing file or suite. */
export function trackUnhandledRejections(): unknown[] {
  const rejections: unknown[] = [];
  const record = (reason: unknown) => rejections.push(reason);
  beforeEach(() => {
    rejections.length = 0;
    process.on("unhandledRejection", record);
  });
  afterEach(() => {
    process.off("unhandledRejection", record);
  });
  return rejections;
}
