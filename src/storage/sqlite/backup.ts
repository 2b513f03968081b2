/**
 * Backups of the workspace database: a consistent copy taken with SQLite's online backup
 * API while the server keeps writing, and the check a file must pass before it replaces
 * the workspace's database.
 */
import { existsSync, mkdirSync, renameSync, rmSync } from "node:fs";
import { dirname } from "node:path";
import Database from "better-sqlite3";
import { toError, UserError } from "../../base/errors.js";
import {
  latestSchemaVersion,
  type SchemaObject,
  schemaAtVersion,
  schemaObjects,
} from "./database.js";

/** Tables every picklebot database has had since its first release. */
const REQUIRED_TABLES = ["jobs", "sessions", "messages"];

/**
 * Copies the database at `source` to `target` with SQLite's online backup (pages copied
 * in steps; a write made meanwhile restarts the copy, so the result is one consistent
 * moment). Written to `target.partial` and renamed, so `target` is never half a file.
 */
export async function backupDatabase(source: string, target: string): Promise<void> {
  if (!existsSync(source)) {
    throw new UserError(`no database at ${source} to back up; is this the right workspace?`);
  }
  const partial = `${target}.partial`;
  mkdirSync(dirname(target), { recursive: true });
  const db = new Database(source, { readonly: true, fileMustExist: true, timeout: 5000 });
  try {
    rmSync(partial, { force: true });
    await db.backup(partial);
    renameSync(partial, target);
  } catch (error) {
    rmSync(partial, { force: true });
    throw new UserError(`could not write the backup ${target}: ${toError(error).message}`, {
      cause: error,
    });
  } finally {
    db.close();
  }
}

/**
 * Throws a UserError naming `file` unless it is a whole picklebot database this release
 * can open: SQLite, intact (`quick_check`), with picklebot's tables, no newer than this
 * release's migrations, and with exactly the tables, indexes, triggers and views those
 * migrations make at its version. A backup is a file anyone could have written: one extra
 * trigger would run inside every later write (approving every `ask`, say) and nothing
 * would show it.
 */
function checkBackupFile(file: string): void {
  if (!existsSync(file)) throw new UserError(`${file} does not exist; give the path of a backup`);
  let db: Database.Database;
  try {
    db = new Database(file, { readonly: true, fileMustExist: true });
  } catch (error) {
    throw notADatabase(file, error);
  }
  try {
    const check = db.pragma("quick_check", { simple: true });
    if (check !== "ok") {
      throw new UserError(
        `${file} is damaged (SQLite quick_check: ${String(check)}); restore another backup`,
      );
    }
    const tables = new Set(
      (
        db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as {
          name: string;
        }[]
      ).map((row) => row.name),
    );
    const missing = REQUIRED_TABLES.filter((table) => !tables.has(table));
    if (missing.length > 0) {
      throw new UserError(
        `${file} is an SQLite database but not picklebot's (no ${missing.join(", ")} table); give a file made by picklebot backup`,
      );
    }
    const version = db.pragma("user_version", { simple: true }) as number;
    if (version > latestSchemaVersion()) {
      throw new UserError(
        `${file} was made by a newer picklebot (schema ${version}, this one knows up to ${latestSchemaVersion()}); upgrade picklebot first`,
      );
    }
    const difference = schemaDifference(schemaObjects(db), schemaAtVersion(version));
    if (difference) {
      throw new UserError(
        `restore refused: ${file} ${difference} (schema version ${version}); it was not restored and the workspace's database is unchanged`,
        { context: { file } },
      );
    }
  } catch (error) {
    if (error instanceof UserError) throw error;
    throw notADatabase(file, error);
  } finally {
    db.close();
  }
}

/** The SQL of a schema object with runs of whitespace made one space, for comparing. */
function normalisedSql(object: SchemaObject): string | null {
  return object.sql === null ? null : object.sql.replace(/\s+/g, " ").trim();
}

/**
 * The first way `actual` (a backup's `sqlite_master`) differs from `expected` (what the
 * migrations make), said as the rest of a sentence about the file, or null when they match.
 */
function schemaDifference(actual: SchemaObject[], expected: SchemaObject[]): string | null {
  const key = (object: SchemaObject) => `${object.type}\u0000${object.name}`;
  const wanted = new Map(expected.map((object) => [key(object), object]));
  for (const object of actual) {
    const own = wanted.get(key(object));
    if (!own) {
      return `holds ${named(object)} that picklebot's schema does not have`;
    }
    if (own.tbl_name !== object.tbl_name || normalisedSql(own) !== normalisedSql(object)) {
      return `holds ${named(object)} whose definition differs from picklebot's schema`;
    }
    wanted.delete(key(object));
  }
  const [absent] = wanted.values();
  return absent ? `lacks the ${absent.type} "${absent.name}" of picklebot's schema` : null;
}

/** `a trigger "approve_all"`, `an index "jobs_runnable"`. */
function named(object: SchemaObject): string {
  const article = /^[aeiou]/.test(object.type) ? "an" : "a";
  return `${article} ${object.type} "${object.name}"`;
}

function notADatabase(file: string, cause: unknown): UserError {
  return new UserError(
    `${file} is not a picklebot database (${toError(cause).message}); give a file made by picklebot backup`,
    {
      cause,
    },
  );
}

/** What {@link restoreDatabase} did. */
export interface RestoreOutcome {
  /** Where the database it replaced was moved, or null when there was none. */
  keptAside: string | null;
  /** Schema version of the backup, before it was migrated to this release's. */
  fromVersion: number;
}

/**
 * Replaces the database at `target` with the backup `file` (checked first), keeping the
 * old database beside it as `<target>.before-restore-<time>`, then migrates the restored
 * copy to this release. The caller holds the workspace lock: no server may be running.
 */
export async function restoreDatabase(
  file: string,
  target: string,
  now: Date,
  migrate: (path: string) => void,
): Promise<RestoreOutcome> {
  checkBackupFile(file);
  let keptAside: string | null = null;
  if (existsSync(target)) {
    // Folds the WAL into the file, so the file alone is the whole old database.
    const old = new Database(target, { fileMustExist: true, timeout: 5000 });
    old.pragma("wal_checkpoint(TRUNCATE)");
    old.close();
    keptAside = `${target}.before-restore-${now.toISOString().replace(/[:.]/g, "-")}`;
    renameSync(target, keptAside);
    for (const suffix of ["-wal", "-shm"]) rmSync(`${target}${suffix}`, { force: true });
  }
  const backup = new Database(file, { readonly: true, fileMustExist: true });
  const fromVersion = backup.pragma("user_version", { simple: true }) as number;
  try {
    await backup.backup(target);
  } finally {
    backup.close();
  }
  migrate(target);
  return { keptAside, fromVersion };
}
