/** changedKeys: which settings differ between two loads of picklebot.yaml, by key only. */
import { describe, expect, it } from "vitest";
import { changedKeys } from "../../src/config/index.js";

describe("changedKeys", () => {
  it("names each changed leaf by its dotted path, sorted, and lists compare whole", () => {
    const before = {
      http: { port: 8787, host: "127.0.0.1" },
      telegram: { bot_token: "old", allowed_user_ids: [1] },
      mcp_servers: {},
    };
    const after = {
      http: { port: 9000, host: "127.0.0.1" },
      telegram: { bot_token: "new", allowed_user_ids: [1, 2] },
      mcp_servers: { web: { url: "http://127.0.0.1:9/mcp" } },
    };
    expect(changedKeys(before, after)).toEqual([
      "http.port",
      "mcp_servers.web",
      "telegram.allowed_user_ids",
      "telegram.bot_token",
    ]);
  });

  it("names nothing for equal configs", () => {
    const config = { llm: { model: "m", prices: { m: { input: 1 } } } };
    expect(changedKeys(config, structuredClone(config))).toEqual([]);
  });
});
