/**
 * Fallback chains on providers of the port: which failures move a call to the next named
 * model, the cool-down, and what the reply says about it.
 */
import { describe, expect, it } from "vitest";
import {
  chainProvider,
  fallbackNotice,
  fallbackReason,
  ModelCooldowns,
} from "../../src/agents/model-chain.js";
import { ModelError } from "../../src/base/errors.js";
import type { ModelProvider, ModelReply, ModelRequest } from "../../src/ports/index.js";

const REQUEST: ModelRequest = {
  model: "primary-model",
  system: "s",
  messages: [{ role: "user", content: [{ type: "text", text: "hi" }] }],
  tools: [],
  maxTokens: 100,
};

/** A provider that answers from a list (an error is thrown), recording each request. */
function scripted(...answers: Array<string | Error>) {
  const requests: ModelRequest[] = [];
  const provider: ModelProvider = {
    async complete(request): Promise<ModelReply> {
      requests.push(request);
      const answer = answers.shift() ?? "ok";
      if (answer instanceof Error) throw answer;
      const usage = { input: 1, output: 1, cacheRead: 0, cacheWrite: 0 };
      return { content: [{ type: "text", text: answer }], stopReason: "end_turn", usage };
    },
  };
  return { provider, requests };
}

function clockAt(now: { ms: number }) {
  return { now: () => now.ms };
}

const down = () => new ModelError("overloaded", { retryable: true, status: 503 });

describe("fallbackReason", () => {
  it("moves on for an outage, a 429, and this entry's key or model; not for a bad request", () => {
    expect(fallbackReason(down())).toBe("is failing (503)");
    expect(fallbackReason(new ModelError("x", { retryable: true }))).toBe("did not answer");
    expect(
      fallbackReason(new ModelError("x", { retryable: true, status: 429, retryAfterS: 60 })),
    ).toBe("is rate-limited (429, retry after 60 s)");
    expect(fallbackReason(new ModelError("x", { retryable: false, status: 401 }))).toBe(
      "had its key refused (401)",
    );
    expect(fallbackReason(new ModelError("x", { retryable: false, status: 404 }))).toBe(
      "does not know its model (404)",
    );
    expect(fallbackReason(new ModelError("x", { retryable: false, status: 400 }))).toBeNull();
    expect(fallbackReason(new Error("aborted"))).toBeNull();
  });
});

describe("chainProvider", () => {
  it("answers from the next entry with its model and max_tokens, skips the failed one while it cools down, then tries it again", async () => {
    const now = { ms: 0 };
    const primary = scripted(down(), "primary again");
    const backup = scripted("backup 1", "backup 2");
    const chain = chainProvider(
      [
        { name: "default", provider: primary.provider, model: "primary-model", maxTokens: 100 },
        { name: "backup", provider: backup.provider, model: "backup-model", maxTokens: 50 },
      ],
      new ModelCooldowns(clockAt(now), 60_000),
    );

    const first = await chain.complete(REQUEST);
    expect(first.fallback).toEqual({
      entry: "backup",
      model: "backup-model",
      from: "default",
      reason: "is failing (503)",
    });
    expect(backup.requests[0]).toMatchObject({ model: "backup-model", maxTokens: 50 });

    now.ms = 59_999;
    const cooling = await chain.complete(REQUEST);
    expect(cooling.fallback?.reason).toBe("is failing (503), skipped while it cools down");
    expect(primary.requests).toHaveLength(1);

    now.ms = 60_000;
    const again = await chain.complete(REQUEST);
    expect(again.fallback).toBeUndefined();
    expect(again.content).toEqual([{ type: "text", text: "primary again" }]);
  });

  it("throws a bad request as it is, and the last entry's error when every entry fails", async () => {
    const refused = new ModelError("bad", { retryable: false, status: 400 });
    const backup = scripted();
    const links = (provider: ModelProvider) => [
      { name: "default", provider, model: "primary-model", maxTokens: 100 },
      { name: "backup", provider: backup.provider, model: "backup-model", maxTokens: 100 },
    ];
    const cooldowns = new ModelCooldowns(clockAt({ ms: 0 }), 0);
    await expect(
      chainProvider(links(scripted(refused).provider), cooldowns).complete(REQUEST),
    ).rejects.toBe(refused);
    expect(backup.requests).toHaveLength(0);

    const last = down();
    const failing = scripted(last);
    const both = chainProvider(
      [
        { name: "default", provider: scripted(down()).provider, model: "m", maxTokens: 1 },
        { name: "backup", provider: failing.provider, model: "b", maxTokens: 1 },
      ],
      cooldowns,
    );
    await expect(both.complete(REQUEST)).rejects.toBe(last);
  });

  it("says once which model answered, why, and when the first is tried again", () => {
    const fallback = {
      entry: "haiku",
      model: "claude-haiku-4-5",
      from: "default",
      reason: "is failing (503)",
    };
    expect(fallbackNotice(fallback, 300)).toBe(
      "(Answered by haiku, claude-haiku-4-5: default is failing (503); default is tried again after 5 min.)",
    );
    expect(fallbackNotice(fallback, 0)).toContain("default is tried again on the next message.");
  });
});
