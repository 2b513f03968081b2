/**
 * The cluster's upkeep, run by the leader only: the heartbeat every process sends, the
 * removal of processes that stopped sending it (their running jobs are requeued), and the
 * deletion of finished jobs after `cluster.job_retention_h`.
 */

import { setTimeout as sleep } from "node:timers/promises";
import { toError } from "../../base/errors.js";
import type { Logger } from "../../base/log.js";
import { checkNumberOptions } from "../../base/options.js";
import type { Clock, ClusterStore, EventSink, InstanceInfo, Worker } from "../../ports/index.js";

/** How often finished jobs past their retention are deleted. */
const PRUNE_INTERVAL_MS = 60_000;

/** Options of {@link ClusterUpkeepWorker}. */
export interface ClusterUpkeepOptions {
  cluster: ClusterStore;
  /** How often expired instances are looked for (`cluster.heartbeat_s`). */
  intervalMs: number;
  /** Jobs claimed by an id without a row longer ago than this are orphans (instance TTL). */
  orphanAfterMs: number;
  /** How long done and failed jobs are kept (`cluster.job_retention_h`). */
  retentionMs: number;
  clock: Clock;
  logger: Logger;
  /** Where `instance.left` goes for each expired instance. (Default: nowhere) */
  events?: EventSink;
}

/** Leader-only: rescues the jobs of dead processes and prunes finished jobs. */
export class ClusterUpkeepWorker implements Worker {
  readonly name = "cluster";
  readonly #options: ClusterUpkeepOptions;
  #lastPrune = Number.NEGATIVE_INFINITY;

  constructor(options: ClusterUpkeepOptions) {
    checkNumberOptions("ClusterUpkeep", options, {
      intervalMs: "positive",
      orphanAfterMs: "positive",
      retentionMs: "positive",
    });
    this.#options = options;
  }

  async run(signal: AbortSignal): Promise<void> {
    const { intervalMs, logger } = this.#options;
    while (!signal.aborted) {
      await this.#pass().catch((error: unknown) =>
        logger.warn({ error: toError(error).message }, "cluster upkeep failed; trying again"),
      );
      await sleep(intervalMs, undefined, { signal }).catch(() => undefined);
    }
  }

  async #pass(): Promise<void> {
    const { cluster, clock, logger, orphanAfterMs, retentionMs } = this.#options;
    const now = clock.now();
    const reaped = await cluster.reapExpired(now - orphanAfterMs);
    for (const subject of reaped.instances) {
      this.#options.events?.publish({ type: "instance.left", subject });
    }
    if (reaped.instances.length > 0 || reaped.jobs > 0) {
      logger.warn(
        { instances: reaped.instances, jobs: reaped.jobs },
        "removed instances whose heartbeat expired; requeued their running jobs",
      );
    }
    if (now - this.#lastPrune < PRUNE_INTERVAL_MS) return;
    this.#lastPrune = now;
    let pruned = 0;
    for (let batch = await cluster.pruneFinishedJobs(now - retentionMs); batch > 0; ) {
      pruned += batch;
      batch = await cluster.pruneFinishedJobs(now - retentionMs);
    }
    if (pruned > 0) logger.info({ pruned }, "deleted finished jobs past their retention");
  }
}

/** Options of {@link Heartbeat}. */
export interface HeartbeatOptions {
  cluster: ClusterStore;
  instance: InstanceInfo;
  intervalMs: number;
  logger: Logger;
}

/**
 * Keeps this process's row fresh until stopped. Not a supervised worker: it must go on
 * while the workers drain on shutdown, or a slow last job would look like a dead process.
 */
export class Heartbeat {
  readonly #options: HeartbeatOptions;
  #timer: NodeJS.Timeout | null = null;
  #beating: Promise<void> = Promise.resolve();

  constructor(options: HeartbeatOptions) {
    checkNumberOptions("Heartbeat", options, { intervalMs: "positive" });
    this.#options = options;
  }

  /** Starts beating every `intervalMs`. */
  start(): void {
    this.#timer = setInterval(() => {
      this.#beating = this.#beat();
    }, this.#options.intervalMs);
    this.#timer.unref();
  }

  /** Stops beating (after the last beat in flight). */
  async stop(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    await this.#beating;
  }

  async #beat(): Promise<void> {
    const { cluster, instance, logger } = this.#options;
    try {
      if (!(await cluster.heartbeat(instance))) {
        logger.error(
          { instance: instance.id },
          "another process took this instance id; give each process its own PICKLEBOT_INSTANCE_ID",
        );
      }
    } catch (error) {
      logger.warn({ error: toError(error).message }, "heartbeat failed; trying again");
    }
  }
}
