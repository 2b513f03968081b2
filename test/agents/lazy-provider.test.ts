/**
 * lazyProvider: the adapter is loaded on the first call and once only, every call reaches
 * it unchanged, the optional parts exist as the shape says before anything is loaded, and
 * a failed load is tried again on the next call.
 */
import { describe, expect, it } from "vitest";
import { lazyProvider } from "../../src/agents/lazy-provider.js";
import type { ModelBatches, ModelProvider, ModelRequest } from "../../src/ports/index.js";

const REQUEST: ModelRequest = {
  model: "m",
  system: "",
  messages: [{ role: "user", content: [{ type: "text", text: "hi" }] }],
  tools: [],
  maxTokens: 10,
};

const USAGE = { input: 1, output: 1, cacheRead: 0, cacheWrite: 0 };

/** A provider that records its calls, and a loader of it that counts its loads. */
function recordedProvider() {
  const calls: string[] = [];
  const batches: ModelBatches = {
    submit: async (customId) => {
      calls.push(`submit ${customId}`);
      return "batch-1";
    },
    listSince: async (since) => {
      calls.push(`listSince ${since}`);
      return [];
    },
    status: async (id) => {
      calls.push(`status ${id}`);
      return { id, ended: true, createdAt: 0 };
    },
    outcome: async (id, customId) => {
      calls.push(`outcome ${id} ${customId}`);
      return null;
    },
  };
  const provider: ModelProvider = {
    complete: async (request) => {
      calls.push(`complete ${request.model}`);
      return { content: [{ type: "text", text: "ok" }], stopReason: "end_turn", usage: USAGE };
    },
    countTokens: async () => {
      calls.push("countTokens");
      return 42;
    },
    batches,
  };
  let loads = 0;
  const load = async () => {
    loads += 1;
    return provider;
  };
  return { calls, load, loads: () => loads };
}

describe("lazyProvider", () => {
  it("loads nothing until the first call, then loads once and forwards every call", async () => {
    const recorded = recordedProvider();
    const provider = lazyProvider(recorded.load, { countTokens: true, batches: true });
    expect(recorded.loads()).toBe(0);
    const [reply, tokens] = await Promise.all([
      provider.complete(REQUEST),
      provider.countTokens?.(REQUEST),
    ]);
    expect(reply.content).toEqual([{ type: "text", text: "ok" }]);
    expect(tokens).toBe(42);
    expect(await provider.batches?.submit("c1", REQUEST)).toBe("batch-1");
    await provider.batches?.listSince(5);
    await provider.batches?.status("b");
    await provider.batches?.outcome("b", "c1");
    expect(recorded.loads()).toBe(1);
    expect(recorded.calls).toEqual([
      "complete m",
      "countTokens",
      "submit c1",
      "listSince 5",
      "status b",
      "outcome b c1",
    ]);
  });

  it("has the optional parts the shape names, and only those", () => {
    const { load } = recordedProvider();
    const bare = lazyProvider(load, { countTokens: false, batches: false });
    expect(bare.countTokens).toBeUndefined();
    expect(bare.batches).toBeUndefined();
    const full = lazyProvider(load, { countTokens: true, batches: true });
    expect(full.countTokens).toBeTypeOf("function");
    expect(full.batches).toBeDefined();
  });

  it("tries a failed load again on the next call", async () => {
    const recorded = recordedProvider();
    let fail = true;
    const provider = lazyProvider(
      async () => {
        if (fail) throw new Error("cannot load");
        return recorded.load();
      },
      { countTokens: false, batches: false },
    );
    await expect(provider.complete(REQUEST)).rejects.toThrow("cannot load");
    fail = false;
    await expect(provider.complete(REQUEST)).resolves.toMatchObject({ stopReason: "end_turn" });
  });
});
