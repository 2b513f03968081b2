/**
 * The moments the chat chaos run kills at (see chat.ts for the list): each waits for its
 * moment and SIGKILLs the server at once, with no await between the decision and the
 * signal, recording the kill's time in the server's generation.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { openWorkspaceDb, type ServerProcess } from "../../test/helpers/server.js";
import type { Run } from "./chat.js";
import type { ChaosCall, ChaosPlatform } from "./chat-platforms.js";
import { type Generation, numberOf, replyText } from "./chat-verify.js";

/** The log line of a server that is up. */
export const STARTED = "picklebot server started";

export type KillMode = "startup" | "random" | "streamed" | "accepted" | "stored" | "sent";

export const KILL_MODES: ReadonlyArray<readonly [KillMode, number]> = [
  ["startup", 1],
  ["random", 2],
  ["streamed", 3],
  ["accepted", 1],
  ["stored", 2],
  ["sent", 2],
];

/** SIGKILLs at once (no await between the decision and the signal). */
export function killNow(server: ServerProcess, generation: Generation): void {
  if (generation.killedAt !== null) return;
  generation.killedAt = epochNow();
  server.child.kill("SIGKILL");
}

/** Waits for the moment `mode` kills at; resolves a note on what was waited for. */
export async function killWhen(mode: KillMode, server: ServerProcess, run: Run): Promise<string> {
  const { random } = run;
  const generation = run.generations.at(-1) as Generation;
  if (mode === "startup") {
    await sleep(random.between(0, 800));
    return server.linesMatching(STARTED).length > 0 ? "was up" : "was starting";
  }
  await server.waitForLog(STARTED, 20_000);
  run.db ??= openWorkspaceDb(run.ws.dir);
  if (mode === "random") {
    await sleep(random.between(0, 2500));
    return "at random";
  }
  // Give it a moment first, or every cycle would hit the first send after recovery.
  await sleep(random.between(0, 1500));
  if (mode === "stored") return killWhenStored(run, server, generation);
  const isSend = (call: ChaosCall) => call.kind === "send" && call.ok;
  const isShow = (call: ChaosCall) => call.ok;
  const which =
    mode === "accepted"
      ? isSend
      : mode === "sent"
        ? (call: ChaosCall) => isShow(call) && showsLastPart(call, run)
        : isShow;
  const call = await nextCall(run.platform, which, 4000, () => {
    if (mode === "accepted") return killNow(server, generation);
    // After the answer is written: the server has it, and 0–2 ms to act on it.
    setImmediate(() => {
      spin(random.between(0, mode === "sent" ? 1 : 2));
      killNow(server, generation);
    });
  });
  if (!call) return `no ${mode === "accepted" ? "send" : "call"} came`;
  return `${call.kind} of m${numberOf(call.text) ?? "?"}`;
}

/** Whether a call shows the last part of its reply's final text in full. */
function showsLastPart(call: ChaosCall, run: Run): boolean {
  const n = numberOf(call.text);
  return n !== null && replyText(n, run.settings.seed).endsWith(call.text);
}

/** Resolves the first call that `which` accepts (after `act` ran on it), or null on timeout. */
function nextCall(
  platform: ChaosPlatform,
  which: (call: ChaosCall) => boolean,
  timeoutMs: number,
  act: (call: ChaosCall) => void,
): Promise<ChaosCall | null> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      platform.onCall = null;
      resolve(null);
    }, timeoutMs);
    platform.onCall = (call) => {
      if (!which(call)) return;
      platform.onCall = null;
      clearTimeout(timer);
      act(call);
      resolve(call);
    };
  });
}

/**
 * Busy-polls the outbox (up to 4 s) until a new final reply is committed, then lingers
 * 0–0.3 ms: the kill lands while the reply is being delivered or the job acknowledged.
 */
function killWhenStored(run: Run, server: ServerProcess, generation: Generation): Promise<string> {
  const db = run.db as NonNullable<Run["db"]>;
  const newest = () =>
    (
      db.prepare("SELECT MAX(id) AS id FROM outbox WHERE text IS NOT NULL").get() as {
        id: number | null;
      }
    ).id ?? 0;
  const before = newest();
  const deadline = performance.now() + 4000;
  // Polled in slices so that the fakes (in this process) keep answering meanwhile.
  return new Promise((resolve) => {
    const poll = () => {
      const sliceEnd = Math.min(performance.now() + 50, deadline);
      while (performance.now() < sliceEnd) {
        if (newest() > before) {
          spin(run.random.between(0, 0.3));
          killNow(server, generation);
          return resolve("right after a reply was stored");
        }
      }
      if (performance.now() >= deadline) return resolve("no reply was stored");
      setImmediate(poll);
    };
    poll();
  });
}

/** Busy-waits `ms`: a timer cannot wait for less than a millisecond. */
function spin(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // The point is to burn the time, precisely.
  }
}

export function epochNow(): number {
  return performance.timeOrigin + performance.now();
}
