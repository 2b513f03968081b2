import { Counter, Gauge, Histogram, Registry } from "prom-client";
import type { JobState, TokenUsage } from "../ports/index.js";

/** How a job attempt ended, the `outcome` label of `picklebot_jobs_processed_total`. */
export type JobOutcome = "done" | "retry" | "failed" | "interrupted" | "parked" | "discarded";

/** The Prometheus metrics of one server process (DESIGN §7), on their own registry. */
export class ServerMetrics {
  readonly registry = new Registry();
  readonly jobsProcessed = new Counter({
    name: "picklebot_jobs_processed_total",
    help: "Job attempts finished, by outcome",
    labelNames: ["outcome"] as const,
    registers: [this.registry],
  });
  readonly jobDuration = new Histogram({
    name: "picklebot_job_duration_seconds",
    help: "Time from claim to the end of a job attempt",
    buckets: [0.05, 0.1, 0.5, 1, 2, 5, 10, 30, 60, 120, 300],
    registers: [this.registry],
  });
  readonly jobsInFlight = new Gauge({
    name: "picklebot_jobs_in_flight",
    help: "Jobs this process is running now",
    registers: [this.registry],
  });
  readonly queueDepth = new Gauge({
    name: "picklebot_queue_depth",
    help: "Jobs in the queue, by state",
    labelNames: ["state"] as const,
    registers: [this.registry],
  });
  readonly workerRestarts = new Counter({
    name: "picklebot_worker_restarts_total",
    help: "Times the supervisor restarted a crashed worker",
    labelNames: ["worker"] as const,
    registers: [this.registry],
  });
  readonly llmTokens = new Counter({
    name: "picklebot_llm_tokens_total",
    help: "Tokens used by model calls, by type",
    labelNames: ["type"] as const,
    registers: [this.registry],
  });

  /** Adds one turn's token usage. */
  countTokens(usage: TokenUsage): void {
    this.llmTokens.inc({ type: "input" }, usage.input);
    this.llmTokens.inc({ type: "output" }, usage.output);
    this.llmTokens.inc({ type: "cache_read" }, usage.cacheRead);
    this.llmTokens.inc({ type: "cache_write" }, usage.cacheWrite);
  }

  /** Sets the queue depth gauges from the queue's counts. */
  setQueueDepth(counts: Record<JobState, number>): void {
    for (const [state, count] of Object.entries(counts)) this.queueDepth.set({ state }, count);
  }
}
