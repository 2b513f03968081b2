/**
 * LeaderWorker in-process, with a scripted {@link Leadership}: each `acquire` waits for the
 * test's answer, so every round of the lease loop happens when the test says.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { Leadership, Worker } from "../../src/ports/index.js";
import { LeaderWorker } from "../../src/server/cluster/leader.js";
import { ServerMetrics } from "../../src/server/metrics.js";
import { Supervisor } from "../../src/server/supervisor.js";
import { TestClock } from "../helpers/clock.js";
import { recordingLogger } from "../helpers/log.js";
import { trackUnhandledRejections } from "../helpers/rejections.js";
import { waitFor } from "../helpers/wait.js";

/** A lease whose every acquire or renewal is answered by the test, in order. */
class ScriptedLeadership implements Leadership {
  readonly renewMs = 0;
  /** Holders that asked, one entry per acquire. */
  readonly asked: string[] = [];
  readonly released: string[] = [];
  readonly #answers: Array<boolean | Error> = [];
  readonly #waiting: Array<(answer: boolean | Error) => void> = [];

  /** Answers the next acquires: true (held), false (another holds it) or an error. */
  answer(...answers: Array<boolean | Error>): void {
    for (const answer of answers) {
      const waiter = this.#waiting.shift();
      if (waiter) waiter(answer);
      else this.#answers.push(answer);
    }
  }

  async acquire(holder: string): Promise<boolean> {
    this.asked.push(holder);
    const answer =
      this.#answers.shift() ??
      (await new Promise<boolean | Error>((resolve) => this.#waiting.push(resolve)));
    if (answer instanceof Error) throw answer;
    return answer;
  }

  async release(holder: string): Promise<void> {
    this.released.push(holder);
  }

  /** Waits until the loop asks for round `count` (it has acted on every earlier answer). */
  async asking(count: number): Promise<void> {
    await waitFor(() => this.asked.length >= count, `acquire call ${count}`);
  }
}

/** A leader-only worker that runs until it is stopped. */
class RecordingWorker implements Worker {
  readonly name = "cron";
  running = false;
  runs = 0;

  async run(signal: AbortSignal): Promise<void> {
    this.running = true;
    this.runs += 1;
    await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
    this.running = false;
  }
}

const rejections = trackUnhandledRejections();
let controller: AbortController;
let done: Promise<void>;

function startLeader(leadership: ScriptedLeadership) {
  const made: RecordingWorker[] = [];
  const { logger, lines } = recordingLogger();
  const leader = new LeaderWorker({
    leadership,
    holder: "node-a",
    workers: () => {
      const worker = new RecordingWorker();
      made.push(worker);
      return [worker];
    },
    clock: new TestClock(),
    logger,
    metrics: new ServerMetrics(),
  });
  controller = new AbortController();
  done = leader.run(controller.signal);
  return { leader, made, lines };
}

afterEach(async () => {
  controller.abort();
});

describe("LeaderWorker", () => {
  it("runs no worker while another process holds the lease, and starts them once it gets it", async () => {
    const lease = new ScriptedLeadership();
    const { leader, made } = startLeader(lease);
    lease.answer(false, false);
    await lease.asking(3);
    expect(made).toEqual([]);
    expect(leader.isLeader).toBe(false);
    expect(leader.health()).toEqual([]);

    lease.answer(true);
    await waitFor(() => made[0]?.running, "the leader-only worker");
    expect(leader.isLeader).toBe(true);
    expect(leader.health()).toMatchObject([{ name: "cron", state: "running" }]);
    expect(lease.asked.every((holder) => holder === "node-a")).toBe(true);
    lease.answer(true);
  });

  it("keeps its workers while renewals succeed", async () => {
    const lease = new ScriptedLeadership();
    const { made } = startLeader(lease);
    lease.answer(true, true, true);
    await lease.asking(4);
    expect(made).toHaveLength(1);
    expect(made[0]?.runs).toBe(1);
    lease.answer(true);
  });

  it("stops its workers when a renewal is refused or fails, and starts fresh ones when it leads again", async () => {
    const lease = new ScriptedLeadership();
    const { leader, made, lines } = startLeader(lease);
    lease.answer(true);
    await waitFor(() => made[0]?.running, "the first term");

    lease.answer(false);
    await lease.asking(3);
    expect(made[0]?.running).toBe(false);
    expect(leader.isLeader).toBe(false);

    lease.answer(true);
    await waitFor(() => made[1]?.running, "the second term");
    lease.answer(new Error("connection terminated"));
    await lease.asking(5);
    expect(made[1]?.running).toBe(false);
    expect(leader.isLeader).toBe(false);
    expect(lines.some((line) => line.msg === "could not renew the leader lease")).toBe(true);
    lease.answer(false);
  });

  it("on stop, stops its workers and releases the lease", async () => {
    const lease = new ScriptedLeadership();
    const { leader, made } = startLeader(lease);
    lease.answer(true);
    await waitFor(() => made[0]?.running, "the leader-only worker");
    await lease.asking(2);
    controller.abort();
    lease.answer(true);
    await done;
    expect(made[0]?.running).toBe(false);
    expect(leader.isLeader).toBe(false);
    expect(lease.released).toEqual(["node-a"]);
  });

  it("releases the lease on stop as a follower too", async () => {
    const lease = new ScriptedLeadership();
    startLeader(lease);
    await lease.asking(1);
    controller.abort();
    lease.answer(false);
    await done;
    expect(lease.released).toEqual(["node-a"]);
  });

  it("as a follower, logs a lease that cannot be asked for and leads once the database answers", async () => {
    const lease = new ScriptedLeadership();
    const { leader, made, lines } = startLeader(lease);
    lease.answer(new Error("connection terminated"), new Error("connection terminated"));
    await lease.asking(3);
    expect(made).toEqual([]);
    expect(lines.filter((line) => line.msg === "could not renew the leader lease")).toHaveLength(2);

    lease.answer(true);
    await waitFor(() => made[0]?.running, "the leader-only worker");
    expect(leader.isLeader).toBe(true);
    lease.answer(true);
    expect(rejections).toEqual([]);
  });

  it("under the supervisor, a leader whose workers cannot be made crashes, is restarted and leads", async () => {
    const lease = new ScriptedLeadership();
    const { logger, lines } = recordingLogger();
    const made: RecordingWorker[] = [];
    const leader = new LeaderWorker({
      leadership: lease,
      holder: "node-a",
      workers: () => {
        if (lease.asked.length === 1) throw new Error("could not load the chat platforms");
        const worker = new RecordingWorker();
        made.push(worker);
        return [worker];
      },
      clock: new TestClock(),
      logger,
      metrics: new ServerMetrics(),
    });
    const supervisor = new Supervisor({
      clock: new TestClock(),
      logger,
      metrics: new ServerMetrics(),
      policy: { initialDelayMs: 5 },
    });
    supervisor.start(leader);
    lease.answer(true, true);
    await waitFor(() => made[0]?.running, "the leader-only worker, after the restart");
    expect(lines.filter((line) => line.msg === "worker crashed")).toMatchObject([
      { worker: "leader", error: "could not load the chat platforms" },
    ]);
    // The crashed run gave the lease back, so that another process need not wait for it.
    expect(lease.released).toEqual(["node-a"]);
    expect(leader.isLeader).toBe(true);
    const stopped = supervisor.stop();
    lease.answer(true);
    await stopped;
    expect(made[0]?.running).toBe(false);
    expect(rejections).toEqual([]);
  });
});
