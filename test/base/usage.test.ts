import { describe, expect, it } from "vitest";
import { addUsage, zeroUsage } from "../../src/base/usage.js";
import { LockTokens } from "../../src/storage/job.js";

describe("token usage", () => {
  it("sums counts into a new record, leaving both inputs as they were", () => {
    const first = { input: 10, output: 5, cacheRead: 2, cacheWrite: 1 };
    const total = addUsage(addUsage(zeroUsage(), first), first);
    expect(total).toEqual({ input: 20, output: 10, cacheRead: 4, cacheWrite: 2 });
    expect(first).toEqual({ input: 10, output: 5, cacheRead: 2, cacheWrite: 1 });
    expect(zeroUsage()).toEqual({ input: 0, output: 0, cacheRead: 0, cacheWrite: 0 });
  });
});

describe("LockTokens", () => {
  it("gives every claim its own token, and every job of a claim that token as prefix", () => {
    const one = new LockTokens();
    const two = new LockTokens();
    const claims = [one.nextClaim(), one.nextClaim(), two.nextClaim()];
    expect(new Set(claims).size).toBe(3);
    const [first = ""] = claims;
    expect(LockTokens.forJob(first, 12)).toBe(`${first}.12`);
  });
});
