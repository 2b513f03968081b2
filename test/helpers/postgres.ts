/**
 * PostgreSQL for tests: whether a server is reachable, and a fresh database per test file
 * (dropped afterwards), so parallel files and repeated runs never see each other's rows.
 *
 * The server is `PICKLEBOT_TEST_DATABASE_URL` (Default: postgres://postgres@127.0.0.1:5432/test).
 * Without one, Postgres suites skip and say why, except under `CI=true`, where they run
 * (and fail): CI must test this mode.
 */
import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll } from "vitest";
import { openPostgres } from "../../src/storage/postgres/database.js";
import { PostgresJobQueue } from "../../src/storage/postgres/queue.js";

/** The server tests create their databases on. */
export const ADMIN_URL =
  process.env.PICKLEBOT_TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";

/** Why Postgres tests cannot run here, or null when they can (or must: CI). */
export async function postgresSkipReason(): Promise<string | null> {
  if (process.env.CI === "true") return null;
  const client = new pg.Client({ connectionString: ADMIN_URL, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    return null;
  } catch (error) {
    const reason = `PostgreSQL tests skipped: no server at ${ADMIN_URL} (${(error as Error).message}); set PICKLEBOT_TEST_DATABASE_URL to run them`;
    console.warn(reason);
    return reason;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** A database made for one test file. */
export interface TestDatabase {
  name: string;
  /** Its URL, for `queue.url` or `openPostgres`. */
  url: string;
  /** Runs one statement as the admin user on this database. */
  query<T extends pg.QueryResultRow = pg.QueryResultRow>(
    text: string,
    params?: unknown[],
  ): Promise<pg.QueryResult<T>>;
  /** Drops the database, closing whatever is still connected to it. */
  drop(): Promise<void>;
}

/** Runs `use` on a client of the maintenance database (to create, drop or alter others). */
export async function admin<T>(use: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: ADMIN_URL });
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end();
  }
}

/** Creates an empty database named after `label`, with a random suffix. */
export async function createTestDatabase(label: string): Promise<TestDatabase> {
  const name = `picklebot_test_${label}_${randomBytes(4).toString("hex")}`;
  await admin((client) => client.query(`CREATE DATABASE ${name}`));
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  const pool = new pg.Pool({ connectionString: url.toString(), max: 2 });
  pool.on("error", () => undefined);
  return {
    name,
    url: url.toString(),
    query: (text, params) => pool.query(text, params),
    async drop() {
      await pool.end();
      await admin((client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
    },
  };
}

/**
 * For the enclosing suite: a test database migrated as a server would migrate it, created
 * before its tests and dropped after them. Returns an accessor, valid in tests and hooks.
 */
export function useMigratedDatabase(label: string): () => TestDatabase {
  let database: TestDatabase | undefined;
  beforeAll(async () => {
    database = await createTestDatabase(label);
    await (await openPostgres({ url: database.url })).end();
  });
  afterAll(async () => {
    await database?.drop();
  });
  return () => {
    if (!database) throw new Error(`the ${label} test database is not created yet`);
    return database;
  };
}

/** Short cluster intervals, so that failures are noticed in seconds (picklebot.yaml `cluster:`). */
export const FAST_CLUSTER = { heartbeat_s: 0.2, instance_ttl_s: 1.5, leader_ttl_s: 2 };

/** The picklebot.yaml sections of a cluster member on `url`: queue, history and `cluster:`. */
export function clusterYaml(url: string, cluster: Record<string, number> = FAST_CLUSTER): string {
  const settings = Object.entries(cluster)
    .map(([key, value]) => `  ${key}: ${value}\n`)
    .join("");
  return `queue:\n  backend: postgres\n  url: ${url}\n  pool_size: 4\nhistory:\n  backend: postgres\ncluster:\n${settings}`;
}

/** A test database for multi-process suites, with the test's own pool and queue on it. */
export interface ClusterDatabase {
  database: TestDatabase;
  /** Named `cluster-test`, not picklebot…: killing picklebot's connections spares it. */
  pool: pg.Pool;
  /** For enqueueing and reading jobs as another process would. */
  producer: PostgresJobQueue;
  /** Closes the queue and the pool, and drops the database. */
  close(): Promise<void>;
}

/** Creates and migrates a database named after `label`, for `beforeAll`. */
export async function openClusterDatabase(label: string): Promise<ClusterDatabase> {
  const database = await createTestDatabase(label);
  const pool = await openPostgres({
    url: database.url,
    poolSize: 4,
    applicationName: "cluster-test",
  });
  const producer = new PostgresJobQueue({ pool });
  return {
    database,
    pool,
    producer,
    async close() {
      await producer.close();
      await pool.end();
      await database.drop();
    },
  };
}

/** The instance id holding the leader lease now, or null. */
export async function currentLeader(pool: pg.Pool): Promise<string | null> {
  const { rows } = await pool.query<{ holder: string }>(
    "SELECT holder FROM leases WHERE name = 'leader' AND expires_at > now()",
  );
  return rows[0]?.holder ?? null;
}
