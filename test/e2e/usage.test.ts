/**
 * `picklebot usage` and the status cost line: the CLI as a child process on a temp
 * workspace, after `picklebot chat` turns whose usage the fake model reports exactly.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/index.js";
import { openStorage } from "../../src/storage/index.js";
import { type FakeAnthropic, startFakeAnthropic } from "../fakes/anthropic.js";
import { runCli } from "../helpers/cli.js";
import { fakeModelConfig, makeWorkspace, type TempWorkspace } from "../helpers/workspace.js";

let fake: FakeAnthropic;
let ws: TempWorkspace;

/** What the fake reports for the two chat turns. */
const FIRST = {
  input_tokens: 1000,
  output_tokens: 200,
  cache_read_input_tokens: 3000,
  cache_creation_input_tokens: 500,
};
const SECOND = {
  input_tokens: 20,
  output_tokens: 40,
  cache_read_input_tokens: 4000,
  cache_creation_input_tokens: 0,
};
/** At claude-sonnet-4-6's list price: $3 input, $15 output, $0.30 cache read, $3.75 write. */
const LIST_COST =
  (1000 * 3 + 200 * 15 + 3000 * 0.3 + 500 * 3.75 + 20 * 3 + 40 * 15 + 4000 * 0.3) / 1e6;

interface JsonReport {
  by: string;
  lines: Array<{ key: string; calls: number; costUsd: number }>;
  total: {
    calls: number;
    input: number;
    output: number;
    cacheRead: number;
    cacheWrite: number;
    costUsd: number;
  };
  unpriced: string[];
}

beforeEach(async () => {
  fake = await startFakeAnthropic();
  ws = makeWorkspace({ "picklebot.yaml": fakeModelConfig(fake.url, "timezone: UTC\n") });
});

afterEach(async () => {
  await fake.close();
  ws.remove();
});

/** picklebot.yaml with `llm.prices` for the default model. */
function writePrices(entry: string): void {
  const prices = `  timeout_s: 20\n  prices:\n    claude-sonnet-4-6: ${entry}\n`;
  ws.write("picklebot.yaml", fakeModelConfig(fake.url).replace("  timeout_s: 20\n", prices));
}

const cli = (...args: string[]) => runCli([...args, "--workspace", ws.dir]);

async function chatTwice(): Promise<void> {
  fake.script({ text: "one", usage: FIRST }, { text: "two", usage: SECOND });
  const chat = await runCli(["chat", "--workspace", ws.dir], { input: "hello\nagain\n" });
  expect(chat.code).toBe(0);
}

async function report(...args: string[]): Promise<JsonReport> {
  const result = await cli("usage", "--json", ...args);
  expect(result.stderr).toBe("");
  return JSON.parse(result.stdout) as JsonReport;
}

