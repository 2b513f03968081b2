/**
 * The SQLite driver: every store of a single process in one database file, and the
 * checkpoint as one IMMEDIATE transaction. `queue.backend: memory` and
 * `history.backend: jsonl` swap in those stores; the checkpoint is then sequential.
 */
import { join } from "node:path";
import type { Config } from "../../config/index.js";
import type {
  ChatMessage,
  Checkpoint,
  ClaimedJob,
  Clock,
  FailJob,
  FailOptions,
  MessageCharge,
  Storage,
  TurnClosing,
} from "../../ports/index.js";
import { LockLost, sequentialCheckpoint, sequentialFailJob } from "../checkpoint.js";
import { JsonlHistoryStore } from "../jsonl/history.js";
import { MemoryJobQueue } from "../memory/queue.js";
import { SqliteApprovalStore } from "./approvals.js";
import { SqliteCronStateStore } from "./cron-state.js";
import { type Database, openDatabase } from "./database.js";
import { SqliteHistoryStore } from "./history.js";
import { SqliteMemoryStore, SqliteRecallStore } from "./memory.js";
import { SqliteOutboxStore } from "./outbox.js";
import { SqlitePairingStore } from "./pairing.js";
import { SqliteJobQueue } from "./queue.js";
import { SqliteScheduleStore } from "./schedules.js";

/** File name of the SQLite database inside `history.path`. */
export const DATABASE_FILE = "picklebot.db";

/** Opens the workspace's database file (created and migrated when new). */
export function openWorkspaceDatabase(config: Config): Database {
  return openDatabase(join(config.history.path, DATABASE_FILE), {
    synchronous: config.history.synchronous,
  });
}

/** SQLite, with a JSONL history or a memory queue when the config says so. */
export function openSqliteStorage(config: Config, clock: Clock): Storage {
  const db = openWorkspaceDatabase(config);
  const defaultMaxAttempts = config.workers.max_attempts;
  const sqliteHistory =
    config.history.backend === "sqlite" ? new SqliteHistoryStore({ db, clock }) : null;
  const sqliteQueue =
    config.queue.backend === "sqlite"
      ? new SqliteJobQueue({ db, clock, defaultMaxAttempts })
      : null;
  const history = sqliteHistory ?? new JsonlHistoryStore({ dir: config.history.path, clock });
  const queue = sqliteQueue ?? new MemoryJobQueue({ clock, defaultMaxAttempts });
  return {
    history,
    usage: history,
    queue,
    cronState: new SqliteCronStateStore({ db }),
    checkpoint:
      sqliteHistory && sqliteQueue
        ? sqliteCheckpoint(db, sqliteHistory, sqliteQueue)
        : sequentialCheckpoint(history, queue),
    failJob:
      sqliteHistory && sqliteQueue
        ? sqliteFailJob(db, sqliteHistory, sqliteQueue)
        : sequentialFailJob(history, queue),
    outbox: new SqliteOutboxStore({ db }),
    pairing: new SqlitePairingStore({ db }),
    approvals: new SqliteApprovalStore({ db }),
    memory: new SqliteMemoryStore({ db }),
    recall: new SqliteRecallStore({ db, searchable: sqliteHistory !== null }),
    schedules: new SqliteScheduleStore({ db }),
    cluster: null,
    async close() {
      await queue.close();
      await history.close();
      db.close();
    },
  };
}

/** History and queue share the database: the checkpoint is one IMMEDIATE transaction. */
function sqliteCheckpoint(
  db: Database,
  history: SqliteHistoryStore,
  queue: SqliteJobQueue,
): Checkpoint {
  const checkpoint = db.transaction(
    (job: ClaimedJob, sessionId: string, message: ChatMessage, charge?: MessageCharge) => {
      history.appendSync(sessionId, message, { jobId: job.id, ...charge });
      // The lock was lost: roll the append back with it, the new owner will write it.
      if (!queue.checkpointSync(job, sessionId)) throw new LockLost();
    },
  );
  return async (job, sessionId, message, charge) => {
    try {
      checkpoint.immediate(job, sessionId, message, charge);
      return true;
    } catch (error) {
      if (error instanceof LockLost) return false;
      throw error;
    }
  };
}

/** History and queue share the database: failing a job and closing its turn is one transaction. */
function sqliteFailJob(db: Database, history: SqliteHistoryStore, queue: SqliteJobQueue): FailJob {
  const failJob = db.transaction(
    (job: ClaimedJob, error: string, closing: TurnClosing | null, options: FailOptions) => {
      if (!queue.failSync(job, error, null, options)) throw new LockLost();
      if (!closing) return;
      for (const message of closing.messages) history.appendSync(closing.sessionId, message);
    },
  );
  return async (job, error, closing, options = {}) => {
    try {
      failJob.immediate(job, error, closing, options);
      return true;
    } catch (thrown) {
      if (thrown instanceof LockLost) return false;
      throw thrown;
    }
  };
}
