import { costOf, type PriceTable, priceOf } from "../agents/prices.js";
import type { JobState, TokenUsage } from "../ports/index.js";
import { Counter, Gauge, Histogram, Registry } from "./prom-client.js";

/** Options of {@link ServerMetrics}. */
export interface ServerMetricsOptions {
  /** `llm.prices`, over the built-in table, for `picklebot_cost_usd_total`. (Default: none) */
  prices?: PriceTable;
}

/** Model calls of one agent, as {@link ServerMetrics.countTokens} counts them. */
export interface CountedCalls {
  agentId: string;
  model: string;
  usage: TokenUsage;
  /** Sent through the Message Batches API, at the batch price. (Default: false) */
  batch?: boolean;
}

/** The Prometheus metrics of one server process (docs/design.md §7), on their own registry. */
export class ServerMetrics {
  readonly registry = new Registry();
  readonly #prices: PriceTable;
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
  readonly eventsDropped = new Counter({
    name: "picklebot_events_dropped_total",
    help: "Events a slow /events subscriber lost because its queue was full",
    registers: [this.registry],
  });
  readonly eventClients = new Gauge({
    name: "picklebot_event_clients",
    help: "Live /events clients (the dashboard's pages among them)",
    registers: [this.registry],
  });
  readonly llmTokens = new Counter({
    name: "picklebot_llm_tokens_total",
    help: "Tokens used by model calls, by type",
    labelNames: ["type"] as const,
    registers: [this.registry],
  });
  readonly tokens = new Counter({
    name: "picklebot_tokens_total",
    help: "Tokens used by model calls, by agent and kind (input, output, cache_read, cache_write)",
    labelNames: ["agent", "kind"] as const,
    registers: [this.registry],
  });
  readonly costUsd = new Counter({
    name: "picklebot_cost_usd_total",
    help: "Cost of model calls in USD at the workspace's prices, by agent",
    labelNames: ["agent"] as const,
    registers: [this.registry],
  });

  constructor(options: ServerMetricsOptions = {}) {
    this.#prices = options.prices ?? {};
  }

  /** Adds the tokens and cost of model calls whose usage is known (a turn, a compaction). */
  countTokens({ agentId, model, usage, batch = false }: CountedCalls): void {
    const kinds = {
      input: usage.input,
      output: usage.output,
      cache_read: usage.cacheRead,
      cache_write: usage.cacheWrite,
    };
    for (const [kind, count] of Object.entries(kinds)) {
      this.llmTokens.inc({ type: kind }, count);
      this.tokens.inc({ agent: agentId, kind }, count);
    }
    const price = priceOf(model, this.#prices);
    this.costUsd.inc({ agent: agentId }, price ? costOf(usage, price, batch) : 0);
  }

  /** Sets the queue depth gauges from the queue's counts. */
  setQueueDepth(counts: Record<JobState, number>): void {
    for (const [state, count] of Object.entries(counts)) this.queueDepth.set({ state }, count);
  }
}
