/**
 * SQLite failures classified where better-sqlite3 makes them: an error that says the
 * database cannot be used right now (busy past the timeout, locked, full, failing I/O,
 * read-only, gone) becomes a {@link StorageUnavailableError} that wraps it, thrown by the
 * statement, transaction, `exec` or `pragma` that failed; any other error (a constraint,
 * a malformed statement) is thrown as the driver made it. Callers above the storage ask
 * `instanceof StorageUnavailableError`, never for SQLite's codes.
 */
import type Database from "better-sqlite3";
import { StorageUnavailableError } from "../../base/errors.js";

/** SQLite result codes of a database that cannot be used now, not of a bad statement. */
const UNAVAILABLE = /^SQLITE_(BUSY|LOCKED|FULL|IOERR|CANTOPEN|READONLY|PROTOCOL)/;

/** `thrown`, or the {@link StorageUnavailableError} wrapping it when it is one of those. */
export function classifySqliteError(thrown: unknown): unknown {
  if (!(thrown instanceof Error) || thrown.name !== "SqliteError") return thrown;
  const code = String((thrown as { code?: unknown }).code ?? "");
  if (!UNAVAILABLE.test(code)) return thrown;
  return new StorageUnavailableError(thrown.message, {
    cause: thrown,
    context: { backend: "sqlite", code },
  });
}

/**
 * Makes `db` throw classified errors: every statement it prepares from now on, every
 * transaction function it makes, `exec` and `pragma`. Returns `db`.
 */
export function throwingClassifiedErrors(db: Database.Database): Database.Database {
  const prepare = db.prepare.bind(db);
  db.prepare = ((source: string) => guardStatement(prepare(source))) as typeof db.prepare;
  const transaction = db.transaction.bind(db);
  db.transaction = ((fn: Parameters<typeof transaction>[0]) =>
    guardTransaction(transaction(fn))) as typeof db.transaction;
  db.exec = guarded(db.exec, db);
  db.pragma = guarded(db.pragma, db);
  return db;
}

const STATEMENT_CALLS = ["run", "get", "all", "iterate"] as const;

function guardStatement<S extends Database.Statement>(statement: S): S {
  for (const call of STATEMENT_CALLS) {
    (statement as Record<string, unknown>)[call] = guarded(statement[call], statement);
  }
  return statement;
}

/** The transaction function and its `deferred`, `immediate` and `exclusive` variants. */
function guardTransaction<F extends Database.Transaction<(...args: never[]) => unknown>>(
  made: F,
): F {
  const outer = guarded(made, undefined);
  for (const variant of ["default", "deferred", "immediate", "exclusive"] as const) {
    Object.defineProperty(outer, variant, { value: guarded(made[variant], undefined) });
  }
  return outer;
}

/** `fn` called on `self` (or the caller's `this` when undefined), its throws classified. */
function guarded<F extends (...args: never[]) => unknown>(fn: F, self: unknown): F {
  return function (this: unknown, ...args: Parameters<F>) {
    try {
      return fn.apply(self ?? this, args);
    } catch (thrown) {
      throw classifySqliteError(thrown);
    }
  } as F;
}
