/**
 * The PostgreSQL driver (distributed mode): history, cron state, chat outbox, pairings,
 * approvals, memory and the cluster tables in the database of `queue.url`, through one pool; the
 * queue too unless `queue.backend` is `memory` or `sqlite` (then a single process, and
 * only `sqlite` opens the local database file).
 */

import type pg from "pg";
import type { Config } from "../../config/index.js";
import type {
  ChatMessage,
  Checkpoint,
  ClaimedJob,
  Clock,
  FailJob,
  FailOptions,
  JobAdmin,
  JobQueue,
  MessageCharge,
  Storage,
  TurnClosing,
} from "../../ports/index.js";
import { LockLost, sequentialCheckpoint, sequentialFailJob } from "../checkpoint.js";
import { MemoryJobQueue } from "../memory/queue.js";
import { openWorkspaceDatabase } from "../sqlite/index.js";
import { SqliteJobQueue } from "../sqlite/queue.js";
import { PostgresApprovalStore } from "./approvals.js";
import { PostgresClusterStore } from "./cluster.js";
import { PostgresCronStateStore } from "./cron-state.js";
import { connectionConfig, inTransaction, openPostgres, retryOnDisconnect } from "./database.js";
import { PostgresEventRelay } from "./event-relay.js";
import { PostgresHistoryStore } from "./history.js";
import { PostgresMemoryStore, PostgresRecallStore } from "./memory.js";
import { PostgresOutboxStore } from "./outbox.js";
import { PostgresPairingStore } from "./pairing.js";
import { PostgresJobQueue } from "./queue.js";
import { PostgresScheduleStore } from "./schedules.js";
import { PostgresStopRelay } from "./stop-relay.js";

/** Opens every store in the database of `queue.url` (migrated on first use). */
export async function openPostgresStorage(config: Config, clock: Clock): Promise<Storage> {
  // The schema's superRefine requires queue.url whenever a backend is postgres.
  const settings = { url: config.queue.url as string, poolSize: config.queue.pool_size };
  const pool = await openPostgres(settings);
  const history = new PostgresHistoryStore({ pool, clock });
  const defaultMaxAttempts = config.workers.max_attempts;
  const listenConnection = connectionConfig({ ...settings, applicationName: "picklebot-listen" });
  const postgresQueue =
    config.queue.backend === "postgres"
      ? new PostgresJobQueue({ pool, clock, defaultMaxAttempts, connection: listenConnection })
      : null;
  const stops = new PostgresStopRelay({ pool, connection: listenConnection });
  const events = new PostgresEventRelay({ pool, connection: listenConnection });
  const local = config.queue.backend === "sqlite" ? openWorkspaceDatabase(config) : null;
  const queue: JobQueue & JobAdmin =
    postgresQueue ??
    (local
      ? new SqliteJobQueue({ db: local, clock, defaultMaxAttempts })
      : new MemoryJobQueue({ clock, defaultMaxAttempts }));
  return {
    history,
    usage: history,
    queue,
    cronState: new PostgresCronStateStore({ pool }),
    outbox: new PostgresOutboxStore({ pool }),
    pairing: new PostgresPairingStore({ pool }),
    approvals: new PostgresApprovalStore({ pool }),
    memory: new PostgresMemoryStore({ pool }),
    recall: new PostgresRecallStore({ pool }),
    schedules: new PostgresScheduleStore({ pool }),
    checkpoint: postgresQueue
      ? postgresCheckpoint(pool, history, postgresQueue)
      : sequentialCheckpoint(history, queue),
    failJob: postgresQueue
      ? postgresFailJob(pool, history, postgresQueue)
      : sequentialFailJob(history, queue),
    cluster: postgresQueue
      ? { store: new PostgresClusterStore({ pool, queue: postgresQueue }), stops, events }
      : null,
    async close() {
      await stops.close();
      await events.close();
      await queue.close();
      await history.close();
      local?.close();
      await pool.end();
    },
  };
}

/** History and queue share the database: the checkpoint is one Postgres transaction. */
function postgresCheckpoint(
  pool: pg.Pool,
  history: PostgresHistoryStore,
  queue: PostgresJobQueue,
): Checkpoint {
  // Safe to repeat after a lost connection: the append is keyed by the job id and the
  // job's update is fenced by its lock token.
  const checkpoint = (
    job: ClaimedJob,
    sessionId: string,
    message: ChatMessage,
    charge: MessageCharge | undefined,
  ) =>
    inTransaction(pool, async (client) => {
      await history.appendOn(client, sessionId, message, { jobId: job.id, ...charge });
      // The lock was lost: roll the append back with it, the new owner will write it.
      if (await queue.checkpointOn(client, job, sessionId)) return true;
      throw new LockLost();
    });
  return (job, sessionId, message, charge) =>
    retryOnDisconnect(() => checkpoint(job, sessionId, message, charge)).catch((error: unknown) => {
      if (error instanceof LockLost) return false;
      throw error;
    });
}

/** History and queue share the database: failing a job and closing its turn is one transaction. */
function postgresFailJob(
  pool: pg.Pool,
  history: PostgresHistoryStore,
  queue: PostgresJobQueue,
): FailJob {
  // Safe to repeat after a lost connection: the job's update is fenced by its lock token,
  // so a repeat after a commit finds the lock gone and rolls its appends back.
  const failJob = (
    job: ClaimedJob,
    error: string,
    closing: TurnClosing | null,
    options: FailOptions,
  ) =>
    inTransaction(pool, async (client) => {
      if (!(await queue.failOn(client, job, error, null, options))) throw new LockLost();
      if (!closing) return true;
      for (const message of closing.messages)
        await history.appendOn(client, closing.sessionId, message, {});
      return true;
    });
  return (job, error, closing, options = {}) =>
    retryOnDisconnect(() => failJob(job, error, closing, options)).catch((thrown: unknown) => {
      if (thrown instanceof LockLost) return false;
      throw thrown;
    });
}
