/**
 * Opens the persistence a workspace's config selects, in one place: the history store,
 * the job queue, the cron state, the chat outbox and pairings, and the checkpoint that ties
 * history and queue.
 *
 * SQLite (the default) keeps all of them in one database file, `history/picklebot.db`,
 * so the checkpoint is a single transaction.
 */
import { join } from "node:path";
import type { Config } from "./config/index.js";
import { type Database, openDatabase } from "./db/sqlite.js";
import { JsonlHistoryStore } from "./history/jsonl.js";
import { SqliteHistoryStore } from "./history/sqlite.js";
import type { ChatMessage, ClaimedJob, HistoryStore, JobAdmin, JobQueue } from "./ports.js";
import { MemoryJobQueue } from "./queue/memory.js";
import { SqliteJobQueue } from "./queue/sqlite.js";
import { type OutboxStore, SqliteOutboxStore } from "./server/bus/outbox.js";
import { type PairingStore, SqlitePairingStore } from "./server/bus/pairing.js";
import { type Checkpoint, sequentialCheckpoint } from "./server/checkpoint.js";
import { type CronStateStore, SqliteCronStateStore } from "./server/cron/state.js";
import { type Clock, systemClock } from "./server/worker.js";

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
  /** Closes the queue, the history store and the database. */
  close(): Promise<void>;
}

/** File name of the SQLite database inside `history.path`. */
export const DATABASE_FILE = "picklebot.db";

/** Opens a workspace's storage as its config says. */
export function openStorage(config: Config, clock: Clock = systemClock): Storage {
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
    async close() {
      await queue.close();
      await history.close();
      db.close();
    },
  };
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
