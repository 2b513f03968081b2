/**
 * Retention: deletes finished jobs and delivered outbox entries after
 * `queue.job_retention_h`, in every backend (leader-only, so one process of a cluster
 * does it). Each statement deletes at most {@link PRUNE_BATCH} rows and the worker yields
 * between statements, so a claim never waits behind a long delete. Then the stored
 * copies of the outbox's files (src/chat/outbox-files.ts) that no remaining entry
 * describes, stored before the same cutoff, are deleted from this process's history.
 *
 * The files people sent (the history's `media/`) are not touched: they belong to the
 * sessions, which retention keeps.
 */
import { setTimeout as sleep, setImmediate as yieldToOthers } from "node:timers/promises";
import { toError } from "../base/errors.js";
import type { Logger } from "../base/log.js";
import { checkNumberOptions } from "../base/options.js";
import type { OutboxFiles } from "../chat/outbox-files.js";
import {
  type Clock,
  type JobAdmin,
  type OutboxStore,
  PRUNE_BATCH,
  type Worker,
} from "../ports/index.js";

/** How often the retention pass runs. */
export const RETENTION_INTERVAL_MS = 60_000;

/** Options of {@link RetentionWorker}. */
export interface RetentionOptions {
  queue: Pick<JobAdmin, "prune">;
  outbox: Pick<OutboxStore, "pruneDelivered" | "fileTexts">;
  /** The stored copies of the outbox's files. (Default: none are deleted) */
  files?: OutboxFiles;
  /** How long done and failed jobs and delivered entries are kept. */
  retentionMs: number;
  clock: Clock;
  logger: Logger;
  /** (Default: {@link RETENTION_INTERVAL_MS}) */
  intervalMs?: number;
}

/** Leader-only: prunes what is finished and older than the retention. */
export class RetentionWorker implements Worker {
  readonly name = "retention";
  readonly #options: RetentionOptions;

  constructor(options: RetentionOptions) {
    checkNumberOptions("Retention", options, { retentionMs: "positive" });
    this.#options = options;
  }

  async run(signal: AbortSignal): Promise<void> {
    const { logger, intervalMs = RETENTION_INTERVAL_MS } = this.#options;
    while (!signal.aborted) {
      await this.prunePass(signal).catch((error: unknown) =>
        logger.warn({ error: toError(error).message }, "retention pass failed; trying again later"),
      );
      await sleep(intervalMs, undefined, { signal }).catch(() => undefined);
    }
  }

  /** One pass: every batch past the retention, until a batch comes back short. */
  async prunePass(
    signal?: AbortSignal,
  ): Promise<{ jobs: number; outbox: number; outboxFiles: number }> {
    const { queue, outbox, files, clock, logger, retentionMs } = this.#options;
    const cutoff = clock.now() - retentionMs;
    const jobs = await inBatches((batch) => queue.prune(cutoff, batch), signal);
    const entries = await inBatches((batch) => outbox.pruneDelivered(cutoff, batch), signal);
    const outboxFiles = files ? await files.sweep(await outbox.fileTexts(), cutoff) : 0;
    if (jobs > 0 || entries > 0 || outboxFiles > 0) {
      logger.info(
        { jobs, outbox: entries, outboxFiles },
        "deleted finished jobs and delivered replies past their retention",
      );
    }
    return { jobs, outbox: entries, outboxFiles };
  }
}

async function inBatches(
  prune: (batch: number) => Promise<number>,
  signal: AbortSignal | undefined,
): Promise<number> {
  let total = 0;
  for (;;) {
    const deleted = await prune(PRUNE_BATCH);
    total += deleted;
    if (deleted < PRUNE_BATCH || signal?.aborted) return total;
    // Lets a claim or a completion waiting on this process run between two deletes.
    await yieldToOthers();
  }
}
