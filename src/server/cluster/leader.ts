/**
 * LeaderWorker: runs the leader-only workers (crons, chat buses, cluster upkeep) on exactly
 * one process of a cluster, elected by a lease that the leader renews at half its TTL.
 *
 *   follower ──lease acquired──► leader: start the leader-only workers (own supervisor)
 *   leader ──renewal refused or failed──► follower: stop them
 *   run signal aborted ──► stop them, release the lease (a successor need not wait)
 *
 * In SQLite mode the lease is {@link soleLeadership}: the single process always leads.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { toError } from "../../base/errors.js";
import type { Logger } from "../../base/log.js";
import type { Clock, EventSink, Leadership, Worker } from "../../ports/index.js";
import type { ServerMetrics } from "../metrics.js";
import { Supervisor, type WorkerHealth } from "../supervisor.js";

/** The leadership of a process that is alone with its storage: it always leads. */
export const soleLeadership: Leadership = {
  acquire: async () => true,
  release: async () => undefined,
  renewMs: 2 ** 30,
};

/** Options of {@link LeaderWorker}. */
export interface LeaderWorkerOptions {
  leadership: Leadership;
  /** This process's instance id: the lease holder. */
  holder: string;
  /** Makes the leader-only workers, each time leadership is gained. */
  workers: () => Worker[];
  clock: Clock;
  logger: Logger;
  metrics: ServerMetrics;
  /** Where `leader.changed` goes, and the leader-only workers' crashes. (Default: nowhere) */
  events?: EventSink;
}

/** Holds or waits for the lease and runs the leader-only workers while it is held. */
export class LeaderWorker implements Worker {
  readonly name = "leader";
  readonly #options: LeaderWorkerOptions;
  #inner: Supervisor | null = null;

  constructor(options: LeaderWorkerOptions) {
    this.#options = options;
  }

  /** True while this process leads. */
  get isLeader(): boolean {
    return this.#inner !== null;
  }

  /** The leader-only workers' health; empty on a follower. */
  health(): WorkerHealth[] {
    return this.#inner?.health() ?? [];
  }

  async run(signal: AbortSignal): Promise<void> {
    const { leadership, holder, logger } = this.#options;
    try {
      while (!signal.aborted) {
        const held = await leadership.acquire(holder).catch((error: unknown) => {
          logger.warn({ error: toError(error).message }, "could not renew the leader lease");
          return false;
        });
        if (held && !this.#inner) this.#lead();
        if (!held && this.#inner) await this.#stepDown("lease lost");
        await sleep(leadership.renewMs, undefined, { signal }).catch(() => undefined);
      }
    } finally {
      if (this.#inner) await this.#stepDown("stopping");
      await leadership.release(holder).catch(() => undefined);
    }
  }

  #lead(): void {
    const { clock, logger, metrics, workers, events } = this.#options;
    const inner = new Supervisor({ clock, logger, metrics, events });
    for (const worker of workers()) inner.start(worker);
    this.#inner = inner;
    events?.publish({ type: "leader.changed", subject: this.#options.holder });
    logger.info({ instance: this.#options.holder }, "became the leader");
  }

  async #stepDown(reason: string): Promise<void> {
    const inner = this.#inner;
    this.#inner = null;
    await inner?.stop();
    this.#options.events?.publish({ type: "leader.changed", subject: null });
    this.#options.logger.info({ instance: this.#options.holder, reason }, "no longer the leader");
  }
}
