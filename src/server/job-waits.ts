/**
 * What parked jobs wait for, and whether it has happened yet: a subagent job ended (read
 * from the queue), or anything else (an approval answered…) as the server's `waitSettled`
 * says. The AgentWorker asks right after it parks a job (the wait may have ended while the
 * job still ran, which woke nothing) and, at start, of every parked job.
 */
import { FINAL_JOB_STATES, type JobAdmin, type JobQueue, type JobWait } from "../ports/index.js";

/** Parked jobs looked at once, at start, for a wait that ended unseen. */
const PARKED_SWEEP_LIMIT = 10_000;

/** What {@link JobWaits} reads and wakes. */
export interface JobWaitsOptions {
  queue: Pick<JobQueue, "wake"> & Pick<JobAdmin, "get" | "list">;
  /**
   * True when what a parked job waits for (besides its subagents) has already happened.
   * (Default: never)
   */
  waitSettled?: (wait: JobWait) => Promise<boolean>;
}

/** Tells whether waits have ended, and wakes the parked jobs whose wait has. */
export class JobWaits {
  readonly #options: JobWaitsOptions;

  constructor(options: JobWaitsOptions) {
    this.#options = options;
  }

  /** True when what `wait` names has already happened. */
  async settled(wait: JobWait): Promise<boolean> {
    if (wait.kind !== "children") return (await this.#options.waitSettled?.(wait)) ?? false;
    for (const id of wait.jobIds) {
      const child = await this.#options.queue.get(id);
      if (!child || FINAL_JOB_STATES.includes(child.state)) return true;
    }
    return false;
  }

  /**
   * Wakes the parked jobs whose wait has already ended; resolves how many. A child that
   * ends while its parent still runs wakes nothing (the parent is not waiting yet); the
   * parent sees it once parked. A process that died between the two left the parent
   * parked until its deadline (`subagent_timeout_s`), with nothing left to wake it.
   */
  async wakeSettled(): Promise<number> {
    const { queue } = this.#options;
    let woken = 0;
    for (const job of await queue.list({ state: "waiting", limit: PARKED_SWEEP_LIMIT })) {
      if (job.waitingFor && (await this.settled(job.waitingFor)) && (await queue.wake(job.id))) {
        woken += 1;
      }
    }
    return woken;
  }
}
