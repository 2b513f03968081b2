/**
 * The events of a job's attempt, as the AgentWorker publishes them: `job.*` for its
 * state, `model.*` and `tool.*` for the calls of its turn.
 */
import type {
  ClaimedJob,
  EventSink,
  JobEvent,
  JobOutcome,
  ModelEvent,
  NewEvent,
  ToolEvent,
} from "../ports/index.js";

/** A model-call or tool-call event, without what the job adds. */
export type CallEvent =
  | Pick<ModelEvent, "type" | "model" | "usage">
  | Pick<ToolEvent, "type" | "tool" | "callId" | "isError">;

/** Publishes a job's events to a sink. */
export class JobEventPublisher {
  readonly #sink: EventSink;

  constructor(sink: EventSink) {
    this.#sink = sink;
  }

  /** A job event of `job`, as it stands now. */
  job(type: JobEvent["type"], job: ClaimedJob, more: Partial<JobEvent> = {}): void {
    const { id: jobId, agentId, sessionKey, attempts } = job;
    this.#sink.publish({ type, jobId, agentId, sessionKey, attempts, ...more });
  }

  /**
   * The event that says how an attempt ended: `done` and `discarded` are `job.done`,
   * `failed` and `retry` are `job.failed`, `stopped` is `job.stopped`; `interrupted` (it
   * runs again) and `parked` (published when it parks) add none.
   */
  outcome(job: ClaimedJob, outcome: JobOutcome, error: string | undefined): void {
    if (outcome === "done" || outcome === "discarded") this.job("job.done", job);
    else if (outcome === "failed") this.job("job.failed", job, { error });
    else if (outcome === "stopped") this.job("job.stopped", job, { error });
    else if (outcome === "retry") this.job("job.failed", job, { error, retrying: true });
  }

  /** A model-call or tool-call event of the job's turn in session `sessionId`. */
  call(event: CallEvent, job: ClaimedJob, sessionId: string): void {
    this.#sink.publish({ ...event, jobId: job.id, agentId: job.agentId, sessionId } as NewEvent);
  }
}
