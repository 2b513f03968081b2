/**
 * The turn driver (agents/turn.ts) on its own: the order of its steps, what it writes,
 * and when it stops, with a recording runner and history in memory. The worker and
 * `picklebot chat` drive their turns through it; test/server/agent-worker.test.ts and
 * test/e2e/chat.test.ts show both ends against the fake model.
 */
import { describe, expect, it } from "vitest";
import type { CompactionResult } from "../../src/agents/compaction.js";
import type { TurnResult } from "../../src/agents/loop.js";
import type { RunRequest } from "../../src/agents/runner.js";
import {
  newTurnProgress,
  TurnDriver,
  type TurnRequest,
  turnEndingOf,
} from "../../src/agents/turn.js";
import { CancelledError, ModelError, TimeoutError } from "../../src/base/errors.js";
import { zeroUsage } from "../../src/base/usage.js";
import type { ChatMessage } from "../../src/ports/index.js";

const ANSWER: TurnResult = { text: "Brine.", modelCalls: 1, usage: zeroUsage(), model: "m" };
const SUMMARISED: CompactionResult = {
  how: "summarised",
  replaced: 14,
  kept: 0,
  memorySave: null,
  before: 9000,
  after: 1000,
  model: "m",
  usage: zeroUsage(),
};
const hello: ChatMessage = { role: "user", content: [{ type: "text", text: "hello" }] };
const openCall: ChatMessage = {
  role: "assistant",
  content: [{ type: "tool_use", id: "toolu_1", name: "bash", input: { command: "sleep 30" } }],
};

/** A driver over a session in memory whose runner records each step. */
function driver(
  options: {
    compact?: () => Promise<CompactionResult | null>;
    run?: (request: RunRequest) => Promise<TurnResult>;
  } = {},
) {
  const steps: string[] = [];
  const stored: ChatMessage[] = [];
  const turns = new TurnDriver({
    runner: {
      compact: async (request) => {
        steps.push(`compact ${request.jobId ?? "-"}`);
        return (options.compact ?? (async () => null))();
      },
      run: async (request: RunRequest) => {
        steps.push(`run ${stored.length}`);
        if (options.run) return options.run(request);
        request.events?.onText?.("Brine.");
        return ANSWER;
      },
    },
    history: {
      append: async (_sessionId, message) => {
        steps.push("append");
        stored.push(message);
        return true;
      },
      loadContext: async (_sessionId, limit) => stored.slice(-limit),
    },
  });
  const request = (more: Partial<TurnRequest> = {}): TurnRequest => ({
    agentId: "pickle",
    sessionId: "s1",
    sessionKey: "console:me",
    signal: new AbortController().signal,
    ...more,
  });
  return { turns, steps, stored, request };
}

describe("TurnDriver.drive", () => {
  it("compacts, then adds the message, then runs the turn", async () => {
    const { turns, steps, stored, request } = driver();
    const turn = await turns.drive(request({ message: hello, jobId: "j1" }));
    expect(turn).toEqual({ status: "answered", result: ANSWER });
    expect(steps).toEqual(["compact j1", "append", "run 1"]);
    expect(stored).toEqual([hello]);
  });

  it("resumes a turn without a message: no compaction, nothing added", async () => {
    const { turns, steps, request } = driver();
    expect((await turns.drive(request())).status).toBe("answered");
    expect(steps).toEqual(["run 0"]);
  });

  it("writes the message through the caller's append (the checkpoint); a refusal is a lost turn, not run", async () => {
    const { turns, steps, request } = driver();
    const written: ChatMessage[] = [];
    const append = async (message: ChatMessage) => {
      written.push(message);
      return false;
    };
    expect(await turns.drive(request({ message: hello, append }))).toEqual({ status: "lost" });
    expect(written).toEqual([hello]);
    expect(steps).toEqual(["compact -"]);
  });

  it("tells what compaction did", async () => {
    const { turns, request } = driver({ compact: async () => SUMMARISED });
    const told: CompactionResult[] = [];
    await turns.drive(request({ message: hello, onCompacted: (done) => told.push(done) }));
    expect(told).toEqual([SUMMARISED]);
  });

  it("goes on when compaction fails, and says why", async () => {
    const refused = new ModelError("summary refused");
    const { turns, steps, request } = driver({
      compact: async () => {
        throw refused;
      },
    });
    const failures: Error[] = [];
    const turn = await turns.drive(
      request({ message: hello, onCompactionFailed: (error) => failures.push(error) }),
    );
    expect(turn.status).toBe("answered");
    expect(failures).toEqual([refused]);
    expect(steps).toEqual(["compact -", "append", "run 1"]);
  });

  it("stops when the turn is stopped during compaction: nothing added, nothing run", async () => {
    const stop = new AbortController();
    const { turns, steps, stored, request } = driver({
      compact: async () => {
        stop.abort(new CancelledError("stopped with Ctrl+C"));
        throw stop.signal.reason;
      },
    });
    await expect(turns.drive(request({ message: hello, signal: stop.signal }))).rejects.toThrow(
      "stopped with Ctrl+C",
    );
    expect(stored).toEqual([]);
    expect(steps).toEqual(["compact -"]);
  });

  it("does nothing for a turn stopped before it began", async () => {
    const stop = new AbortController();
    stop.abort(new CancelledError("stopped by the user"));
    const { turns, steps, request } = driver();
    await expect(turns.drive(request({ message: hello, signal: stop.signal }))).rejects.toThrow(
      "stopped by the user",
    );
    expect(steps).toEqual([]);
  });
});

