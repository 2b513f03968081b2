/**
 * BatchPoller: wakes the batch jobs (see agents/batch-provider.ts) whose Message Batch
 * has ended. One pass reads the parked batch jobs from the queue and, when there are any,
 * asks the API for the status of every batch created since the oldest of them in one
 * list request (a batch not on it is retrieved on its own); a job is woken when one of
 * the batches it waits for has ended, and then reads its result itself.
 *
 * The wait between passes starts at `intervalMs` and doubles while nothing ends, up to
 * `maxIntervalMs`; it starts over when a job is woken or a pass finds nothing to wait for.
 * A failing pass (the API or the database) is logged and waits like an empty one. Run
 * by the leader only: one poller per workspace, however many processes share it.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { toError } from "../base/errors.js";
import type { Logger } from "../base/log.js";
import { checkNumberOptions } from "../base/options.js";
import type {
  BatchStatus,
  Clock,
  Job,
  JobAdmin,
  JobQueue,
  ModelBatches,
  Worker,
} from "../ports/index.js";

/** Options of {@link BatchPoller}. */
export interface BatchPollerOptions {
  queue: Pick<JobQueue, "wake"> & Pick<JobAdmin, "list">;
  batches: ModelBatches;
  clock: Clock;
  logger: Logger;
  /** First wait between two passes (`llm.batch_poll_s`). */
  intervalMs: number;
  /** Longest wait between two passes. (Default: 600 000 ms) */
  maxIntervalMs?: number;
}

/** Parked jobs looked at per pass. */
const WAITING_LIMIT = 10_000;
/** How long before its step's intent a job's batch may have been created (clock skew). */
const SKEW_MS = 5 * 60_000;

/** Polls pending batches and wakes the jobs whose batch ended. */
export class BatchPoller implements Worker {
  readonly name = "batch-poller";
  readonly #options: BatchPollerOptions;

  constructor(options: BatchPollerOptions) {
    checkNumberOptions("BatchPoller", options, {
      intervalMs: "positive",
      maxIntervalMs: "positive",
    });
    this.#options = options;
  }

  async run(signal: AbortSignal): Promise<void> {
    const { intervalMs, maxIntervalMs = 600_000 } = this.#options;
    let waitMs = intervalMs;
    while (!signal.aborted) {
      const outcome = await this.pollOnce(signal);
      waitMs = outcome === "idle" ? Math.min(waitMs * 2, maxIntervalMs) : intervalMs;
      await sleep(waitMs, undefined, { signal }).catch(() => undefined);
    }
  }

  /**
   * One pass: `woke` (a job was woken), `idle` (batches pending, none ended, or the pass
   * failed), `none` (no job waits for a batch).
   */
  async pollOnce(signal?: AbortSignal): Promise<"woke" | "idle" | "none"> {
    const { queue, logger } = this.#options;
    try {
      const waiting = (await queue.list({ state: "waiting", limit: WAITING_LIMIT })).flatMap(
        (job) => (job.waitingFor?.kind === "batch" ? [{ job, ids: job.waitingFor.batchIds }] : []),
      );
      if (waiting.length === 0) return "none";
      const statuses = await this.#statuses(waiting, signal);
      let woken = 0;
      for (const { job, ids } of waiting) {
        if (ids.some((id) => statuses.get(id)?.ended) && (await queue.wake(job.id))) woken += 1;
      }
      if (woken > 0) logger.info({ woken }, "woke jobs whose message batch ended");
      return woken > 0 ? "woke" : "idle";
    } catch (thrown) {
      if (signal?.aborted) return "idle";
      logger.warn({ error: toError(thrown).message }, "could not poll message batches; will retry");
      return "idle";
    }
  }

  /** The status of every batch `jobs` wait for: one list request, then any left over. */
  async #statuses(
    waiting: { job: Job; ids: string[] }[],
    signal?: AbortSignal,
  ): Promise<Map<string, BatchStatus>> {
    const { batches, clock } = this.#options;
    const since = Math.min(...waiting.map(({ job }) => job.batchStep?.at ?? clock.now())) - SKEW_MS;
    const statuses = new Map<string, BatchStatus>();
    for (const status of await batches.listSince(since, signal)) statuses.set(status.id, status);
    for (const { ids } of waiting) {
      for (const id of ids) {
        if (!statuses.has(id)) statuses.set(id, await batches.status(id, signal));
      }
    }
    return statuses;
  }
}
