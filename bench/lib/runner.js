/**
 * A minimal AgentWorker for benchmarks: claims as many jobs as it has free slots (one
 * claim per batch), runs each through `handler`, completes it, and claims again when a
 * slot frees or the queue says a job may be runnable.
 */

/**
 * Starts claiming from `queue`. `handler(job)` may return a promise; `onComplete(job)` is
 * called once the job's completion is stored.
 * @returns {{ stop(): void, claims(): number }}
 */
export function startRunner(queue, { concurrency, handler, onComplete, workerId = "bench" }) {
  let inFlight = 0;
  let stopped = false;
  let pumping = false;
  let pumpAgain = false;
  let claims = 0;
  let pumpQueued = false;

  /** One pump per burst of completions, so that a claim fills every free slot at once. */
  function schedulePump() {
    if (pumpQueued) return;
    pumpQueued = true;
    queueMicrotask(() => {
      pumpQueued = false;
      void pump();
    });
  }

  async function pump() {
    if (pumping) {
      pumpAgain = true;
      return;
    }
    pumping = true;
    try {
      do {
        pumpAgain = false;
        const free = concurrency - inFlight;
        if (stopped || free <= 0) break;
        const jobs = await queue.claim(workerId, free);
        claims += 1;
        for (const job of jobs) void run(job);
        if (jobs.length === free) pumpAgain = true;
      } while (pumpAgain);
    } finally {
      pumping = false;
    }
  }

  async function run(job) {
    inFlight += 1;
    try {
      await handler(job);
      await queue.complete(job);
      onComplete?.(job);
    } finally {
      inFlight -= 1;
      schedulePump();
    }
  }

  const unsubscribe = queue.onRunnable(() => void pump());
  void pump();
  return {
    stop() {
      stopped = true;
      unsubscribe();
    },
    claims: () => claims,
  };
}