describe("TurnDriver.closing and close", () => {
  it("answers every call the turn left open, saying why", async () => {
    const { turns, stored } = driver();
    stored.push(hello, openCall);
    const closing = {
      sessionId: "s1",
      messages: [
        {
          role: "user",
          content: [
            {
              type: "tool_result",
              tool_use_id: "toolu_1",
              content: "This tool call did not finish: timed out.",
              is_error: true,
            },
          ],
        },
      ],
    };
    const progress = newTurnProgress(true);
    expect(await turns.closing("s1", "timed out", progress)).toEqual(closing);
    await turns.close("s1", "timed out", progress);
    expect(stored.at(-1)).toEqual(closing.messages[0]);
  });

  it("has nothing to close when no call is open", async () => {
    const { turns, stored, steps } = driver();
    stored.push(hello);
    expect(await turns.closing("s1", "interrupted", newTurnProgress(true))).toBeNull();
    await turns.close("s1", "interrupted", newTurnProgress(true));
    expect(steps).toEqual([]);
  });

  it("has nothing to close for a turn whose message never joined the session", async () => {
    const { turns, stored } = driver();
    stored.push(hello, openCall);
    expect(await turns.closing("s1", "stopped by the user", newTurnProgress())).toBeNull();
  });

  it("closes a stopped turn with the text its model call had streamed, and the stop", async () => {
    const stop = new AbortController();
    const { turns, stored, request } = driver({
      run: async (run) => {
        run.events?.onModelCall?.("m");
        run.events?.onText?.("Once upon");
        stop.abort(new CancelledError("stopped by the user"));
        throw stop.signal.reason;
      },
    });
    const progress = newTurnProgress();
    const shown: string[] = [];
    const events = { onText: (delta: string) => shown.push(delta) };
    await expect(
      turns.drive(request({ message: hello, signal: stop.signal, progress, events })),
    ).rejects.toThrow("stopped by the user");
    expect(shown).toEqual(["Once upon"]);
    expect(progress).toEqual({ started: true, unsavedText: "Once upon" });
    await turns.close("s1", "stopped by the user", progress);
    expect(stored).toEqual([
      hello,
      {
        role: "assistant",
        content: [{ type: "text", text: "Once upon\n\n[stopped by the user]" }],
      },
    ]);
  });

  it("forgets the streamed text once the model call answered: it is stored with the reply", async () => {
    const { turns, request } = driver({
      run: async (run) => {
        run.events?.onModelCall?.("m");
        run.events?.onText?.("Reading.");
        run.events?.onModelReply?.("m", zeroUsage());
        return ANSWER;
      },
    });
    const progress = newTurnProgress();
    await turns.drive(request({ message: hello, progress, events: { onText: () => {} } }));
    expect(progress).toEqual({ started: true, unsavedText: "" });
  });
});

describe("turnEndingOf", () => {
  it.each([
    [new CancelledError("stopped with Ctrl+C"), "stopped by the user"],
    [new TimeoutError("deadline"), "timed out"],
    [new Error("anything else"), "interrupted"],
    [undefined, "interrupted"],
  ])("%s ends as %s", (reason, ending) => {
    expect(turnEndingOf(reason)).toBe(ending);
  });
});