describe("picklebot usage", () => {
  it("sums exactly what the model reported, priced at the list price, by agent, session and day", async () => {
    await chatTwice();
    const byAgent = await report();
    expect(byAgent.total).toMatchObject({
      calls: 2,
      input: 1020,
      output: 240,
      cacheRead: 7000,
      cacheWrite: 500,
    });
    expect(byAgent.total.costUsd).toBeCloseTo(LIST_COST, 10);
    expect(byAgent.lines).toEqual([expect.objectContaining({ key: "pickle", calls: 2 })]);
    expect(byAgent.unpriced).toEqual([]);
    const bySession = await report("--by", "session");
    expect(bySession.lines).toEqual([
      expect.objectContaining({ key: expect.stringMatching(/^s_/) }),
    ]);
    const today = new Date().toISOString().slice(0, 10);
    expect((await report("--by", "day", "--since", "1d")).lines).toEqual([
      expect.objectContaining({ key: today, calls: 2 }),
    ]);
    const table = await cli("usage");
    expect(table.stdout).toMatch(
      /^AGENT\s+CALLS\s+INPUT\s+OUTPUT\s+CACHE READ\s+CACHE WRITE\s+USD/,
    );
    expect(table.stdout).toMatch(/\npickle\s+2\s+1020\s+240\s+7000\s+500\s+\$0\.0106/);
    expect(table.stdout).toMatch(/\ntotal\s+2\s+1020/);
    expect((await cli("status")).stdout).toMatch(/cost\s+\$0\.0106 today, \$0\.0106 this month/);
  });

  it("sums by cron id, a batch call at half price, and leaves chats out", async () => {
    await chatTwice();
    const config = loadConfig(ws.dir, {});
    const storage = await openStorage(config, { now: () => Date.now() });
    const usage = { input: 1_000_000, output: 0, cacheRead: 0, cacheWrite: 0 };
    for (const [key, batch] of [
      ["cron:news:2026-11-25T08:00", false],
      ["cron:news:2026-11-25T09:00", true],
      ["cron:backup:2026-11-25T08:00", false],
    ] as const) {
      const session = await storage.history.createSession({ key, agentId: "pickle" });
      const call = { model: "claude-haiku-4-5", batch };
      await storage.history.append(session.id, { role: "assistant", content: [] }, { usage, call });
    }
    await storage.close();
    const byCron = await report("--by", "cron");
    expect(byCron.lines.map(({ key, calls, costUsd }) => ({ key, calls, costUsd }))).toEqual([
      { key: "news", calls: 2, costUsd: 1.5 },
      { key: "backup", calls: 1, costUsd: 1 },
    ]);
    expect(byCron.total).toMatchObject({ calls: 3, costUsd: 2.5 });
  });

  it("shows each heartbeat's cost per day, --by heartbeat, leaving other calls out", async () => {
    await chatTwice();
    const config = loadConfig(ws.dir, {});
    const storage = await openStorage(config, { now: () => Date.now() });
    // A tick that found nothing: 2,000 tokens in, 20 out, at Sonnet's list price.
    const usage = { input: 2000, output: 20, cacheRead: 0, cacheWrite: 0 };
    for (const tick of ["10:00", "10:30", "11:00"]) {
      const key = `heartbeat:k7m2qx:2026-11-25T${tick}:00.000Z`;
      const session = await storage.history.createSession({ key, agentId: "pickle" });
      const call = { model: "claude-sonnet-4-6" };
      await storage.history.append(session.id, { role: "assistant", content: [] }, { usage, call });
    }
    await storage.close();
    const table = await cli("usage", "--by", "heartbeat");
    expect(table.stderr).toBe("");
    const lines = table.stdout.trim().split("\n");
    expect(lines[0]).toMatch(
      /^HEARTBEAT\s+CALLS\s+INPUT\s+OUTPUT\s+CACHE READ\s+CACHE WRITE\s+USD$/,
    );
    expect(lines[1]).toMatch(/^\d{4}-\d\d-\d\d k7m2qx\s+3\s+6000\s+60\s+0\s+0\s+\$0\.0189$/);
    expect(lines[2]).toMatch(/^total\s+3\s/);
  });

  it("prices with llm.prices over the built-in table", async () => {
    writePrices("{ input: 1, output: 2, cache_read: 0, cache_write: 0 }");
    await chatTwice();
    expect((await report()).total.costUsd).toBeCloseTo((1000 + 400 + 20 + 80) / 1e6, 10);
  });

  it("refuses a bad --since or --by as a usage error, and bad llm.prices naming the key", async () => {
    const since = await cli("usage", "--since", "7x");
    expect(since.code).toBe(2);
    expect(since.stderr).toMatch(/--since "7x" is not a duration/);
    const by = await cli("usage", "--by", "model");
    expect(by.code).toBe(2);
    expect(by.stderr).toMatch(/Allowed choices are agent, day, session, cron/);
    writePrices("{ input: cheap, output: 2, cache_read: 0, cache_write: 0 }");
    const prices = await cli("usage");
    expect(prices.code).toBe(1);
    expect(prices.stderr).toMatch(/llm\.prices\.claude-sonnet-4-6\.input/);
  });
});
