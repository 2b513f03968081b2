/**
 * picklebot's PostgreSQL database: one pool per process, shared by the queue, the history,
 * the cron state and the cluster tables, and the numbered migrations of
 * `migrations/postgres/`, applied at start-up under an advisory lock so that several
 * processes starting at once migrate exactly once.
 */
import { readdirSync, readFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import { classifyPgError, isConnectionError } from "./connection-errors.js";

export { isConnectionError };

import { toError, UserError } from "../../base/errors.js";
import { checkNumberOptions } from "../../base/options.js";
import { passwordOfUrl, redactSecrets } from "../../base/redact.js";
import { DEFAULT_POOL_SIZE } from "../../ports/index.js";

/** Folder of the numbered PostgreSQL migrations (`NNN_name.sql`). */
const MIGRATIONS_DIR = new URL("../../../migrations/postgres/", import.meta.url);

/** Key of the advisory lock held while migrating (any fixed number; "pickle" in hex-ish). */
const MIGRATION_LOCK_KEY = 0x7069636b;

const INT8_OID = 20;

/** Options of {@link openPostgres}. */
export interface OpenPostgresOptions {
  /** `postgres://user:password@host/database` */
  url: string;
  /** Most connections the pool opens. (Default: {@link DEFAULT_POOL_SIZE}) */
  poolSize?: number;
  /** Shown in `pg_stat_activity.application_name`. (Default: `picklebot`) */
  applicationName?: string;
}

/**
 * Epoch-millisecond `bigint` columns come back as numbers (node-postgres returns them as
 * text by default); every value picklebot stores fits a double exactly.
 */
const types = {
  getTypeParser: ((oid: number, format?: "text" | "binary") =>
    oid === INT8_OID
      ? (value: string) => Number(value)
      : pg.types.getTypeParser(oid, format as "text")) as pg.CustomTypesConfig["getTypeParser"],
};

/** The connection settings shared by the pool and the LISTEN connection. */
export function connectionConfig(options: OpenPostgresOptions): pg.ClientConfig {
  return {
    connectionString: options.url,
    application_name: options.applicationName ?? "picklebot",
    types,
  };
}

/** Opens a pool on `url` and applies the migrations; throws UserError when unreachable. */
export async function openPostgres(options: OpenPostgresOptions): Promise<pg.Pool> {
  checkNumberOptions("openPostgres", options, { poolSize: "count" });
  const pool = newPool({
    ...connectionConfig(options),
    max: options.poolSize ?? DEFAULT_POOL_SIZE,
  });
  try {
    await migrate(pool);
    return pool;
  } catch (error) {
    await pool.end();
    throw unreachableError(error, options.url);
  }
}

/**
 * A pool of picklebot's: it survives dropped connections, and its `query` and `connect`
 * throw a lost connection as a StorageUnavailableError (`connection-errors.ts`), as
 * {@link withClient} does for the statements of a checked-out client.
 */
export function newPool(config: pg.PoolConfig): pg.Pool {
  return throwingClassifiedErrors(survivingDroppedConnections(new pg.Pool(config)));
}

/**
 * Keeps a dropped connection (a restarted server, `pg_terminate_backend`) from ending the
 * process. The server's "terminating connection" arrives as an "error" event on the
 * client; pg-pool listens for it on idle clients and during `pool.query`, but not on a
 * client it is discarding after a failed query, and an unhandled "error" event is fatal.
 * The failure itself still reaches the caller: the query in flight rejects.
 */
export function survivingDroppedConnections(pool: pg.Pool): pg.Pool {
  pool.on("error", () => undefined);
  pool.on("connect", (client) => client.on("error", () => undefined));
  return pool;
}

/** Makes the promise forms of `pool.query` and `pool.connect` reject with classified errors. */
function throwingClassifiedErrors(pool: pg.Pool): pg.Pool {
  const query = pool.query.bind(pool) as (...args: unknown[]) => unknown;
  pool.query = ((...args: unknown[]) => {
    const result = query(...args);
    return result instanceof Promise ? result.catch(rethrowClassified) : result;
  }) as typeof pool.query;
  const connect = pool.connect.bind(pool) as (...args: unknown[]) => unknown;
  pool.connect = ((...args: unknown[]) => {
    const result = connect(...args);
    return result instanceof Promise ? result.catch(rethrowClassified) : result;
  }) as typeof pool.connect;
  return pool;
}

function rethrowClassified(thrown: unknown): never {
  throw classifyPgError(thrown);
}

/**
 * The migration files `url`'s database has not applied yet, read without changing it
 * (for `picklebot doctor`); throws UserError when the database cannot be reached.
 */
export async function pendingPostgresMigrations(url: string): Promise<string[]> {
  const client = new pg.Client({ ...connectionConfig({ url }), connectionTimeoutMillis: 10_000 });
  client.on("error", () => undefined);
  try {
    await client.connect();
    const pending = await pendingMigrations(client);
    return pending.map(({ file }) => file);
  } catch (error) {
    throw unreachableError(error, url);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** Applies the migrations newer than `schema_migrations`, each in its own transaction. */
async function migrate(pool: pg.Pool): Promise<void> {
  await withClient(pool, async (client) => {
    await client.query("SELECT pg_advisory_lock($1)", [MIGRATION_LOCK_KEY]);
    try {
      await applyMigrations(client);
    } finally {
      await client.query("SELECT pg_advisory_unlock($1)", [MIGRATION_LOCK_KEY]).catch(() => {});
    }
  });
}

async function applyMigrations(client: pg.PoolClient): Promise<void> {
  const pending = await pendingMigrations(client);
  if (pending.length === 0) return;
  await refuseInstanceRole(client, pending);
  await client.query(
    `CREATE TABLE IF NOT EXISTS schema_migrations (
      version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
  );
  for (const { version, file } of pending) {
    await client.query("BEGIN");
    try {
      await client.query(readFileSync(new URL(file, MIGRATIONS_DIR), "utf8"));
      await client.query("INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", [
        version,
        file,
      ]);
      await client.query("COMMIT");
    } catch (error) {
      await client.query("ROLLBACK").catch(() => undefined);
      throw error;
    }
  }
}

/** The migrations not applied yet; read without DDL, so an instance role can check. */
async function pendingMigrations(
  client: pg.ClientBase,
): Promise<{ version: number; file: string }[]> {
  const { rows } = await client.query<{ found: boolean }>(
    "SELECT to_regclass('schema_migrations') IS NOT NULL AS found",
  );
  const applied = rows[0]?.found
    ? await client.query<{ version: number }>("SELECT version FROM schema_migrations")
    : { rows: [] };
  const done = new Set(applied.rows.map((row) => row.version));
  return migrationFiles().filter(({ version }) => !done.has(version));
}

/**
 * An instance role (`picklebot cluster add-instance`) may not change the schema: says so,
 * rather than failing on the first statement of a migration.
 */
async function refuseInstanceRole(
  client: pg.PoolClient,
  pending: { file: string }[],
): Promise<void> {
  const { rows } = await client.query<{ found: boolean; role: string }>(
    "SELECT to_regclass('instance_roles') IS NOT NULL AS found, current_user AS role",
  );
  if (!rows[0]?.found) return;
  const instance = await client.query<{ id: string | null }>(
    "SELECT picklebot_instance_id() AS id",
  );
  const id = instance.rows[0]?.id;
  if (!id) return;
  const files = pending.map((migration) => migration.file).join(", ");
  throw new UserError(
    `the database needs migrations (${files}) but ${rows[0].role} is the role of instance "${id}", which may not change the schema; start one server (or run picklebot cluster list-instances) with the admin URL first`,
  );
}

function migrationFiles(): { version: number; file: string }[] {
  return readdirSync(MIGRATIONS_DIR)
    .filter((file) => /^\d+_.*\.sql$/.test(file))
    .map((file) => ({ version: Number.parseInt(file, 10), file }))
    .sort((a, b) => a.version - b.version);
}

function unreachableError(error: unknown, url: string): Error {
  if (error instanceof UserError) return error;
  if (error instanceof pg.DatabaseError && !isConnectionError(error)) return error;
  const reason = redactSecrets(toError(error).message, [passwordOfUrl(url)]);
  return new UserError(
    `cannot open the PostgreSQL database ${redactUrl(url)} (queue.url in picklebot.yaml, or DATABASE_URL): ${reason}; check that the server runs and the URL is right`,
    { cause: error },
  );
}

/** The URL without its password, for messages: `postgres://bot:[redacted]@db/picklebot`. */
export function redactUrl(url: string): string {
  return URL.canParse(url) ? redactSecrets(url) : "(an unparsable URL)";
}

/** Attempts of {@link retryOnDisconnect} before the error is passed on. */
const RECONNECT_ATTEMPTS = 5;

/**
 * Runs `operation`, again on a fresh connection when the connection was lost (after 50,
 * 100, 200… ms). Only for operations that are safe to repeat: reads, and writes whose
 * second run has the same effect as the first (fenced by a lock token or keyed by an id).
 */
export async function retryOnDisconnect<T>(operation: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await operation();
    } catch (error) {
      if (attempt >= RECONNECT_ATTEMPTS || !isConnectionError(error)) throw error;
      await sleep(50 * 2 ** (attempt - 1));
    }
  }
}

/**
 * Runs `work` on one pooled connection. A connection the server drops while it is checked
 * out emits "error" on the client (an unhandled one would end the process); the query in
 * flight rejects anyway, and the broken connection is discarded rather than pooled.
 */
export async function withClient<T>(
  pool: pg.Pool,
  work: (client: pg.PoolClient) => Promise<T>,
): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  const onError = (error: Error) => {
    broken = error;
  };
  client.on("error", onError);
  try {
    return await work(client);
  } catch (error) {
    if (isConnectionError(error)) broken ??= error as Error;
    throw classifyPgError(error);
  } finally {
    client.off("error", onError);
    client.release(broken);
  }
}

/** Runs `work` in a transaction on one pooled connection; rolls back when it throws. */
export function inTransaction<T>(
  pool: pg.Pool,
  work: (client: pg.PoolClient) => Promise<T>,
): Promise<T> {
  return withClient(pool, async (client) => {
    await client.query("BEGIN");
    try {
      const result = await work(client);
      await client.query("COMMIT");
      return result;
    } catch (error) {
      await client.query("ROLLBACK").catch(() => undefined);
      throw error;
    }
  });
}

/** One statement on the pool, repeated on a fresh connection as {@link retryOnDisconnect} says. */
export function queryRetrying<Row extends pg.QueryResultRow = pg.QueryResultRow>(
  pool: pg.Pool,
  text: string,
  params: unknown[] = [],
): Promise<pg.QueryResult<Row>> {
  return retryOnDisconnect(() => pool.query<Row>(text, params));
}
