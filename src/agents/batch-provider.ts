/**
 * Batch mode: a {@link ModelProvider} for one job whose model steps go through the
 * provider's batch API ({@link ModelBatches}) instead of a streamed call. The agent loop
 * does not know: a step's `complete()` either returns the batch's answer or throws
 * ParkRequest, and the job resumes from history when the batch ends, as after any park.
 *
 * A step's life, stored in the job's row (`Job.batchStep`) so that a crash at any point
 * neither submits a batch twice nor loses its answer:
 *
 *   new step ─► intent stored (custom_id, no batch id) ─► batch created ─► its id stored
 *            ─► parked until the batch ends (the BatchPoller wakes it)
 *   resumed, batch ended ─► succeeded: its message is the reply (the loop stores it)
 *                       └► errored / expired / canceled: `fallback` stored, one normal call
 *   resumed with an intent but no batch id (a crash around the create): the batches
 *      created since the intent that no other job recorded are read as they end; the one
 *      holding the custom_id is this step's, and only when none does is it submitted.
 *   more than `maxSteps` steps, or no batch API ─► normal calls
 *
 * The custom_id names the job and the history the step answers (a hash of the request's
 * last message), so it stays the same for the step across crashes and changes with it.
 */
import { createHash } from "node:crypto";
import { ParkRequest, PicklebotError } from "../base/errors.js";
import type {
  BatchStep,
  Clock,
  ModelBatches,
  ModelProvider,
  ModelReply,
  ModelRequest,
} from "../ports/index.js";

/** A batch job, as the worker hands it to the runner. */
export interface BatchJob {
  jobId: string;
  /** The step stored in the job's row when it was claimed (`Job.batchStep`). */
  step: BatchStep | null;
  /** Stores the job's step durably; throws when it cannot (the job's lock was lost). */
  record(step: BatchStep): Promise<void>;
  /** Batch ids other jobs have recorded: never this job's candidates after a crash. */
  othersBatchIds(): Promise<Set<string>>;
}

/** Options of {@link createBatchProvider}. */
export interface BatchProviderOptions {
  provider: ModelProvider & { batches: ModelBatches };
  job: BatchJob;
  /** Steps sent through batches, at most (`llm.batch_max_steps`). */
  maxSteps: number;
  clock: Clock;
}

/** How long a parked batch job waits at most: a batch ends within 24 hours. */
export const BATCH_WAIT_MS = 25 * 3_600_000;

/** How far before its intent a batch holding a step may have been created (clock skew). */
const CREATED_SKEW_MS = 5 * 60_000;

/** The provider a batch job's turn calls. */
export function createBatchProvider(options: BatchProviderOptions): ModelProvider {
  const { provider, job, maxSteps, clock } = options;
  const batches = provider.batches;
  let current = job.step;

  async function record(step: BatchStep): Promise<void> {
    await job.record(step);
    current = step;
  }

  /** Parks the job until `batchIds` end. */
  function parkOn(batchIds: string[]): never {
    throw new ParkRequest({ kind: "batch", batchIds }, clock.now() + BATCH_WAIT_MS);
  }

  /** The answer of a recorded batch: its reply, a park while it runs, or the fallback. */
  async function collect(step: BatchStep & { batchId: string }, request: ModelRequest) {
    const status = await batches.status(step.batchId, request.signal);
    if (!status.ended) parkOn([step.batchId]);
    const outcome = await batches.outcome(step.batchId, step.customId, request.signal);
    if (outcome?.kind === "succeeded") return outcome.reply;
    await record({ ...step, fallback: true });
    return provider.complete(request);
  }

  /**
   * After a crash between storing the intent and storing the batch id: the step's batch,
   * if it was created. Parks while a candidate is still running; null when none holds it.
   */
  async function findSubmitted(step: BatchStep, request: ModelRequest) {
    const others = await job.othersBatchIds();
    const candidates = (await batches.listSince(step.at - CREATED_SKEW_MS, request.signal)).filter(
      (batch) => !others.has(batch.id),
    );
    const running: string[] = [];
    for (const batch of candidates) {
      if (!batch.ended) {
        running.push(batch.id);
        continue;
      }
      const outcome = await batches.outcome(batch.id, step.customId, request.signal);
      if (outcome === null) continue;
      const found = { ...step, batchId: batch.id };
      await record(found);
      return collect(found, request);
    }
    if (running.length > 0) parkOn(running);
    return null;
  }

  return {
    ...(provider.countTokens ? { countTokens: provider.countTokens.bind(provider) } : {}),
    async complete(request): Promise<ModelReply> {
      const customId = customIdFor(job.jobId, request);
      let step = current;
      if (step?.customId === customId) {
        if (step.fallback) return provider.complete(request);
        if (step.batchId !== null) return collect({ ...step, batchId: step.batchId }, request);
        const found = await findSubmitted(step, request);
        if (found) return found;
      } else {
        const steps = (step?.steps ?? 0) + 1;
        if (steps > maxSteps) return provider.complete(request);
        step = { customId, batchId: null, at: clock.now(), steps, fallback: false };
        await record(step);
      }
      const batchId = await batches.submit(customId, request);
      await record({ ...step, batchId });
      return parkOn([batchId]);
    },
  };
}

/** The custom_id of the step that answers `request` in job `jobId` (at most 64 characters). */
export function customIdFor(jobId: string, request: Pick<ModelRequest, "messages">): string {
  const last = JSON.stringify(request.messages.at(-1) ?? null);
  const hash = createHash("sha256").update(last).digest("hex").slice(0, 16);
  const job = jobId.replace(/[^a-zA-Z0-9_-]/g, "_").slice(0, 40);
  return `pb_${job}_${hash}`;
}

/** True when `provider` has a batch API. */
export function hasBatches(
  provider: ModelProvider,
): provider is ModelProvider & { batches: ModelBatches } {
  return provider.batches !== undefined;
}

/** Thrown by {@link BatchJob.record} when the job's lock is gone. */
export class LostBatchLock extends PicklebotError {
  constructor(jobId: string) {
    super(`job ${jobId} lost its lock while recording its batch step`, {
      retryable: true,
      context: { jobId },
    });
  }
}
