/**
 * The queue depth gauges of `/metrics` (`picklebot_queue_depth{state}`), refreshed from
 * the queue's counts now and every `intervalMs`. A count that fails (a busy or restarting
 * database) is logged and leaves the gauges as they were; the next pass tries again.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { toError } from "../base/errors.js";
import type { Logger } from "../base/log.js";
import { checkNumberOptions } from "../base/options.js";
import type { JobAdmin, Worker } from "../ports/index.js";
import type { ServerMetrics } from "./metrics.js";

/** Options of {@link QueueDepthWorker}. */
export interface QueueDepthOptions {
  queue: Pick<JobAdmin, "counts">;
  metrics: ServerMetrics;
  logger: Logger;
  /** Time between two refreshes. (Default: 5000 ms) */
  intervalMs?: number;
}

/** Keeps the queue depth gauges fresh until stopped. */
export class QueueDepthWorker implements Worker {
  readonly name = "queue-depth";
  readonly #options: QueueDepthOptions;

  constructor(options: QueueDepthOptions) {
    checkNumberOptions("QueueDepthWorker", options, { intervalMs: "positive" });
    this.#options = options;
  }

  async run(signal: AbortSignal): Promise<void> {
    const { intervalMs = 5000 } = this.#options;
    while (!signal.aborted) {
      await this.#refresh();
      await sleep(intervalMs, undefined, { signal }).catch(() => undefined);
    }
  }

  async #refresh(): Promise<void> {
    const { queue, metrics, logger } = this.#options;
    try {
      metrics.setQueueDepth(await queue.counts());
    } catch (error) {
      logger.warn(
        { error: toError(error).message },
        "could not refresh the queue depth for /metrics; trying again",
      );
    }
  }
}
