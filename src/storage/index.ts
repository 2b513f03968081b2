/**
 * Opens the persistence a workspace's config selects, in one place: the history store,
 * the job queue, the cron state, the chat outbox and pairings, and the checkpoint that ties
 * history and queue.
 *
 * SQLite (the default) keeps all of them in one database file, `history/picklebot.db`,
 * so the checkpoint is a single transaction. PostgreSQL mode (`queue.backend: postgres`)
 * keeps them, and the cluster tables, in the database of `queue.url`, through one pool.
 */
import { join } from "node:path";
import type pg from "pg";
import { type Clock, systemClock } from "../base/clock.js";
import type { Config } from "../config/index.js";
import type { ChatMessage, ClaimedJob, HistoryStore, JobAdmin, JobQueue } from "../ports.js";
import { type Checkpoint, sequentialCheckpoint } from "./checkpoint.js";
import { JsonlHistoryStore } from "./jsonl/history.js";
import { MemoryJobQueue } from "./memory/queue.js";
import { ClusterStore } from "./postgres/cluster.js";
import { PostgresCronStateStore } from "./postgres/cron-state.js";
import {
  connectionConfig,
  inTransaction,
  openPostgres,
  retryOnDisconnect,
} from "./postgres/database.js";
import { PostgresHistoryStore } from "./postgres/history.js";
import { PostgresOutboxStore } from "./postgres/outbox.js";
import { PostgresPairingStore } from "./postgres/pairing.js";
import { PostgresJobQueue } from "./postgres/queue.js";
import { StopRelay } from "./postgres/stop-relay.js";
import { type CronStateStore, SqliteCronStateStore } from "./sqlite/cron-state.js";
import { type Database, openDatabase } from "./sqlite/database.js";
import { SqliteHistoryStore } from "./sqlite/history.js";
import { type OutboxStore, SqliteOutboxStore } from "./sqlite/outbox.js";
import { type PairingStore, SqlitePairingStore } from "./sqlite/pairing.js";
import { SqliteJobQueue } from "./sqlite/queue.js";

/** The storage of one workspace, opened and ready. */
export interface Storage {
  history: HistoryStore;
  queue: JobQueue & JobAdmin;
  cronState: CronStateStore;
  checkpoint: Checkpoint;
  /** Chat replies waiting for (or done with) delivery. */
  outbox: OutboxStore;
  /** Chat users admitted by `picklebot pairing approve`. */
  pairing: PairingStore;
  /**
   * The processes sharing this storage and their leader (PostgreSQL queue), or null when
   * the storage belongs to one process (SQLite, memory).
   */
  cluster: { store: ClusterStore; queue: PostgresJobQueue; stops: StopRelay } | null;
  /** Closes the queue, the history store and the database. */
  close(): Promise<void>;
}

/** File name of the SQLite database inside `history.path`. */
export const DATABASE_FILE = "picklebot.db";

/** Opens a workspace's storage as its config says. */
export async function openStorage(config: Config, clock: Clock = systemClock): Promise<Storage> {
  if (config.queue.backend === "postgres" || config.history.backend === "postgres") {
    return openPostgresStorage(config, clock);
  }
  return openLocalStorage(config, clock);
}

/** SQLite, JSONL and memory: storage of a single process. */
function openLocalStorage(config: Config, clock: Clock): Storage {
  const db = openDatabase(join(config.history.path, DATABASE_FILE));
  const sqliteHistory =
    config.history.backend === "sqlite" ? new SqliteHistoryStore({ db, clock }) : null;
  const sqliteQueue =
    config.queue.backend === "sqlite"
      ? new SqliteJobQueue({ db, clock, defaultMaxAttempts: config.workers.max_attempts })
      : null;
  const history = sqliteHistory ?? new JsonlHistoryStore({ dir: config.history.path, clock });
  const queue =
    sqliteQueue ?? new MemoryJobQueue({ clock, defaultMaxAttempts: config.workers.max_attempts });
  const checkpoint =
    sqliteHistory && sqliteQueue
      ? sqliteCheckpoint(db, sqliteHistory, sqliteQueue)
      : sequentialCheckpoint(history, queue);
  return {
    history,
    queue,
    cronState: new SqliteCronStateStore({ db }),
    checkpoint,
    outbox: new SqliteOutboxStore({ db }),
    pairing: new SqlitePairingStore({ db }),
    cluster: null,
    async close() {
      await queue.close();
      await history.close();
      db.close();
    },
  };
}

/**
 * PostgreSQL mode: history, cron state, chat outbox, pairings and cluster tables in the
 * database of `queue.url`; the queue too unless `queue.backend` is `memory` or `sqlite`
 * (then a single process, and only `sqlite` opens the local database file).
 */
async function openPostgresStorage(config: Config, clock: Clock): Promise<Storage> {
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
  const stops = new StopRelay({ pool, connection: listenConnection });
  const local =
    config.queue.backend === "sqlite"
      ? openDatabase(join(config.history.path, DATABASE_FILE))
      : null;
  const queue: JobQueue & JobAdmin =
    postgresQueue ??
    (local
      ? new SqliteJobQueue({ db: local, clock, defaultMaxAttempts })
      : new MemoryJobQueue({ clock, defaultMaxAttempts }));
  return {
    history,
    queue,
    cronState: new PostgresCronStateStore({ pool }),
    outbox: new PostgresOutboxStore({ pool }),
    pairing: new PostgresPairingStore({ pool }),
    checkpoint: postgresQueue
      ? postgresCheckpoint(pool, history, postgresQueue)
      : sequentialCheckpoint(history, queue),
    cluster: postgresQueue
      ? { store: new ClusterStore({ pool, queue: postgresQueue }), queue: postgresQueue, stops }
      : null,
    async close() {
      await stops.close();
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
  const checkpoint = (job: ClaimedJob, sessionId: string, message: ChatMessage) =>
    inTransaction(pool, async (client) => {
      await history.appendOn(client, sessionId, message, { jobId: job.id });
      // The lock was lost: roll the append back with it, the new owner will write it.
      if (await queue.checkpointOn(client, job, sessionId)) return true;
      throw new LockLost();
    });
  return (job, sessionId, message) =>
    retryOnDisconnect(() => checkpoint(job, sessionId, message)).catch((error: unknown) => {
      if (error instanceof LockLost) return false;
      throw error;
    });
}

class LockLost extends Error {}

/** History and queue share the database: the checkpoint is one IMMEDIATE transaction. */
function sqliteCheckpoint(
  db: Database,
  history: SqliteHistoryStore,
  queue: SqliteJobQueue,
): Checkpoint {
  const checkpoint = db.transaction((job: ClaimedJob, sessionId: string, message: ChatMessage) => {
    history.appendSync(sessionId, message, { jobId: job.id });
    // The lock was lost: roll the append back with it, the new owner will write it.
    if (!queue.checkpointSync(job, sessionId)) throw new LockLost();
  });
  return async (job, sessionId, message) => {
    try {
      checkpoint.immediate(job, sessionId, message);
      return true;
    } catch (error) {
      if (error instanceof LockLost) return false;
      throw error;
    }
  };
}
