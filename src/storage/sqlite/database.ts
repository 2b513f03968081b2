import { mkdirSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname } from "node:path";
import Database from "better-sqlite3";
import { toError, UserError } from "../../base/errors.js";
import { throwingClassifiedErrors } from "./unavailable.js";

export type { Database } from "better-sqlite3";

/** Folder of the numbered SQLite migrations (`NNN_name.sql`), shared by every table owner. */
const MIGRATIONS_DIR = new URL("../../../migrations/sqlite/", import.meta.url);

/**
 * Page size of a new database. Every committed enqueue writes four pages to the WAL (the
 * row and three index entries), so commit cost grows with the page: 1 KiB pages commit
 * about a fifth faster than the 4 KiB default, and long messages (tens of KiB) read and
 * write about a third slower, which next to a model call does not show. An existing
 * database keeps its page size.
 */
const NEW_DATABASE_PAGE_SIZE = 1024;

/**
 * WAL size at which a commit copies the WAL back into the database (a checkpoint, with two
 * fsyncs). SQLite's default of 1000 pages meant one checkpoint every 250 enqueues.
 */
const CHECKPOINT_WAL_BYTES = 8 * 1024 * 1024;

/**
 * How commits reach the disk (`history.synchronous`). `full`: each commit is fsynced
 * before it returns, so a power cut loses nothing committed; `normal`: the WAL is fsynced
 * only at checkpoints, so a power cut can lose the last commits (a process crash cannot).
 * bench/durability.js measures the cost (bench/RESULTS.md).
 */
export type Synchronous = "full" | "normal";

/** Options of {@link openDatabase}. */
export interface OpenDatabaseOptions {
  /** (Default: `full`) */
  synchronous?: Synchronous;
}

/**
 * Opens (creating if needed) picklebot's SQLite database: WAL, `synchronous=FULL` unless
 * told otherwise, a busy timeout so the CLI and the server can share it, and every
 * migration applied. A file that cannot be created, written or read as a database is a
 * UserError naming it and the fix, found here at start-up rather than by the first write
 * of a worker. From then on a failure that means the database cannot be used right now
 * (busy, full, failing I/O) is a StorageUnavailableError (`unavailable.ts`).
 */
export function openDatabase(path: string, options: OpenDatabaseOptions = {}): Database.Database {
  let db: Database.Database;
  try {
    db = openWritable(path, options);
  } catch (thrown) {
    throw databaseOpenError(path, thrown);
  }
  return throwingClassifiedErrors(db);
}

function openWritable(path: string, options: OpenDatabaseOptions): Database.Database {
  if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
  const db = new Database(path, { timeout: 5000 });
  try {
    configure(db, options);
    // SQLite opens a file it may not write read-only without a word, and in WAL mode
    // even takes the write lock; write the header once so that shows now, not as
    // "readonly database" in every job.
    const version = db.pragma("user_version", { simple: true }) as number;
    db.pragma(`user_version = ${version}`);
    return db;
  } catch (thrown) {
    db.close();
    throw thrown;
  }
}

/** SQLite result codes of a file that is not (or no longer) a database. */
const DAMAGED = /^SQLITE_(NOTADB|CORRUPT)/;

/** SQLite result codes and errno codes of a file or folder this process may not write. */
const NOT_WRITABLE = /^(SQLITE_(READONLY|CANTOPEN|PERM|AUTH)|EACCES|EPERM|EROFS)/;

/**
 * One sentence naming the file and the fix, for a SQLite file (database or lock) that
 * cannot be opened or written; any other error comes back as it is.
 */
export function databaseOpenError(path: string, thrown: unknown): Error {
  const error = toError(thrown);
  const code = String((error as { code?: unknown }).code ?? "");
  const context = { file: path };
  if (DAMAGED.test(code)) {
    return new UserError(
      `${path} is damaged or is not a picklebot database (${error.message}); stop the server, ` +
        "move the file away (keep it for recovery) and restore a backup, or start again with an empty database.",
      { cause: error, context },
    );
  }
  if (NOT_WRITABLE.test(code)) {
    return new UserError(
      `cannot write ${path} (${error.message}${ownerNote(path)}); give the workspace's history/ ` +
        "folder and its files back to the user that runs picklebot (e.g. `sudo chown -R $(id -u):$(id -g) history`), " +
        "and never run picklebot with sudo.",
      { cause: error, context },
    );
  }
  return error;
}

/** ", owned by uid N while picklebot runs as uid M" when the owners differ, else "". */
function ownerNote(path: string): string {
  const uid = process.getuid?.();
  for (const candidate of [path, dirname(path)]) {
    try {
      const owner = statSync(candidate).uid;
      if (uid !== undefined && owner !== uid)
        return `; ${candidate} is owned by uid ${owner} while picklebot runs as uid ${uid}`;
    } catch {
      // Not there (yet): the folder is checked next.
    }
  }
  return "";
}

function configure(db: Database.Database, options: OpenDatabaseOptions): void {
  // Only takes effect before the first table exists, so it must come before WAL mode.
  db.pragma(`page_size = ${NEW_DATABASE_PAGE_SIZE}`);
  db.pragma("journal_mode = WAL");
  db.pragma(`synchronous = ${options.synchronous ?? "full"}`);
  const pageSize = db.pragma("page_size", { simple: true }) as number;
  db.pragma(`wal_autocheckpoint = ${Math.round(CHECKPOINT_WAL_BYTES / pageSize)}`);
  db.pragma("foreign_keys = ON");
  // The claim statement builds small temporary b-trees; keep them off the disk.
  db.pragma("temp_store = MEMORY");
  migrate(db);
}

/** The numbered migrations in the order they apply. */
function migrations(): { version: number; file: string }[] {
  return readdirSync(MIGRATIONS_DIR)
    .filter((file) => /^\d+_.*\.sql$/.test(file))
    .map((file) => ({ version: Number.parseInt(file, 10), file }))
    .sort((a, b) => a.version - b.version);
}

/** The `user_version` this release migrates a database to. */
export function latestSchemaVersion(): number {
  return migrations().at(-1)?.version ?? 0;
}

/** One row of `sqlite_master`: a table, index, trigger or view and the SQL that made it. */
export interface SchemaObject {
  type: string;
  name: string;
  tbl_name: string;
  sql: string | null;
}

/** Every table, index, trigger and view of `db`, as `sqlite_master` lists them. */
export function schemaObjects(db: Database.Database): SchemaObject[] {
  return db
    .prepare("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name")
    .all() as SchemaObject[];
}

/**
 * The schema picklebot's own migrations make at `version`: migrations up to it applied to
 * an empty in-memory database. Released migrations are never edited, so a database this
 * or an earlier release made at that version has exactly these objects.
 */
export function schemaAtVersion(version: number): SchemaObject[] {
  const db = new Database(":memory:");
  try {
    for (const { file } of migrations().filter((migration) => migration.version <= version)) {
      db.exec(readFileSync(new URL(file, MIGRATIONS_DIR), "utf8"));
    }
    return schemaObjects(db);
  } finally {
    db.close();
  }
}

/** Applies the migrations newer than the database's `user_version`, each in a transaction. */
function migrate(db: Database.Database): void {
  const current = db.pragma("user_version", { simple: true }) as number;
  const pending = migrations().filter(({ version }) => version > current);
  if (pending.length === 0) return;
  db.transaction(() => {
    for (const { version, file } of pending) {
      db.exec(readFileSync(new URL(file, MIGRATIONS_DIR), "utf8"));
      db.pragma(`user_version = ${version}`);
    }
  }).immediate();
}
