/**
 * The short chaos run CI does (`npm run chaos -- --cycles 1000` is the long one, see
 * bench/RESULTS.md): a loaded server is SIGKILLed five times at random moments and
 * restarted, then the run checks that every job ended as its kind may (done exactly once,
 * or stopped, or failed with its turn closed) and that no request the real API would
 * refuse was sent. The chat run (`--chat`) does the same to a server answering Telegram
 * chats with long streamed replies, and checks what the chats show.
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { childEnv } from "../helpers/cli.js";

const CHAOS = fileURLToPath(new URL("../../bench/chaos.js", import.meta.url));

function runChaos(args: string[]): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, [CHAOS, ...args], { env: childEnv() });
  let output = "";
  child.stdout.on("data", (chunk: Buffer) => (output += chunk));
  child.stderr.on("data", (chunk: Buffer) => (output += chunk));
  return new Promise((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, output }));
  });
}

describe("npm run chaos", () => {
  it("kills a loaded server 5 times and finds every job ended as it may, exactly once", async () => {
    const { code, output } = await runChaos(["--cycles", "5"]);
    expect(output).toContain("chaos: no violations");
    expect(code, output).toBe(0);
    expect(output).toMatch(/cycle 5\/5 /);
    expect(output).toMatch(/kills {7}5 SIGKILLs/);
    const jobs = /jobs {8}(\d+) enqueued, (\d+) done/.exec(output);
    expect(Number(jobs?.[1])).toBeGreaterThan(0);
    // Fail jobs fail by design and stop jobs may be stopped; verify checks each ending.
    expect(Number(jobs?.[2])).toBeGreaterThan(0);
    expect(output).toMatch(/refused {5}0 requests/);
  }, 180_000);

  it("--chat: kills a server answering Telegram chats 4 times; every reply shows whole, none twice beyond the lost-id window", async () => {
    const { code, output } = await runChaos(["--chat", "--messages", "24", "--kills", "4"]);
    expect(output).toContain("chaos --chat: no violations");
    expect(code, output).toBe(0);
    expect(output).toMatch(/kills {7}4 SIGKILLs/);
    expect(output).toMatch(/messages {4}24 in 6 chats/);
  }, 180_000);
});
